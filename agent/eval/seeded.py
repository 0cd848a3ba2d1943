"""Seeded errors: do the checks (and the critic) catch an error planted in a right answer?

(The design documents' "What to do next", docs/architecture.md.) Each task's reference (HumanEval's
``canonical_solution``) gets one mutant per mutation operator (``agent.eval.mutations``).
The reference and every mutant go through the grading check (with a short timeout: a mutant
that loops forever is caught by the timeout) and, with a critic model, through
``run_critic``. A mutant the check fails is ``killed``. A mutant that passes is probed in the
sandbox (``agent.eval.probe``): the reference and the mutant run on every input the check
passed to the entry point plus simple perturbations of those inputs (inputs on which the
reference raises or is slow are skipped). No difference found → ``equivalent`` (it behaves as
the reference on everything probed; reported separately, out of the catch-rate denominator,
since no check can catch it); a difference → ``survived`` with the witness input (a gap in
the tests); a probe that cannot finish → ``inconclusive`` (counted as not caught).
``catch_rate = caught / (mutants - equivalent)``, where caught means the check failed or the
critic flagged it; ``false_flag_rate = flagged references / references``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.checks import run_check
from agent.eval.common import Progress, calls, clip, map_tasks, ratio, review, summed_usage
from agent.eval.datasets import Task
from agent.eval.mutations import OPERATORS, Mutant, mutants
from agent.eval.probe import probe
from agent.models.factory import JUDGE, Metered, total_tokens
from agent.vocabulary import StructuredOutput

SEEDED_TIMEOUT_S = 3.0


def _judge(
    task: Task, source: str, check: dict[str, Any], critic: Metered | None
) -> dict[str, Any]:
    """The grading check, and the critic when there is one, on one artifact."""
    report = run_check(check, {**task.files, task.path: source}, task.path)
    evidence = str(report.get("evidence", ""))
    out: dict[str, Any] = {
        "check_passed": bool(report["passed"]),
        "timed_out": evidence.startswith(("timed out", "CPU time limit")),
        "evidence": clip(evidence),
        "critic_blocking": None,
        "critic_malformed": False,
    }
    if critic is not None:
        reviewed, issues, _tokens = review(critic, task, source, report)
        if reviewed is None:
            out["critic_malformed"] = True
        else:
            out["critic_blocking"] = len(issues)
            out["critic_issue"] = clip(f"{issues[0].id}: {issues[0].evidence}") if issues else ""
    out["critic_flagged"] = bool(out["critic_blocking"])
    out["flagged"] = not out["check_passed"] or out["critic_flagged"]
    return out


def _mutant_entry(
    task: Task, mutant: Mutant, check: dict[str, Any], critic: Metered | None
) -> dict[str, Any]:
    """One mutant judged, and probed against the reference when the check let it pass."""
    outcome = _judge(task, mutant.source, check, critic)
    entry = {
        "operator": mutant.operator,
        "line": mutant.line,
        "before": clip(mutant.before, 120),
        "after": clip(mutant.after, 120),
        **outcome,
    }
    if outcome["check_passed"]:
        found = probe(task, mutant.source)
        entry["status"] = "survived" if found["verdict"] == "differs" else found["verdict"]
        entry["probe"] = found
    else:
        entry["status"] = "killed"
    return entry


def seed_task(
    task: Task,
    *,
    critic: BaseChatModel | None = None,
    seed: int = 0,
    timeout_s: float = SEEDED_TIMEOUT_S,
    operators: list[str] | None = None,
) -> dict[str, Any]:
    """The reference and its mutants through the check (and critic); probe the survivors."""
    if task.reference is None:
        return {"id": task.id, "skipped": "no reference solution"}
    check = dict(task.check)
    if check.get("kind") in ("python", "pytest"):
        check["timeout_s"] = timeout_s
    judge = (
        Metered(critic, JUDGE, StructuredOutput.FUNCTION_CALLING) if critic is not None else None
    )
    reference = _judge(task, task.reference, check, judge)
    record: dict[str, Any] = {"id": task.id, "reference": reference, "mutants": []}
    if not reference["check_passed"]:
        record["skipped"] = "the reference fails its own check: its mutants prove nothing"
    else:
        for mutant in mutants(task, seed=seed, operators=operators):
            record["mutants"].append(_mutant_entry(task, mutant, check, judge))
    record["usage"] = judge.usage if judge else {}
    return record


def run_seeded_eval(
    tasks: Sequence[Task],
    *,
    critic: BaseChatModel | None = None,
    seed: int = 0,
    timeout_s: float = SEEDED_TIMEOUT_S,
    workers: int | None = None,
    progress: Progress | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Plant errors in every reference; measure catch rate and false-flag rate."""
    workers = workers or os.cpu_count() or 2

    def one(task: Task) -> dict[str, Any]:
        return seed_task(task, critic=critic, seed=seed, timeout_s=timeout_s)

    records, wall_time_s = map_tasks(one, tasks, workers, progress)
    return {
        "mode": "seeded-errors",
        **dict(labels or {}),
        "seed": seed,
        "timeout_s": timeout_s,
        "workers": workers,
        "operators": list(OPERATORS),
        "wall_time_s": wall_time_s,
        "summary": _summary(records, with_critic=critic is not None),
        "tasks": records,
    }


