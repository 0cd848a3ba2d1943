"""Does reflection help? Run a dataset with reflection off and on, or plant known errors.

**Reflection off/on** (seed 003, "Measuring whether reflection helps"). Each task runs once
through the agent's own revise loop, ``revise_loop(..., LoopConfig(max_rounds=N))``, whose
generator is the subagent's drafting (``StepWorker.generate``: the coder prompt, the VFS
tools, patch or rewrite from the feedback). Reflection *off* is ``max_rounds=0``, which
returns the first draft unchanged; so the off result is the first draft of the same run,
graded on its own. That pairs every task (fixes and regressions compare the same first
draft with its own revision, without sampling noise between two runs) and costs one run.
The off cost is what the first draft and its one critique spent.

The loop's critique is the check-derived one (``critique_from_check``), merged with a model
critic's (``run_critic`` on the ``critic`` model) when one is given. Its evidence is either
the grading check itself (``evidence="check"``: the agent's own setting, where ``done_when``
is the evidence; the loop then sees the grading tests' failures, an upper bound) or the
task's ``visible_check`` (``evidence="visible"``; HumanEval: the docstring examples) while the
hidden grading check decides correctness.

Per task: first-draft and final correctness by the grading check, the change (``fix``
wrong→right, ``regression`` right→wrong, ``right`` or ``wrong`` unchanged), rounds, stop
reason, tokens and model calls (off and on), and per critique round the draft's correctness
and the model critic's blocking issues.

**Critic precision** (model critic only; the check-derived critique is the grading evidence
itself). A *flag* is one critique of one draft in which the model critic raised at least one
blocking issue that survived grounding (issues without evidence are dropped, as the loop
does). A flag is *confirmed* when the grading check fails on that same draft, and *false*
when it passes. ``precision = confirmed flags / flags`` (None without flags);
``recall = confirmed flags / well-formed critiques of drafts that fail the grading check``.
Issue-level counts are reported too (``blocking_issues``, ``blocking_issues_confirmed``), as
are malformed critiques, which are neither flags nor misses. With ``evidence="check"`` the
critic sees the failing check, so confirmed flags include echoes of it; the false flags are
the critic's own mistakes either way.

**Seeded errors** (seed 003, "What to do next" item 5). Each task's reference (HumanEval's
``canonical_solution``) gets one mutant per mutation operator (``agent.datasets.mutants``).
The reference and every mutant go through the grading check (with a short timeout: a mutant
that loops forever is caught by the timeout) and, with a critic model, through
``run_critic``. A mutant the check fails is ``killed``. A mutant that passes is probed in the
sandbox: the reference and the mutant run on every input the check passed to the entry point
plus simple perturbations of those inputs (inputs on which the reference raises or is slow
are skipped). No difference found → ``equivalent`` (it behaves as the reference on everything
probed; reported separately, out of the catch-rate denominator, since no check can catch
it); a difference → ``survived`` with the witness input (a gap in the tests); a probe that
cannot finish → ``inconclusive`` (counted as not caught).
``catch_rate = caught / (mutants - equivalent)``, where caught means the check failed or the
critic flagged it; ``false_flag_rate = flagged references / references``.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent.checks import run_check
from agent.controller import LoopConfig, revise_loop
from agent.critic import blocking, critique_from_check, ground, merge, run_critic
from agent.datasets import OPERATORS, Task, load_dataset, mutants
from agent.errors import ConfigError, classify, describe
from agent.models import Metered, load_model, merge_usage, total_tokens
from agent.prompts import load_prompt
from agent.sandbox import run_python
from agent.worker import StepWorker

__all__ = [
    "CRITIC_RUBRIC",
    "critic_stats",
    "evaluate",
    "print_report",
    "reflect_task",
    "run_reflection_eval",
    "run_seeded_eval",
    "seed_task",
]

Evidence = Literal["check", "visible"]
Progress = Callable[[int, int], None]

CRITIC_RUBRIC = [
    "the artifact does everything the task asks, edge cases included",
    "the code runs: no syntax errors, no undefined names, the requested signature is kept",
]
DEFAULT_ROUNDS = 2
SEEDED_TIMEOUT_S = 3.0
PROBE_BUDGET_S = 4.0
_EVIDENCE_CHARS = 300
_MARK = "__deepreflect_probe__ "


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _clip(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _map(
    fn: Callable[[Task], dict[str, Any]],
    tasks: Sequence[Task],
    workers: int,
    progress: Progress | None,
) -> list[dict[str, Any]]:
    """Run ``fn`` over the tasks on a small thread pool, in order, reporting progress.

    A task that raises becomes a failed record: one bad task must not lose the others'.
    """

    def guarded(task: Task) -> dict[str, Any]:
        try:
            return fn(task)
        except Exception as exc:
            return _failed_task(task, exc)

    done = 0
    out: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for record in pool.map(guarded, tasks):
            out.append(record)
            done += 1
            if progress is not None:
                progress(done, len(tasks))
    return out


# -- reflection off / on ----------------------------------------------------------------------


class _Grader:
    """The grading check on a draft, run once per distinct draft."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.reports: dict[str, dict[str, Any]] = {}

    def files(self, draft: str) -> dict[str, str]:
        return {**self.task.files, self.task.path: draft}

    def remember(self, draft: str, report: Mapping[str, Any]) -> None:
        self.reports[_sha(draft)] = dict(report)

    def __call__(self, draft: str) -> dict[str, Any]:
        key = _sha(draft)
        if key not in self.reports:
            self.reports[key] = dict(run_check(self.task.check, self.files(draft), self.task.path))
        return self.reports[key]


