"""Does reflection help? Each task with reflection off and on, and the critic's precision.

**Reflection off/on** ("Measuring whether reflection helps", docs/architecture.md). Each task
runs once through the agent's own revise loop, ``revise_loop(..., LoopConfig(max_revisions=N))``,
whose generator is the subagent's drafting (``StepWorker.agenerate``: the coder prompt, the
VFS tools, patch or rewrite from the feedback). Reflection *off* is ``max_revisions=0``, which
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
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from agent.checks import run_check
from agent.checks.critique import critique_from_check, merge
from agent.checks.examples import examples_check
from agent.controller.habits import RevisionRecord, as_learnt
from agent.controller.revise import LoopConfig, LoopResult, revise_loop
from agent.controller.worker import StepWorker
from agent.eval.common import Progress, calls, clip, map_tasks, ratio, review, sha, summed_usage
from agent.eval.datasets import Task
from agent.limits import FRESH_DRAFTS, MAX_REVISIONS
from agent.models.factory import JUDGE, Metered, merge_usage, total_tokens
from agent.models.profiles import AUTO, profile_for
from agent.prompts import load_prompt
from agent.vocabulary import StructuredOutput

Evidence = Literal["check", "visible"]
LOOP_TIMEOUT_S = 900.0
"""A task's loop wall bound: a CPU-served 1.5B takes 10-40 s per draft, so the loop's own
120 s would measure the machine's speed rather than reflection (tokens still bound it)."""