def _mutant_counts(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Killed, equivalent, survived … and the catch rates, over some mutants."""
    status = Counter(e["status"] for e in entries)
    live = [e for e in entries if e["status"] != "equivalent"]
    caught = sum(e["flagged"] for e in live)
    return {
        "mutants": len(entries),
        "killed": status["killed"],
        "timeouts": sum(e["timed_out"] for e in entries),
        "equivalent": status["equivalent"],
        "survived": status["survived"],
        "inconclusive": status["inconclusive"],
        "caught": caught,
        "catch_rate": ratio(caught, len(live)),
        "check_catch_rate": ratio(status["killed"], len(live)),
        "raw_check_catch_rate": ratio(status["killed"], len(entries)),
    }


def _summary(records: Sequence[Mapping[str, Any]], *, with_critic: bool) -> dict[str, Any]:
    """Totals over every task, per operator, and the mutants the checks let through."""
    judged = [r for r in records if "reference" in r]
    references = [r["reference"] for r in judged]
    entries = [dict(m, id=r["id"]) for r in judged for m in r["mutants"]]
    flagged = sum(ref["flagged"] for ref in references)
    summary: dict[str, Any] = {
        "problems": len(records),
        "errors": sum(1 for r in records if "error" in r),
        "skipped": sum(1 for r in records if "skipped" in r),
        "references": len(references),
        "references_flagged": flagged,
        "references_flagged_by_check": sum(not ref["check_passed"] for ref in references),
        "false_flag_rate": ratio(flagged, len(references)),
        **_mutant_counts(entries),
        "by_operator": {
            op: _mutant_counts([e for e in entries if e["operator"] == op])
            for op in OPERATORS
            if any(e["operator"] == op for e in entries)
        },
        "not_caught": [
            {k: e.get(k) for k in ("id", "operator", "line", "before", "after", "status")}
            | {"witness": (e.get("probe") or {}).get("witness")}
            for e in entries
            if not e["flagged"] and e["status"] != "equivalent"
        ],
        "equivalent_mutants": [
            {k: e.get(k) for k in ("id", "operator", "line", "before", "after")}
            for e in entries
            if e["status"] == "equivalent"
        ],
    }
    if with_critic:
        summary["critic"] = _critic_summary(judged, references, entries)
    return summary


def _critic_summary(
    judged: Sequence[Mapping[str, Any]],
    references: Sequence[Mapping[str, Any]],
    entries: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """What the model critic added to the check: its flags, the mutants only it caught, and
    its cost."""
    live = [e for e in entries if e["status"] != "equivalent"]
    usage = summed_usage(r.get("usage") for r in judged)
    return {
        "references_flagged": sum(ref["critic_flagged"] for ref in references),
        "mutants_flagged": sum(e["critic_flagged"] for e in live),
        "caught_only_by_critic": sum(e["critic_flagged"] and e["check_passed"] for e in live),
        "equivalent_flagged": sum(
            e["critic_flagged"] for e in entries if e["status"] == "equivalent"
        ),
        "malformed": sum(ref["critic_malformed"] for ref in references)
        + sum(e["critic_malformed"] for e in entries),
        "tokens": total_tokens(usage),
        "calls": calls(usage),
    }
