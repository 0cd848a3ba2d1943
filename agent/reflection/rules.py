"""Reflection: the decision rules, one function each, applied in :data:`RULES`'
order (docs/how-it-stops.md lists them in that order; a test holds the two together).

Each rule returns a :class:`Decision` or ``None``; the first decision wins. Only when no rule
decides is the model asked (:mod:`agent.reflection.model_view`), and its answer is validated
by :func:`validate_decision`. The decision is written to state as plain strings
(:func:`log_entry`, :func:`escalation_payload`): a checkpoint keeps no enum objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# the words qualified: the record of one reflection here is a Decision too
from agent import vocabulary
from agent.checks.composite import proves_criteria
from agent.errors import ErrorClass
from agent.plan.direct import goal_outputs
from agent.plan.needs import named_files
from agent.plan.open_values import unsourced_values
from agent.plan.progress import is_done, pending_steps, unchanged_given
from agent.reflection.answers import choices
from agent.reflection.situation import Situation
from agent.reflection.unverified import unrun_functions
from agent.vfs.quoting import clean_text, quote_data
from agent.vocabulary import FileStatus, Planning, Status, StopReason

# the error classes that end a run, each its own stop reason
FATAL_ERRORS = (ErrorClass.PERMISSION_DENIED, ErrorClass.POLICY_REJECTED, ErrorClass.INVALID_INPUT)
EXCERPT_CHARS = 200  # the most of an artifact's evidence a question quotes
QUESTION_CHARS = 1000  # the longest question a human is asked
RESPONSE_CHARS = 120  # the longest suggested response


@dataclass
class Decision:
    """One reflection outcome, as logged in ``decisions``."""

    decision: vocabulary.Decision
    reason: str
    by: Literal["rule", "model"] = "rule"
    forced: bool = False
    counts_depth: bool = True
    stop_reason: StopReason | None = None
    status: Status | None = None
    """Set only where the run's status is not ``awaiting_input``: a budget spent, a fatal
    error."""
    question: str | None = None
    suggested_responses: list[str | dict[str, Any]] = field(default_factory=list)
    final_answer: str | None = None


# ---------------------------------------------------------------------------- the rules


def rule_fatal_error(s: Situation) -> Decision | None:
    """A permission or policy error ends the run: never retried, never worked around."""
    for event in s.round_events:
        if event.get("action") == "error" and event.get("error_class") in FATAL_ERRORS:
            observation = quote_data("error", event.get("observation", ""), 240)
            return Decision(
                vocabulary.Decision.FAIL,
                f"step {event.get('step_id')}: {observation}",
                forced=True,
                counts_depth=False,
                stop_reason=StopReason(event["error_class"]),
                status=Status.FAILED,
            )
    return None


def rule_progress(s: Situation) -> Decision | None:
    """Progress is not reflection: every artifact of this round passed and steps remain, so
    continue without asking the model or counting depth."""
    if not s.dispatched or not s.plan or s.exhausted:
        return None  # budgets stay hard limits even while every step passes
    outputs = {st["step_id"]: st["expected_output"] for st in s.plan["steps"]}
    for step_id in s.dispatched:
        entry = s.files.get(outputs.get(step_id, ""))
        if (
            not entry
            or entry.get("status") != FileStatus.DONE
            or entry.get("written_at_step") != s.step
        ):
            return None
    if _open_critique(s):
        return None
    if not s.ready:
        return None
    return Decision(
        vocabulary.Decision.CONTINUE, "every new artifact passed its check", counts_depth=False
    )


def rule_finished(s: Situation) -> Decision | None:
    """The work the goal names is finished and proven: every planned artifact passed a
    check that executed or parsed it against stated criteria (or a judge passed it), the
    plan writes a file the goal names and every file it names is there, and no blocking
    critique is open → end, without asking the model. An artifact proven only to be there
    (``non_empty``, ``exists``, ``syntax``) leaves the decision to reflection's model. With
    rolling planning a finished plan may be one segment of the goal: the model is asked."""
    if not s.plan or s.planning != Planning.UPFRONT or pending_steps(s.plan, s.files):
        return None
    outputs = {st["expected_output"] for st in s.plan.get("steps", [])}
    named = set(named_files(s.goal))
    if not outputs & named or any(p not in outputs and p not in s.files for p in named):
        return None
    steps = s.plan.get("steps", [])
    if not all(proves_criteria(st.get("done_when"), judged=s.judge_proves) for st in steps):
        return None
    if _open_critique(s):
        return None
    done = s.done_files()
    return Decision(
        vocabulary.Decision.END,
        "every planned artifact passed a check of what it must do, and every file the goal "
        "names is there",
        counts_depth=False,
        final_answer=f"Done. Artifacts: {', '.join(done)}.",
    )


def _open_critique(s: Situation) -> bool:
    return any(
        e.get("kind") == "critique" and e.get("status") == FileStatus.ACTIVE
        for e in s.files.values()
    )


def rule_depth_cap(s: Situation) -> Decision | None:
    """The depth cap is reached: escalate, forced, without asking the model."""
    if s.depth < s.cap:
        return None
    return Decision(
        vocabulary.Decision.ESCALATE,
        f"reflection depth cap {s.cap} reached",
        forced=True,
        stop_reason=StopReason.DEPTH_CAP,
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
    """A budget is spent: state is kept, a human may resume with more."""
    if s.exhausted is None:
        return None
    what = s.exhausted.replace("_", " ")
    return Decision(
        vocabulary.Decision.ESCALATE,
        f"{what} exhausted",
        forced=True,
        stop_reason=s.exhausted,
        status=Status.BUDGET_EXHAUSTED,
        question=f"The {what} of this turn is spent ({_progress_line(s)}). Continue?",
        suggested_responses=["continue with a higher budget", "stop here"],
    )


def _stuck_step(stop_reason: StopReason, reason: str, question: str) -> Decision:
    """A step that does not get better on its own: a human is asked for a hint."""
    return Decision(
        vocabulary.Decision.ESCALATE,
        reason,
        forced=True,
        stop_reason=stop_reason,
        question=question,
        suggested_responses=["here is a hint: <hint>", "drop this step", "stop here"],
    )


def rule_repeated_defect(s: Situation) -> Decision | None:
    """The same defect twice in a row, or a step that failed twice: ask a human."""
    repeated = sorted(set(s.defects) & set(s.previous_defects))
    if repeated:
        step_id, evidence = _defect_evidence(s, repeated[0])
        return _stuck_step(
            StopReason.REPEATED_DEFECT,
            f"step {step_id} repeated the same defect in two consecutive reflections",
            f"Step {step_id} keeps failing with the same evidence "
            f"({quote_data('evidence', evidence, EXCERPT_CHARS)}). How should it be fixed?",
        )
    failures: dict[str, int] = {}
    for event in s.turn_events:
        if event.get("action") == "result" and not event.get("passed"):
            failures[event["step_id"]] = failures.get(event["step_id"], 0) + 1
        elif event.get("action") == "error":
            failures[event["step_id"]] = failures.get(event["step_id"], 0) + 1
    twice = sorted(sid for sid, n in failures.items() if n >= 2)
    if twice:
        return _stuck_step(
            StopReason.SUBAGENT_FAILED_TWICE,
            f"subagent failed twice on step {twice[0]}",
            f"The subagent failed twice on step {twice[0]} "
            f"({quote_data('last evidence', _last_observation(s, twice[0]), EXCERPT_CHARS)}). "
            "How should I proceed?",
        )
    return None


Rule = Callable[[Situation], Decision | None]
RULES: tuple[Rule, ...] = (
    rule_fatal_error,
    rule_progress,
    rule_finished,
    rule_depth_cap,
    rule_budget,
    rule_repeated_defect,
)


def decide_by_rule(s: Situation, rules: Sequence[Rule] = RULES) -> Decision | None:
    """Apply the rules in order; None means the model must be asked."""
    for rule in rules:
        if (decision := rule(s)) is not None:
            return decision
    return None


def failed_round(s: Situation, error: str) -> Decision:
    """A reflection answer that stayed malformed: a lost round, never an ``end``."""
    decision = vocabulary.Decision.CONTINUE if s.ready else vocabulary.Decision.REPLAN
    why = quote_data("answer", error, 240)
    return Decision(decision, f"reflection answer malformed twice: {why}", forced=True)


def validate_decision(d: Decision, s: Situation) -> Decision:
    """Overrule an ``end`` without evidence and a ``continue`` with nothing to do: that is an
    ``end`` when the end would stand (every planned artifact done, its check passed), else a
    ``replan``. On the 1.5B a reflection shown one artifact done answered "continue"; made
    a replan, it re-ran the finished step until the depth cap paused the thread."""
    nothing_left = not s.ready and not pending_steps(s.plan, s.files)
    if d.decision == vocabulary.Decision.CONTINUE and nothing_left and s.done_files():
        why = "continue with nothing left to do: every planned artifact is done"
        return validate_decision(Decision(vocabulary.Decision.END, why, by=d.by, forced=True), s)
    if d.decision == vocabulary.Decision.END:
        done = s.done_files()
        missing = [st["step_id"] for st in pending_steps(s.plan, s.files)]
        if blocked := _end_blocked(s, done, missing):
            return Decision(
                vocabulary.Decision.CONTINUE if s.ready else vocabulary.Decision.REPLAN,
                f"end overridden: {blocked}",
                by=d.by,
                forced=True,
            )
        if not d.final_answer:
            d.final_answer = f"Done. Artifacts: {', '.join(done)}."
    if d.decision == vocabulary.Decision.CONTINUE and not s.ready:
        return Decision(
            vocabulary.Decision.REPLAN,
            "continue overridden: no step is ready",
            by=d.by,
            forced=True,
        )
    if d.decision == vocabulary.Decision.ESCALATE and not d.question:
        d.question = d.reason or "How should I proceed?"
    return d


def _end_blocked(s: Situation, done: list[str], missing: list[str]) -> str | None:
    """Why an ``end`` cannot stand, or None: no artifact done, planned steps not done (with
    ``strict_end``), or a file the goal asks for that no step writes and the thread lacks
    (an end without it would call a run a success that never made what the goal named)."""
    if not done:
        return "no artifact is done"
    if s.strict_end and missing:
        return f"steps {', '.join(missing)} not done"
    planned = {st.get("expected_output") for st in (s.plan or {}).get("steps", [])}
    asked = goal_outputs(s.goal, s.files)
    unplanned = [p for p in asked if p not in planned and p not in s.files]
    if unplanned:
        return f"the goal asks for {', '.join(unplanned)}, which no step writes"
    return None


def held_to_evidence(d: Decision, s: Situation) -> Decision:
    """An ``end`` (by rule or by the model) stands only when every function the checks
    assert is defined was also run by one of them (:mod:`agent.reflection.unverified`),
    every value the goal leaves open comes from a source (:mod:`agent.plan.open_values`),
    every user's file a step writes was changed (:func:`unchanged_given`) and the goal's
    words count as read (:attr:`Situation.words_read`);
    else a human is asked to accept the artifacts, or give examples or the values: "success"
    would claim what nothing tested, or the agent's guess."""
    if d.decision != vocabulary.Decision.END:
        return d
    if unsourced := unsourced_values(s.goal, s.files):
        listed = "; ".join(
            f"{path}: "
            + ", ".join(f"{key} = {value} (the goal: <{hole}>)" for key, value, hole in found)
            for path, found in sorted(unsourced.items())
        )
        return _unverified(
            d,
            f"values the goal leaves open come from no source: {listed}",
            f"the goal leaves these values open and neither it, your files nor an answer "
            f"gives them, so they are the agent's guess ({clean_text(listed, EXCERPT_CHARS)}). "
            f"Accept the artifacts as they are, or answer with the values, and they will be "
            f"written.",
        )
    if unchanged := unchanged_given(s.plan, s.files):
        listed = ", ".join(unchanged)
        return _unverified(
            d,
            f"{listed} is as the user gave it: no step changed it",
            f"{clean_text(listed, EXCERPT_CHARS)} is as you gave it: no step changed it, so "
            f"nothing the goal asks of it was done. Accept the artifacts as they are, or "
            f"answer with what must change (an example such as f(...) == ... is checked).",
        )
    unrun = unrun_functions(s.plan, s.files)
    if not unrun:
        return d if s.words_read else _words_unread(d)
    listed = "; ".join(f"{path}: {', '.join(names)}" for path, names in sorted(unrun.items()))
    first = clean_text(next(iter(sorted(unrun.items())))[1][0], RESPONSE_CHARS)
    return _unverified(
        d,
        f"no check ran {listed}",
        f"no check ran these functions, so nothing shows they do what the goal says "
        f"({clean_text(listed, EXCERPT_CHARS)}): the goal gives no example of them. Accept "
        f"the artifacts as they are, or answer with examples, such as {first}(...) == ..., "
        f"and they will be checked.",
    )


