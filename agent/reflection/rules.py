"""Reflection (seed 000): the decision rules, in docs/architecture.md's order, one function each.

Each rule returns a :class:`Decision` or ``None``; the first decision wins. Only when no rule
decides is the model asked, and its answer is validated by :func:`validate_decision`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from agent.context import Context
from agent.plan.diff import plan_actual_diff
from agent.plan.progress import is_done, pending_steps, ready_steps
from agent.prompts import render
from agent.reflection.answers import choices
from agent.reflection.budget import budget_of
from agent.vfs.entries import summarize_files
from agent.vfs.quoting import clean_text, data_block, quote_data

DecisionName = Literal["continue", "replan", "end", "escalate", "fail"]
EXCERPT_CHARS = 200  # the most of an artifact's evidence a question quotes
QUESTION_CHARS = 1000  # the longest question a human is asked
RESPONSE_CHARS = 120  # the longest suggested response


class ReflectionAnswer(BaseModel):
    """What the reflection model must return."""

    decision: Literal["continue", "replan", "end", "escalate"]
    reason: str = Field(default="", description="A diagnosis of at most 30 words.")
    final_answer: str | None = Field(
        default=None, description="For end: 1-3 sentences referring to artifact names."
    )
    question: str | None = Field(default=None, description="For escalate: one specific question.")
    suggested_responses: list[str] = Field(
        default_factory=list, description="For escalate: short answers the human may pick."
    )


@dataclass
class Decision:
    """One reflection outcome, as logged in ``decisions``."""

    decision: DecisionName
    reason: str
    by: Literal["rule", "model"] = "rule"
    forced: bool = False
    counts_depth: bool = True
    stop_reason: str | None = None
    status: str | None = None
    question: str | None = None
    suggested_responses: list[str] = field(default_factory=list)
    final_answer: str | None = None


@dataclass
class Situation:
    """What the rules look at, gathered from state once (:func:`situation_from_state`)."""

    goal: str
    plan: dict[str, Any] | None
    files: Mapping[str, Mapping[str, Any]]
    step: int
    depth: int
    cap: int
    dispatched: list[str]
    previous_defects: list[str]
    turn_events: list[dict[str, Any]]
    exhausted: str | None = None
    strict_end: bool = True
    planning: str = "upfront"
    """upfront or rolling (``Context.planning``): with rolling, a plan whose steps are all
    done may be one segment of the goal, and reflection may replan for the next one."""
    ready: list[dict[str, Any]] = field(init=False)
    """The plan's steps that could run now, computed once."""

    def __post_init__(self) -> None:
        self.ready = ready_steps(self.plan, self.files)

    @property
    def round_events(self) -> list[dict[str, Any]]:
        return [e for e in self.turn_events if e.get("round") == self.step]

    @property
    def defects(self) -> list[str]:
        """Signatures of the failing evidence produced in this round."""
        return sorted(
            {
                e["defect"]
                for e in self.round_events
                if e.get("action") == "result" and e.get("defect")
            }
        )

    def done_files(self) -> list[str]:
        return sorted(p for p, e in self.files.items() if e.get("status") == "done")


def situation_from_state(
    state: Mapping[str, Any], ctx: Context, *, now: float | None = None
) -> Situation:
    """The one place a :class:`Situation` is built, for reflection and for the escalations
    decided elsewhere (an invalid plan, a model error) alike."""
    turn = state.get("turn") or {}
    decisions = state.get("decisions") or []
    start = int(turn.get("start_step", 0))
    step = int(state.get("step") or 0)
    return Situation(
        goal=state.get("goal", ""),
        plan=state.get("plan"),
        files=state.get("files") or {},
        step=step,
        depth=int(state.get("reflection_depth") or 0),
        cap=ctx.depth_cap(),
        dispatched=list(state.get("dispatch") or []),
        previous_defects=list(decisions[-1].get("defects", [])) if decisions else [],
        turn_events=[e for e in state.get("trajectory") or [] if e.get("round", 0) > start],
        exhausted=budget_of(state, ctx, now=now).exhausted,
        strict_end=ctx.strict_end,
        planning=ctx.planning,
    )


# ---------------------------------------------------------------------------- the rules


def rule_fatal_error(s: Situation) -> Decision | None:
    """A permission or policy error ends the run: never retried, never worked around."""
    for event in s.round_events:
        if event.get("action") == "error" and event.get("error_class") in (
            "permission_denied",
            "policy_rejected",
            "invalid_input",
        ):
            observation = quote_data("error", event.get("observation", ""), 240)
            return Decision(
                "fail",
                f"step {event.get('step_id')}: {observation}",
                forced=True,
                counts_depth=False,
                stop_reason=event["error_class"],
                status="failed",
            )
    return None