class _Grader:
    """The grading check on a draft, run once per distinct draft."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.reports: dict[str, dict[str, Any]] = {}

    def files(self, draft: str) -> dict[str, str]:
        return {**self.task.files, self.task.path: draft}

    def remember(self, draft: str, report: Mapping[str, Any]) -> None:
        self.reports[sha(draft)] = dict(report)

    def __call__(self, draft: str) -> dict[str, Any]:
        key = sha(draft)
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
            entry = task.entry_point  # defined, and a function (``callable()`` is refused)
            spec = examples_check([entry], [], stated=False) if entry else {"kind": "non_empty"}
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


def _coder(
    task: Task, spec: Mapping[str, Any], inputs: dict[str, str], model: Metered
) -> StepWorker:
    """The subagent that drafts the task, exactly as a plan step would run it."""
    return StepWorker(
        step={
            "step_id": _step_id(task.id),
            "action": "coder",
            "instructions": task.prompt,
            "expected_output": task.path,
            "done_when": _shown_check(spec),
        },
        goal=task.prompt,  # the task is the whole goal: its prompt carries no goal line
        inputs=inputs,
        round_no=0,
        system_prompt=load_prompt("subagents/coder"),
        model=model,
        judge=None,
    )


class _Trial:
    """One task's revise loop and what the report needs of it: every draft by hash, the model
    critic's verdict per critique round, and the usage at the first critique (what reflection
    off cost)."""

    def __init__(
        self, task: Task, model: BaseChatModel, critic: BaseChatModel | None, evidence: Evidence
    ) -> None:
        self.task = task
        self.spec, self.note = _evidence_spec(task, evidence)
        self.grader = _Grader(task)
        self.coder = Metered(model, "coder", StructuredOutput.FUNCTION_CALLING)
        self.judge = (
            Metered(critic, JUDGE, StructuredOutput.FUNCTION_CALLING)
            if critic is not None
            else None
        )
        # the grading files (pytest tests) are readable only when they are the loop's evidence
        inputs = dict(task.files) if evidence == "check" else {}
        self.worker = _coder(task, self.spec, inputs, self.coder)
        self.drafts: dict[str, str] = {}
        self.rounds: list[dict[str, Any]] = []
        self.first_usage: dict[str, dict[str, int]] = {}
        self.started = time.monotonic()
        self.first_wall_s = 0.0

    def usage(self) -> dict[str, dict[str, int]]:
        return merge_usage(self.coder.usage, self.judge.usage if self.judge else None)

    async def generate(self, _task: str, feedback: Any) -> tuple[str, int]:
        # awaited on the revise loop's own event loop: a sync call here would open a fresh
        # loop per draft, and an async model client's pooled connection would then outlive
        # the loop it was opened on ("Event loop is closed" on the next draft)
        return await self.worker.agenerate(self.task.prompt, feedback)

    async def gather(self, draft: str) -> dict[str, Any]:
        # the check runs sandboxed processes and the critic calls its model synchronously:
        # in a thread, so parallel tasks (--workers) sharing the loop are not held up
        return await asyncio.to_thread(self._gather, draft)

    async def critique(self, task: str, draft: str, report: dict[str, Any]) -> tuple[Any, int]:
        return await asyncio.to_thread(self._critique, task, draft, report)

    def _gather(self, draft: str) -> dict[str, Any]:
        self.drafts[sha(draft)] = draft
        report = dict(run_check(self.spec, self.grader.files(draft), self.task.path))
        if self.spec is self.task.check:
            self.grader.remember(draft, report)
        return report

    def _critique(self, _task: str, draft: str, report: dict[str, Any]) -> tuple[Any, int]:
        from_check = critique_from_check(report)
        record: dict[str, Any] = {"critic_blocking": None, "critic_malformed": False}
        answer: Any = from_check
        tokens = 0
        if self.judge is not None:
            reviewed, issues, tokens = review(self.judge, self.task, draft, report)
            if reviewed is None:
                record["critic_malformed"] = True
                answer = None  # the loop's rule: a malformed critique is never approval
            else:
                record["critic_blocking"] = len(issues)
                answer = merge(from_check, reviewed)
        self.rounds.append(record)
        if len(self.rounds) == 1:
            self.first_usage = self.usage()
            self.first_wall_s = time.monotonic() - self.started
        return answer, tokens

    def history(self, result: LoopResult) -> list[dict[str, Any]]:
        """Per critique round: the loop's view of the draft next to the grading check's."""
        history = []
        for record, step in zip(self.rounds, result.history, strict=True):
            draft = self.drafts[step["draft_hash"]]
            history.append(
                {
                    "round": step["round"],
                    "draft_sha": step["draft_hash"][:12],
                    "evidence_passed": step["evidence_passed"],
                    "correct": bool(self.grader(draft)["passed"]),
                    "score": step["score"],
                    **record,
                }
            )
        return history


def reflect_task(
    task: Task,
    model: BaseChatModel,
    *,
    critic: BaseChatModel | None = None,
    max_revisions: int = MAX_REVISIONS,
    fresh_drafts: int = FRESH_DRAFTS,
    evidence: Evidence = "check",
    loop_config: LoopConfig | None = None,
    habits: RevisionRecord | None = None,
) -> dict[str, Any]:
    """Run one task through the revise loop; grade the first draft and the final one.
    ``habits``: what the eval's earlier loops learnt of the model's revisions (one record
    per eval run, updated here); None learns nothing."""
    trial = _Trial(task, model, critic, evidence)
    config = loop_config or LoopConfig(
        max_revisions=max_revisions, fresh_drafts=fresh_drafts, timeout_s=LOOP_TIMEOUT_S
    )
    if habits is not None:  # as a thread's loops learn what revising does for their model
        config = as_learnt(config, habits, allowed=True)
    result = revise_loop(task.prompt, trial.generate, trial.gather, trial.critique, config)
    if habits is not None:
        habits.add(result)
    if result.error is not None:  # the loop kept its best draft; a measurement has none to use
        raise result.error
    return _task_record(trial, result)


def _task_record(trial: _Trial, result: LoopResult) -> dict[str, Any]:
    """The first draft against the final one, by the grading check, with what each cost."""
    history = trial.history(result)
    first_draft = trial.drafts[result.history[0]["draft_hash"]]
    first, final = trial.grader(first_draft), trial.grader(result.best)
    first_ok, final_ok = bool(first["passed"]), bool(final["passed"])
    change = {(False, True): "fix", (True, False): "regression"}.get(
        (first_ok, final_ok), "right" if final_ok else "wrong"
    )
    spent = trial.usage()
    return {
        "id": trial.task.id,
        "first_correct": first_ok,
        "final_correct": final_ok,
        "change": change,
        "rounds": result.rounds,
        "fresh_drafts": result.fresh,
        "stop_reason": result.stop_reason,
        "converged": result.converged,
        "tokens": {"off": total_tokens(trial.first_usage), "on": total_tokens(spent)},
        "calls": {"off": calls(trial.first_usage), "on": calls(spent)},
        "io_tokens": {"off": io_tokens(trial.first_usage), "on": io_tokens(spent)},
        "wall_s": {
            "off": round(trial.first_wall_s or time.monotonic() - trial.started, 2),
            "on": round(time.monotonic() - trial.started, 2),
        },
        "usage": spent,
        "critic": critic_stats(history) if trial.judge is not None else None,
        "history": history,
        "first_evidence": clip(first.get("evidence", "")),
        "final_evidence": clip(final.get("evidence", "")),
        "evidence_note": trial.note,
        "first_draft": first_draft,
        "final_draft": result.best,
    }


def io_tokens(usage: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Prompt (input) and completion (output) tokens over every role of a usage record."""
    return {
        "input": sum(int(u.get("input_tokens", 0)) for u in usage.values()),
        "output": sum(int(u.get("output_tokens", 0)) for u in usage.values()),
    }


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
        "precision": ratio(len(confirmed), len(flags)),
        "recall": ratio(len(confirmed), len(failing)),
        "blocking_issues": sum(r["critic_blocking"] for r in flags),
        "blocking_issues_confirmed": sum(r["critic_blocking"] for r in confirmed),
    }