def _words_unread(d: Decision) -> Decision:
    """The pause over an end whose checks test only what the goal writes as code, or what a
    planner model read from its words that its profile does not trust to read all of them
    (``Profile.planner_reads``): the words may ask what no check tested."""
    return _unverified(
        d,
        "the goal's words were read by no reader this model profile trusts: the checks test "
        "what the goal writes as code and what the planner model read, which may not be all",
        "its checks test what the goal writes as code (calls and their results, signatures, "
        "quoted keys) and what a model this profile does not trust to read every word took "
        "from the rest. Accept the artifacts as they are, or answer with what they must do "
        "(an example such as f(...) == ... is checked).",
    )


def unjudged_end(d: Decision) -> Decision:
    """An ``end`` reflection's model decided, for a profile that does not take the model's
    word as evidence (``Profile.model_ends`` off): no rule ended the run, so some check did
    not execute or parse an artifact against what the goal states, and the human is asked
    to accept the artifacts. Any other decision is returned as it is."""
    if d.decision != vocabulary.Decision.END:
        return d
    return _unverified(
        d,
        "no check settled everything the goal states, and this model profile takes no "
        "end on the model's word alone",
        "no check settled everything the goal states, and reflection's model judging it "
        "done is not evidence with this model profile. Accept the artifacts as they are, or "
        "answer with what is missing or wrong (an example such as f(...) == ... is checked).",
    )