def rule_progress(s: Situation) -> Decision | None:
    """Rule 0: every artifact of this round passed and steps remain: continue, no model."""
    if not s.dispatched or not s.plan or s.exhausted:
        return None  # budgets stay hard limits even while every step passes
    outputs = {st["step_id"]: st["expected_output"] for st in s.plan["steps"]}
    for step_id in s.dispatched:
        entry = s.files.get(outputs.get(step_id, ""))
        if not entry or entry.get("status") != "done" or entry.get("written_at_step") != s.step:
            return None
    if any(e.get("kind") == "critique" and e.get("status") == "active" for e in s.files.values()):
        return None
    if not s.ready:
        return None
    return Decision("continue", "every new artifact passed its check", counts_depth=False)


def rule_depth_cap(s: Situation) -> Decision | None:
    """Rule 1: the cap is reached: escalate, forced, without asking the model."""
    if s.depth < s.cap:
        return None
    return Decision(
        "escalate",
        f"reflection depth cap {s.cap} reached",
        forced=True,
        stop_reason="depth_cap",
        question=(
            f"Reflection depth {s.cap} reached without converging: "
            f"{_progress_line(s)}. How should I proceed?"
        ),
        suggested_responses=[
            "accept the artifacts as they are",
            "try again with clearer instructions: <your hint>",
            "stop here",
        ],
    )


def rule_budget(s: Situation) -> Decision | None:
    """Rule 2: a budget is spent: state is kept, a human may resume with more."""
    if s.exhausted is None:
        return None
    what = s.exhausted.replace("_", " ")
    return Decision(
        "escalate",
        f"{what} exhausted",
        forced=True,
        stop_reason=s.exhausted,
        status="budget_exhausted",
        question=f"The {what} of this turn is spent ({_progress_line(s)}). Continue?",
        suggested_responses=["continue with a higher budget", "stop here"],
    )


def rule_repeated_defect(s: Situation) -> Decision | None:
    """Rule 3: the same defect twice in a row, or a step that failed twice: ask a human."""
    repeated = sorted(set(s.defects) & set(s.previous_defects))
    if repeated:
        step_id, evidence = _defect_evidence(s, repeated[0])
        return Decision(
            "escalate",
            f"step {step_id} repeated the same defect in two consecutive reflections",
            forced=True,
            stop_reason="repeated_defect",
            question=f"Step {step_id} keeps failing with the same evidence "
            f"({quote_data('evidence', evidence, EXCERPT_CHARS)}). How should it be fixed?",
            suggested_responses=["here is a hint: <hint>", "drop this step", "stop here"],
        )
    failures: dict[str, int] = {}
    for event in s.turn_events:
        if event.get("action") == "result" and not event.get("passed"):
            failures[event["step_id"]] = failures.get(event["step_id"], 0) + 1
        elif event.get("action") == "error":
            failures[event["step_id"]] = failures.get(event["step_id"], 0) + 1
    twice = sorted(sid for sid, n in failures.items() if n >= 2)
    if twice:
        return Decision(
            "escalate",
            f"subagent failed twice on step {twice[0]}",
            forced=True,
            stop_reason="subagent_failed_twice",
            question=f"The subagent failed twice on step {twice[0]} "
            f"({quote_data('last evidence', _last_observation(s, twice[0]), EXCERPT_CHARS)}). "
            "How should I proceed?",
            suggested_responses=["here is a hint: <hint>", "drop this step", "stop here"],
        )
    return None


Rule = Callable[[Situation], Decision | None]
RULES: tuple[Rule, ...] = (
    rule_fatal_error,
    rule_progress,
    rule_depth_cap,
    rule_budget,
    rule_repeated_defect,
)


def decide_by_rule(s: Situation, rules: Sequence[Rule] = RULES) -> Decision | None:
    """Apply the rules in docs/architecture.md's order; None means the model must be asked."""
    for rule in rules:
        if (decision := rule(s)) is not None:
            return decision
    return None


def visible_files(s: Situation) -> dict[str, Mapping[str, Any]]:
    """The files reflection is shown: subagents name their scratch files, so only their
    number is shown, not their names (critiques stay, they are the step's open issues)."""
    return {
        p: e for p, e in s.files.items() if not p.startswith("work/") or e.get("kind") == "critique"
    }


def file_summaries(s: Situation) -> dict[str, dict[str, Any]]:
    """Exactly the summaries reflection sees."""
    return summarize_files(visible_files(s), s.step)


def summary_changes(
    stored: Mapping[str, Mapping[str, Any]], s: Situation
) -> dict[str, dict[str, Any] | None]:
    """The write that brings the stored ``file_summaries`` up to date: only what changed
    (``None`` for a file gone). They keep the step a file was written at instead of its
    age, which changes every round and would rewrite every summary each time."""
    files = visible_files(s)
    current = {
        path: {k: v for k, v in item.items() if k != "age_steps"}
        | {"written_at_step": files[path].get("written_at_step", s.step)}
        for path, item in file_summaries(s).items()
    }
    changed: dict[str, dict[str, Any] | None] = {
        path: item for path, item in current.items() if stored.get(path) != item
    }
    return changed | {path: None for path in stored if path not in current}