def _evidence_spec(task: Task, evidence: Evidence) -> tuple[dict[str, Any], str]:
    """The check the loop sees, and a note when it had to fall back."""
    if evidence == "check":
        return task.check, ""
    if task.visible_check is None:
        return {"kind": "non_empty"}, "no visible check: the loop saw only non_empty"
    if task.reference is not None:  # examples the reference fails would mislead the loop
        files = {**task.files, task.path: task.reference}
        if not run_check(task.visible_check, files, task.path)["passed"]:
            entry = task.entry_point
            code = f"assert callable({entry})" if entry else ""
            spec = {"kind": "python", "code": code} if entry else {"kind": "non_empty"}
            return spec, "the reference fails the visible check: the loop saw a weaker one"
    return task.visible_check, ""


def _shown_check(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What the generator's prompt says about the check: its kind and test files, never the
    grading code (HumanEval's pass@1 is measured without showing the tests)."""
    shown = {"kind": spec.get("kind")}
    if "tests" in spec:
        shown["tests"] = spec["tests"]
    return shown


def _step_id(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id) or "task"


def reflect_task(
    task: Task,
    model: BaseChatModel,
    *,
    critic: BaseChatModel | None = None,
    max_rounds: int = DEFAULT_ROUNDS,
    evidence: Evidence = "check",
    loop_config: LoopConfig | None = None,
) -> dict[str, Any]:
    """Run one task through the revise loop; grade the first draft and the final one."""
    spec, note = _evidence_spec(task, evidence)
    grader = _Grader(task)
    coder = Metered(model, "coder", "function_calling")
    judge = Metered(critic, "critic", "function_calling") if critic is not None else None
    # the grading files (pytest tests) are readable only when they are the loop's evidence
    inputs = dict(task.files) if evidence == "check" else {}
    worker = StepWorker(
        step={
            "step_id": _step_id(task.id),
            "action": "coder",
            "instructions": task.prompt,
            "expected_output": task.path,
            "done_when": _shown_check(spec),
        },
        goal=f"Solve evaluation task {task.id}.",
        inputs=inputs,
        round_no=0,
        system_prompt=load_prompt("subagents/coder"),
        model=coder,
        judge=None,
    )
    drafts: dict[str, str] = {}
    rounds: list[dict[str, Any]] = []
    first_usage: dict[str, dict[str, int]] = {}

    def usage() -> dict[str, dict[str, int]]:
        return merge_usage(coder.usage, judge.usage if judge else None)

    def generate(_task: str, feedback: Any) -> tuple[str, int]:
        return worker.generate(task.prompt, feedback)

    def gather(draft: str) -> dict[str, Any]:
        drafts[_sha(draft)] = draft
        report = dict(run_check(spec, grader.files(draft), task.path))
        if spec is task.check:
            grader.remember(draft, report)
        return report

    def critique(_task: str, draft: str, report: dict[str, Any]) -> tuple[Any, int]:
        nonlocal first_usage
        from_check = critique_from_check(report)
        record: dict[str, Any] = {"critic_blocking": None, "critic_malformed": False}
        answer: Any = from_check
        tokens = 0
        if judge is not None:
            reviewed, tokens = run_critic(
                judge, task.prompt, task.path, draft, report, CRITIC_RUBRIC
            )
            if reviewed is None:
                record["critic_malformed"] = True
                answer = None  # the loop's rule: a malformed critique is never approval
            else:
                record["critic_blocking"] = len(blocking(ground(reviewed)))
                answer = merge(from_check, reviewed)
        rounds.append(record)
        if len(rounds) == 1:
            first_usage = usage()
        return answer, tokens

    config = loop_config or LoopConfig(max_rounds=max_rounds)
    result = revise_loop(task.prompt, generate, gather, critique, config)
    if result.error is not None:  # the loop kept its best draft; a measurement has none to use
        raise result.error

    history = []
    for record, step in zip(rounds, result.history, strict=True):
        draft = drafts[step["draft_hash"]]
        history.append(
            {
                "round": step["round"],
                "draft_sha": step["draft_hash"][:12],
                "evidence_passed": step["evidence_passed"],
                "correct": bool(grader(draft)["passed"]),
                "score": step["score"],
                **record,
            }
        )
    first_draft = drafts[result.history[0]["draft_hash"]]
    first, final = grader(first_draft), grader(result.best)
    first_ok, final_ok = bool(first["passed"]), bool(final["passed"])
    change = {(False, True): "fix", (True, False): "regression"}.get(
        (first_ok, final_ok), "right" if final_ok else "wrong"
    )
    spent = usage()
    return {
        "id": task.id,
        "first_correct": first_ok,
        "final_correct": final_ok,
        "change": change,
        "rounds": result.rounds,
        "stop_reason": result.stop_reason,
        "converged": result.converged,
        "tokens": {"off": total_tokens(first_usage), "on": total_tokens(spent)},
        "calls": {"off": _calls(first_usage), "on": _calls(spent)},
        "usage": spent,
        "critic": critic_stats(history) if judge is not None else None,
        "history": history,
        "first_evidence": _clip(first.get("evidence", "")),
        "final_evidence": _clip(final.get("evidence", "")),
        "evidence_note": note,
        "first_draft": first_draft,
        "final_draft": result.best,
    }


def _calls(usage: Mapping[str, Mapping[str, int]]) -> int:
    return sum(int(counts.get("calls", 0)) for counts in usage.values())


def critic_stats(history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Flags, confirmed and false flags, misses, precision and recall of the model critic over
    critique rounds (each: ``correct`` by the grading check, ``critic_blocking`` count or None,
    ``critic_malformed``). See the module docstring for the definitions."""
    formed = [
        r for r in history if not r.get("critic_malformed") and r.get("critic_blocking") is not None
    ]
    flags = [r for r in formed if r["critic_blocking"] > 0]
    confirmed = [r for r in flags if not r["correct"]]
    failing = [r for r in formed if not r["correct"]]
    return {
        "critiques": len(history),
        "malformed": sum(1 for r in history if r.get("critic_malformed")),
        "flags": len(flags),
        "confirmed": len(confirmed),
        "false_flags": len(flags) - len(confirmed),
        "missed": len(failing) - len(confirmed),
        "precision": _ratio(len(confirmed), len(flags)),
        "recall": _ratio(len(confirmed), len(failing)),
        "blocking_issues": sum(r["critic_blocking"] for r in flags),
        "blocking_issues_confirmed": sum(r["critic_blocking"] for r in confirmed),
    }


def _failed_task(task: Task, exc: Exception) -> dict[str, Any]:
    return {"id": task.id, "error": describe(exc), "error_class": classify(exc).value}


def run_reflection_eval(
    tasks: Sequence[Task],
    model: BaseChatModel,
    *,
    critic: BaseChatModel | None = None,
    max_rounds: int = DEFAULT_ROUNDS,
    evidence: Evidence = "check",
    workers: int = 4,
    progress: Progress | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every task with reflection off (first draft) and on (``max_rounds`` revisions).

    A task whose model call raises is reported with its error class and left out of the
    counts; the summary says how many.
    """
    started = time.monotonic()

    def one(task: Task) -> dict[str, Any]:
        return reflect_task(task, model, critic=critic, max_rounds=max_rounds, evidence=evidence)

    records = _map(one, tasks, workers, progress)
    return {
        "mode": "reflection",
        **dict(labels or {}),
        "max_rounds": max_rounds,
        "evidence": evidence,
        "workers": workers,
        "wall_time_s": round(time.monotonic() - started, 2),
        "summary": _reflection_summary(records, with_critic=critic is not None),
        "tasks": records,
    }


def _reflection_summary(
    records: Sequence[Mapping[str, Any]], *, with_critic: bool
) -> dict[str, Any]:
    ok = [r for r in records if "error" not in r]
    n = len(ok)
    changes = Counter(r["change"] for r in ok)
    first = sum(r["first_correct"] for r in ok)
    final = sum(r["final_correct"] for r in ok)
    usage: dict[str, dict[str, int]] = {}
    for r in ok:
        usage = merge_usage(usage, r["usage"])
    critic = None
    if with_critic:
        critic = critic_stats([h for r in ok for h in r["history"]])
    return {
        "tasks": len(records),
        "errors": len(records) - n,
        "error_classes": dict(Counter(r["error_class"] for r in records if "error" in r)),
        "first_correct": first,
        "final_correct": final,
        "accuracy_off": _ratio(first, n),
        "accuracy_on": _ratio(final, n),
        "fixes": changes["fix"],
        "regressions": changes["regression"],
        "unchanged_right": changes["right"],
        "unchanged_wrong": changes["wrong"],
        "net_fixes": changes["fix"] - changes["regression"],
        "avg_rounds": round(statistics.fmean(r["rounds"] for r in ok), 3) if ok else None,
        "converged": sum(r["converged"] for r in ok),
        "stop_reasons": dict(Counter(r["stop_reason"] for r in ok)),
        "tokens": {k: sum(r["tokens"][k] for r in ok) for k in ("off", "on")},
        "calls": {k: sum(r["calls"][k] for r in ok) for k in ("off", "on")},
        "usage": usage,
        "critic": critic,
    }


# -- seeded errors ------------------------------------------------------------------------------

# Runs in the sandbox: record every call the check makes to the entry point of the reference,
# then run the reference and the mutant on those inputs and simple perturbations of them.
_PROBE_SOURCE = r"""
import copy, json, signal, sys, time

ENTRY, BUDGET = sys.argv[1], float(sys.argv[2])
CALL_LIMIT, MAX_RECORDED, MAX_INPUTS = 0.25, 200, 400
MARK = "__deepreflect_probe__ "


class Slow(BaseException):
    pass


def alarm(signum, frame):
    raise Slow()


signal.signal(signal.SIGALRM, alarm)


def load(path):
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), namespace)
    return namespace


def call(fn, args):
    try:
        positional, named = copy.deepcopy(args)
        signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT, CALL_LIMIT / 5)
        try:
            out = ("ok", fn(*positional, **named))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return out
    except Slow:
        return ("slow", None)
    except BaseException as exc:
        return ("raise", type(exc).__name__)


def same(a, b):
    if a[0] != b[0]:
        return False
    try:
        equal = a[1] == b[1]
        if isinstance(equal, bool) and equal:
            return True
    except Exception:
        pass
    return repr(a[1]) == repr(b[1])


def variants(value, depth=0):
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, 0, 1, -value, 2 * value + 1]
    if isinstance(value, float):
        return [value + 1.0, value - 1.0, 0.0, -value, value / 2]
    if isinstance(value, str):
        return ["", value[::-1], value[1:], value[:-1], value + value[:1], value.upper(),
                value.lower(), value.swapcase(), " " + value]
    if isinstance(value, (list, tuple)):
        kind = type(value)
        out = [kind(), kind(value[::-1]), kind(value[1:]), kind(value[:-1]),
               kind(list(value) + list(value[:1]))]
        if len(value) > 1:
            out.append(kind(value[:1]))
        if value and depth == 0:
            for at in {0, len(value) - 1}:
                for other in variants(value[at], 1)[:4]:
                    changed = list(value)
                    changed[at] = other
                    out.append(kind(changed))
        return out
    if isinstance(value, dict):
        return [{}, dict(list(value.items())[1:])]
    return []


def report(**info):
    sys.stdout.flush()
    sys.stdout.write("\n" + MARK + json.dumps(info) + "\n")
    sys.stdout.flush()


reference = load("reference.py")
original = reference[ENTRY]
recorded = []


def recorder(*args, **kwargs):
    if len(recorded) < MAX_RECORDED:
        try:
            recorded.append(copy.deepcopy((args, kwargs)))
        except Exception:
            pass
    return original(*args, **kwargs)


reference[ENTRY] = recorder
try:
    with open("check.py", encoding="utf-8") as handle:
        exec(compile(handle.read(), "check.py", "exec"), reference)
except BaseException:
    pass
reference[ENTRY] = original
mutant = load("mutant.py")[ENTRY]


def inputs():
    yield from recorded
    for positional, named in recorded:
        for at, value in enumerate(positional):
            for other in variants(value):
                yield positional[:at] + (other,) + positional[at + 1:], named


deadline = time.monotonic() + BUDGET
seen, tried, skipped, complete = set(), 0, 0, True
for args in inputs():
    key = repr(args)
    if key in seen:
        continue
    seen.add(key)
    if tried >= MAX_INPUTS or time.monotonic() > deadline:
        complete = False
        break
    expected = call(original, args)
    if expected[0] != "ok":
        skipped += 1
        continue
    got = call(mutant, args)
    tried += 1
    if not same(expected, got):
        shown = got[1] if got[0] == "ok" else f"<{got[0]} {got[1] or ''}>".replace(" >", ">")
        report(verdict="differs", tried=tried, skipped=skipped, recorded=len(recorded),
               witness=repr(args)[:200], reference=repr(expected[1])[:120],
               mutant=repr(shown)[:120] if got[0] == "ok" else shown)
        sys.exit(0)
verdict = "equivalent" if tried and complete else "inconclusive"
report(verdict=verdict, tried=tried, skipped=skipped, recorded=len(recorded))
"""


def probe(task: Task, mutant_source: str, *, budget_s: float = PROBE_BUDGET_S) -> dict[str, Any]:
    """Look for an input on which the mutant and the reference differ (see module docs)."""
    if not task.entry_point or task.reference is None or task.check.get("kind") != "python":
        return {"verdict": "inconclusive", "reason": "no entry point or python check to probe"}
    files = {
        "reference.py": task.reference,
        "mutant.py": mutant_source,
        "check.py": task.check["code"],
        "probe.py": _PROBE_SOURCE,
    }
    result = run_python(
        files,
        ["probe.py", task.entry_point, str(budget_s)],
        timeout_s=budget_s + 6.0,
        max_output=20_000,
    )
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(_MARK):
            try:
                return json.loads(line[len(_MARK) :])
            except ValueError:
                break
    reason = result.killed_reason or f"exit code {result.returncode}"
    return {"verdict": "inconclusive", "reason": f"the probe did not finish ({reason})"}


def _judge(
    task: Task, source: str, check: dict[str, Any], critic: Metered | None
) -> dict[str, Any]:
    """The grading check, and the critic when there is one, on one artifact."""
    report = run_check(check, {**task.files, task.path: source}, task.path)
    evidence = str(report.get("evidence", ""))
    out: dict[str, Any] = {
        "check_passed": bool(report["passed"]),
        "timed_out": evidence.startswith(("timed out", "CPU time limit")),
        "evidence": _clip(evidence),
        "critic_blocking": None,
        "critic_malformed": False,
    }
    if critic is not None:
        reviewed, _tokens = run_critic(
            critic, task.prompt, task.path, source, report, CRITIC_RUBRIC
        )
        if reviewed is None:
            out["critic_malformed"] = True
        else:
            issues = blocking(ground(reviewed))
            out["critic_blocking"] = len(issues)
            out["critic_issue"] = _clip(f"{issues[0].id}: {issues[0].evidence}") if issues else ""
    out["critic_flagged"] = bool(out["critic_blocking"])
    out["flagged"] = not out["check_passed"] or out["critic_flagged"]
    return out


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
    judge = Metered(critic, "critic", "function_calling") if critic is not None else None
    reference = _judge(task, task.reference, check, judge)
    record: dict[str, Any] = {"id": task.id, "reference": reference, "mutants": []}
    if not reference["check_passed"]:
        record["skipped"] = "the reference fails its own check: its mutants prove nothing"
        record["usage"] = judge.usage if judge else {}
        return record
    for mutant in mutants(task, seed=seed, operators=operators):
        outcome = _judge(task, mutant.source, check, judge)
        entry = {
            "operator": mutant.operator,
            "line": mutant.line,
            "before": _clip(mutant.before, 120),
            "after": _clip(mutant.after, 120),
            **outcome,
        }
        if outcome["check_passed"]:
            found = probe(task, mutant.source)
            entry["status"] = "survived" if found["verdict"] == "differs" else found["verdict"]
            entry["probe"] = found
        else:
            entry["status"] = "killed"
        record["mutants"].append(entry)
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
    started = time.monotonic()

    def one(task: Task) -> dict[str, Any]:
        return seed_task(task, critic=critic, seed=seed, timeout_s=timeout_s)

    records = _map(one, tasks, workers, progress)
    return {
        "mode": "seeded-errors",
        **dict(labels or {}),
        "seed": seed,
        "timeout_s": timeout_s,
        "workers": workers,
        "operators": list(OPERATORS),
        "wall_time_s": round(time.monotonic() - started, 2),
        "summary": _seeded_summary(records, with_critic=critic is not None),
        "tasks": records,
    }


def _mutant_counts(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
        "catch_rate": _ratio(caught, len(live)),
        "check_catch_rate": _ratio(status["killed"], len(live)),
        "raw_check_catch_rate": _ratio(status["killed"], len(entries)),
    }


def _seeded_summary(records: Sequence[Mapping[str, Any]], *, with_critic: bool) -> dict[str, Any]:
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
        "false_flag_rate": _ratio(flagged, len(references)),
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
        live = [e for e in entries if e["status"] != "equivalent"]
        usage: dict[str, dict[str, int]] = {}
        for r in judged:
            usage = merge_usage(usage, r.get("usage"))
        summary["critic"] = {
            "references_flagged": sum(ref["critic_flagged"] for ref in references),
            "mutants_flagged": sum(e["critic_flagged"] for e in live),
            "caught_only_by_critic": sum(e["critic_flagged"] and e["check_passed"] for e in live),
            "equivalent_flagged": sum(
                e["critic_flagged"] for e in entries if e["status"] == "equivalent"
            ),
            "malformed": sum(ref["critic_malformed"] for ref in references)
            + sum(e["critic_malformed"] for e in entries),
            "tokens": total_tokens(usage),
            "calls": _calls(usage),
        }
    return summary


# -- the entry point the CLI uses ----------------------------------------------------------------


def evaluate(
    dataset: str = "humaneval",
    *,
    model: str | BaseChatModel | None = None,
    critic: str | BaseChatModel | None = None,
    seeded_errors: bool = False,
    rounds: int = DEFAULT_ROUNDS,
    limit: int | None = None,
    evidence: Evidence = "check",
    workers: int | None = None,
    seed: int = 0,
    timeout_s: float = SEEDED_TIMEOUT_S,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load the dataset and models (ConfigError when unusable), then run one evaluation.

    Seeded errors need no model; ``critic`` (else ``model``) adds the model critic. The
    reflection comparison needs ``model``; ``critic`` adds a model critic to the loop.
    """
    if rounds < 0:
        raise ConfigError(f"--rounds must be 0 or more, not {rounds}")
    if timeout_s <= 0:
        raise ConfigError(f"--timeout must be positive, not {timeout_s}")
    if not seeded_errors and model is None:
        msg = "eval needs --model provider:name (e.g. openai:gpt-4.1-mini), or --seeded-errors"
        raise ConfigError(msg)
    generator = load_model(model, "coder") if model is not None else None
    critic_spec = critic if critic is not None else (model if seeded_errors else None)
    judge = load_model(critic_spec, "critic") if critic_spec is not None else None
    tasks = load_dataset(dataset, limit=limit)
    labels = {"dataset": dataset, "model": _name(model), "critic": _name(critic_spec)}
    if seeded_errors:
        return run_seeded_eval(
            tasks,
            critic=judge,
            seed=seed,
            timeout_s=timeout_s,
            workers=workers,
            progress=progress,
            labels=labels,
        )
    assert generator is not None
    return run_reflection_eval(
        tasks,
        generator,
        critic=judge,
        max_rounds=rounds,
        evidence=evidence,
        workers=workers or 4,
        progress=progress,
        labels=labels,
    )


def _name(spec: str | BaseChatModel | None) -> str | None:
    if spec is None or isinstance(spec, str):
        return spec
    return getattr(spec, "model_name", None) or getattr(spec, "name", None) or type(spec).__name__


# -- the readable report -------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def print_report(console: Console, report: Mapping[str, Any]) -> None:
    """Print an evaluation report as tables."""
    if report["mode"] == "seeded-errors":
        _print_seeded(console, report)
    else:
        _print_reflection(console, report)


_CHANGE_STYLE = {"fix": "green", "regression": "red", "right": "", "wrong": "dim"}


def _print_reflection(console: Console, report: Mapping[str, Any]) -> None:
    s = report["summary"]
    table = Table(title="tasks", title_justify="left")
    for column in ("task", "first", "final", "change", "rounds", "stop", "tokens", "calls"):
        table.add_column(column)
    if report.get("critic"):
        table.add_column("critic flags (false)")
    for r in report["tasks"]:
        if "error" in r:
            table.add_row(escape(r["id"]), "", "", f"[red]error[/] {r['error_class']}")
            continue
        style = _CHANGE_STYLE[r["change"]]
        row = [
            escape(r["id"]),
            "✓" if r["first_correct"] else "✗",
            "✓" if r["final_correct"] else "✗",
            f"[{style}]{r['change']}[/]" if style else r["change"],
            str(r["rounds"]),
            r["stop_reason"],
            str(r["tokens"]["on"]),
            str(r["calls"]["on"]),
        ]
        if report.get("critic"):
            c = r["critic"] or {}
            row.append(f"{c.get('flags', 0)} ({c.get('false_flags', 0)})")
        table.add_row(*row)
    console.print(table)

    n = s["tasks"] - s["errors"]
    totals = Table(
        title=escape(
            f"reflection on {report['dataset']}: model {report['model']}, critic "
            f"{report.get('critic') or 'check only'}, evidence {report['evidence']}, "
            f"max_rounds {report['max_rounds']}"
        ),
        title_justify="left",
    )
    for column in ("", "reflection off (first draft)", f"on (≤{report['max_rounds']} rounds)"):
        totals.add_column(column)
    totals.add_row("correct", _pct(s["first_correct"], n), _pct(s["final_correct"], n))
    totals.add_row("tokens", str(s["tokens"]["off"]), str(s["tokens"]["on"]))
    totals.add_row("model calls", str(s["calls"]["off"]), str(s["calls"]["on"]))
    console.print(totals)
    console.print(
        f"fixes (wrong→right) [green]{s['fixes']}[/], regressions (right→wrong) "
        f"[red]{s['regressions']}[/], unchanged right {s['unchanged_right']}, unchanged wrong "
        f"{s['unchanged_wrong']}; net {s['net_fixes']:+d}"
    )
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s["stop_reasons"].items()))
    console.print(f"average rounds {s['avg_rounds']}; stop reasons: {reasons or '-'}")
    if s["critic"]:
        c = s["critic"]
        console.print(
            f"critic: {c['flags']} flags, {c['confirmed']} confirmed by the check, "
            f"{c['false_flags']} false; precision {_rate(c['precision'])}, recall "
            f"{_rate(c['recall'])}; {c['malformed']} malformed critiques"
        )
    if s["errors"]:
        console.print(f"[red]{s['errors']} task(s) failed[/]: {s['error_classes']}")
    console.print(f"[dim]wall time {report['wall_time_s']} s, {report['workers']} workers[/]")


def _print_seeded(console: Console, report: Mapping[str, Any]) -> None:
    s = report["summary"]
    table = Table(
        title=escape(
            f"seeded errors in {report['dataset']} references (seed {report['seed']}, "
            f"check timeout {report['timeout_s']} s, critic {report.get('critic') or 'none'})"
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    # short headers keep the table whole in 80 columns; timeouts are among the killed, and
    # "caught" (killed or flagged by the critic) differs from "killed" only with a critic
    keys = ["mutants", "killed", "timeouts", "equivalent", "survived", "inconclusive"]
    headers = ["mutants", "killed", "timeout", "equiv", "survived", "unsure"]
    if s.get("critic"):
        keys.append("caught")
        headers.append("caught")
    table.add_column("operator", no_wrap=True)
    for header in [*headers, "rate"]:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))

    def row(name: str, c: Mapping[str, Any]) -> list[str]:
        return [name, *(str(c[k]) for k in keys), _rate(c["catch_rate"])]

    for op, counts in s["by_operator"].items():
        table.add_row(*row(op, counts))
    table.add_row(*row("[bold]all[/]", s), end_section=True)
    console.print(table)
    console.print(
        "killed: the check failed (timeout: by its time limit); equiv: no input found on which "
        "it differs from the reference; survived: passes the check but differs on the witness "
        "input; unsure: the probe could not finish; rate: caught (killed, or flagged by the "
        "critic) / (mutants - equiv)",
        style="dim",
    )
    console.print(
        f"references: {s['references']}, flagged {s['references_flagged']} "
        f"(false-flag rate {_rate(s['false_flag_rate'])}); catch rate {_rate(s['catch_rate'])} "
        f"of {s['mutants'] - s['equivalent']} non-equivalent mutants "
        f"({s['equivalent']} equivalent reported apart; raw check kill rate "
        f"{_rate(s['raw_check_catch_rate'])} of all {s['mutants']})"
    )
    if s.get("critic"):
        c = s["critic"]
        console.print(
            f"critic: flagged {c['mutants_flagged']} mutants ({c['caught_only_by_critic']} the "
            f"check missed), {c['references_flagged']} references, {c['equivalent_flagged']} "
            f"equivalent mutants; {c['malformed']} malformed; {c['tokens']} tokens, "
            f"{c['calls']} calls"
        )
    if s["not_caught"]:
        missed = Table(title="not caught", title_justify="left")
        for column in ("task", "operator", "line", "change", "status", "witness"):
            missed.add_column(column)
        for e in s["not_caught"][:30]:
            change = escape(f"{e['before']} → {e['after']}")
            witness = escape(e.get("witness") or "")
            cells = (escape(e["id"]), e["operator"], str(e["line"]), change, e["status"], witness)
            missed.add_row(*cells)
        console.print(missed)
    if s["errors"] or s["skipped"]:
        console.print(f"[red]{s['errors']} error(s), {s['skipped']} skipped problem(s)[/]")
    console.print(f"[dim]wall time {report['wall_time_s']} s, {report['workers']} workers[/]")