def _unverified(d: Decision, why: str, ask: str) -> Decision:
    """The ``unverified`` pause over an end: what the evidence does not show, and the ask."""
    return Decision(
        vocabulary.Decision.ESCALATE,
        f"every planned artifact passed its check, but {why}",
        by=d.by,
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.UNVERIFIED,
        question=f"Every planned artifact passed its check, but {ask}",
        # examples and values are typed, not clicked: accept and stop are the choices
        suggested_responses=["accept the artifacts as they are", "stop here"],
    )


def log_entry(d: Decision, s: Situation) -> dict[str, Any]:
    """The ``decisions`` log entry for one reflection."""
    entry = {
        "round": s.step,
        "decision": str(d.decision),
        "reason": d.reason,
        "by": d.by,
        "forced": d.forced,
        "depth": depth_after(d, s),
        "defects": s.defects,
    }
    if d.stop_reason:
        entry["stop_reason"] = str(d.stop_reason)
    return entry


def depth_after(d: Decision, s: Situation) -> int:
    """``reflection_depth`` once ``d`` is applied: the one place it is counted."""
    return s.depth + (1 if d.counts_depth else 0)


def escalation_payload(d: Decision, s: Situation) -> dict[str, Any]:
    """What the human sees when the thread pauses.

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
        "stop_reason": str(d.stop_reason or StopReason.MODEL_ESCALATED),
        "status": str(d.status or Status.AWAITING_INPUT),
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