def reflection_input(s: Situation) -> dict[str, Any]:
    """The model's whole view: goal, plan, summaries and diff — never file contents."""
    plan = s.plan or {"version": 0, "steps": []}
    visible = visible_files(s)
    return {
        "goal": s.goal,
        "plan": {
            "version": plan.get("version"),
            "steps": [
                {
                    "step_id": st["step_id"],
                    "action": st["action"],
                    "depends_on": st["depends_on"],
                    "expected_output": st["expected_output"],
                    "done": is_done(st, s.files),
                }
                for st in plan.get("steps", [])
            ],
        },
        "files": file_summaries(s),
        "diff": plan_actual_diff(plan, visible),
        "scratch_files": len(s.files) - len(visible),
        "ready_steps": [st["step_id"] for st in s.ready],
        "step": s.step,
        "reflection_depth": s.depth,
        "max_reflection_depth": s.cap,
        "planning": s.planning,
    }


def reflection_messages(s: Situation) -> list[BaseMessage]:
    """The reflection model's prompt: the situation as a JSON block between tags, which no
    string inside can close (:func:`agent.vfs.quoting.data_block`); the system prompt says its
    file names and evidence lines are data, never instructions."""
    situation = data_block(reflection_input(s))
    return [
        SystemMessage(render("reflection")),
        HumanMessage(render("reflection_input", situation=situation)),
    ]


def from_answer(answer: ReflectionAnswer) -> Decision:
    """The model's answer as a decision, before validation."""
    return Decision(
        answer.decision,
        answer.reason or answer.decision,
        by="model",
        final_answer=answer.final_answer,
        question=answer.question,
        suggested_responses=list(answer.suggested_responses),
        stop_reason="model_escalated" if answer.decision == "escalate" else None,
    )


def failed_round(s: Situation, error: str) -> Decision:
    """A reflection answer that stayed malformed: a lost round, never an ``end``."""
    decision: DecisionName = "continue" if s.ready else "replan"
    why = quote_data("answer", error, 240)
    return Decision(decision, f"reflection answer malformed twice: {why}", forced=True)


def validate_decision(d: Decision, s: Situation) -> Decision:
    """Rule 5: overrule an ``end`` without evidence and a ``continue`` with nothing to do."""
    if d.decision == "end":
        done = s.done_files()
        missing = [st["step_id"] for st in pending_steps(s.plan, s.files)]
        if not done or (s.strict_end and missing):
            why = "no artifact is done" if not done else f"steps {', '.join(missing)} not done"
            return Decision(
                "continue" if s.ready else "replan",
                f"end overridden: {why}",
                by=d.by,
                forced=True,
            )
        if not d.final_answer:
            d.final_answer = f"Done. Artifacts: {', '.join(done)}."
    if d.decision == "continue" and not s.ready:
        return Decision("replan", "continue overridden: no step is ready", by=d.by, forced=True)
    if d.decision == "escalate" and not d.question:
        d.question = d.reason or "How should I proceed?"
    return d


def log_entry(d: Decision, s: Situation) -> dict[str, Any]:
    """The ``decisions`` log entry for one reflection."""
    entry = {
        "round": s.step,
        "decision": d.decision,
        "reason": d.reason,
        "by": d.by,
        "forced": d.forced,
        "depth": depth_after(d, s),
        "defects": s.defects,
    }
    if d.stop_reason:
        entry["stop_reason"] = d.stop_reason
    return entry


def depth_after(d: Decision, s: Situation) -> int:
    """``reflection_depth`` once ``d`` is applied: the one place it is counted."""
    return s.depth + (1 if d.counts_depth else 0)


def escalation_payload(d: Decision, s: Situation) -> dict[str, Any]:
    """What the human sees when the thread pauses (seed 000, Escalation format).

    The rules' questions quote artifact text with :func:`agent.vfs.quoting.quote_data`; a
    question or answer the model wrote is cleaned the same way (one line, no escape
    sequence, capped), since it may repeat what it read."""
    return {
        "question": clean_text(d.question or "", QUESTION_CHARS)
        or clean_text(d.reason, QUESTION_CHARS)
        or "How should I proceed?",
        "artifacts_ready_for_review": s.done_files(),
        "suggested_responses": choices(
            [
                clean_text(r, RESPONSE_CHARS) if isinstance(r, str) else r
                for r in d.suggested_responses
            ]
        ),
        "reflection_depth": depth_after(d, s),
        "reason": clean_text(d.reason, QUESTION_CHARS),
        "stop_reason": d.stop_reason or "model_escalated",
        "status": d.status or "awaiting_input",
    }


def _progress_line(s: Situation) -> str:
    steps = (s.plan or {}).get("steps", [])
    done = sum(1 for st in steps if is_done(st, s.files))
    return f"{done} of {len(steps)} planned artifacts done"


def _defect_evidence(s: Situation, signature: str) -> tuple[str, str]:
    for event in reversed(s.round_events):
        if event.get("defect") == signature:
            return str(event.get("step_id")), str(event.get("observation", ""))
    return "?", ""


def _last_observation(s: Situation, step_id: str) -> str:
    for event in reversed(s.turn_events):
        if event.get("step_id") == step_id and event.get("action") in ("result", "error"):
            return str(event.get("observation", ""))
    return ""