def run_reflection_eval(
    tasks: Sequence[Task],
    model: BaseChatModel,
    *,
    critic: BaseChatModel | None = None,
    max_revisions: int = MAX_REVISIONS,
    fresh_drafts: int = FRESH_DRAFTS,
    evidence: Evidence = "check",
    workers: int = 4,
    progress: Progress | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every task with reflection off (first draft) and on (``max_revisions`` revisions).

    A task whose model call raises is reported with its error class and left out of the
    counts; the summary says how many.
    """

    # the run learns what revising does for its model, as a thread does, when its profile
    # allows fresh drafts first (agent.models.profiles)
    habits = RevisionRecord() if profile_for(AUTO, model).fresh_drafts_first else None

    def one(task: Task) -> dict[str, Any]:
        return reflect_task(
            task,
            model,
            critic=critic,
            max_revisions=max_revisions,
            fresh_drafts=fresh_drafts,
            evidence=evidence,
            habits=habits,
        )

    records, wall_time_s = map_tasks(one, tasks, workers, progress)
    return {
        "mode": "reflection",
        **dict(labels or {}),
        "max_revisions": max_revisions,
        "fresh_drafts": fresh_drafts,
        "evidence": evidence,
        "workers": workers,
        "wall_time_s": wall_time_s,
        "summary": reflection_summary(records, with_critic=critic is not None),
        "tasks": records,
    }


def reflection_summary(
    records: Sequence[Mapping[str, Any]], *, with_critic: bool
) -> dict[str, Any]:
    """Totals over the tasks that ran; failed tasks are counted apart, by error class (also
    what ``bench/real_eval.py --report`` recomputes over a slice of a kept run)."""
    ok = [r for r in records if "error" not in r]
    n = len(ok)
    changes = Counter(r["change"] for r in ok)
    first = sum(r["first_correct"] for r in ok)
    final = sum(r["final_correct"] for r in ok)
    critic = None
    if with_critic:
        critic = critic_stats([h for r in ok for h in r["history"]])
    return {
        "tasks": len(records),
        "errors": len(records) - n,
        "error_classes": dict(Counter(r["error_class"] for r in records if "error" in r)),
        "first_correct": first,
        "final_correct": final,
        "accuracy_off": ratio(first, n),
        "accuracy_on": ratio(final, n),
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
        "io_tokens": {
            k: {part: sum(r["io_tokens"][k][part] for r in ok) for part in ("input", "output")}
            for k in ("off", "on")
        },
        "wall_s": {k: round(sum(r["wall_s"][k] for r in ok), 2) for k in ("off", "on")},
        "usage": summed_usage(r["usage"] for r in ok),
        "critic": critic,
    }
