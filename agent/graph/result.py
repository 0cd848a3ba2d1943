"""The ``Result`` a caller gets when a run stops, derived from the thread's state."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

from agent.plan.progress import is_done
from agent.vfs.quoting import clean_text, screen_text
from agent.vocabulary import WAITING, FileStatus, Status, StopReason


class Result(TypedDict):
    """Why a run stopped and what it left behind (docs/architecture.md, CLI --json)."""

    status: str
    """A ``Status`` value, as state holds it."""
    stop_reason: str | None
    """A ``StopReason`` value, as state holds it."""
    converged: bool
    final_answer: str | None
    artifacts: dict[str, dict[str, Any]]
    open_issues: list[dict[str, Any]]
    rounds: int
    plan_version: int
    usage: dict[str, dict[str, int]]
    thread_id: str | None
    escalation: dict[str, Any] | None
    message: str | None
    """Why the run stopped, in words, and how to fix it when that is known: the final
    answer of a success, the failure and its fix, the question a paused thread asks. The
    text the CLI prints and the run's last AI message say."""


def _final_answer(state: Mapping[str, Any]) -> str | None:
    decisions = state.get("decisions") or []
    if decisions and decisions[-1].get("final_answer"):
        return decisions[-1]["final_answer"]
    return None


def failure_fix(state: Mapping[str, Any], decision: Mapping[str, Any]) -> str:
    """How to fix what failed the run, when it is known: on the failing decision, or on the
    error event of the step it names (a subagent whose model could not be made, a check
    whose runner is not installed)."""
    if decision.get("fix"):
        return str(decision["fix"])
    reason = str(decision.get("reason") or "")
    for event in reversed(state.get("trajectory") or []):
        named = reason.startswith(f"step {event.get('step_id')}: ")
        if event.get("action") == "error" and event.get("fix") and named:
            return str(event["fix"])
    return ""


REASON_CHARS = 1000
"""Characters of a failed run's reason shown."""


SUBAGENT_KIND = "subagent"
"""``escalation.kind`` of a question a subagent's own graph asked."""
QUESTION_CHARS = 2000
"""Characters of a subagent graph's interrupt value shown as its question."""


def with_subagent_question(values: Mapping[str, Any], interrupts: Sequence[Any]) -> dict[str, Any]:
    """``values`` of a thread paused inside a subagent's own graph (or a tool of its) as the
    thread of a paused run: awaiting input, the first pending interrupt's value as the
    question. That ``interrupt()`` is not one of ours, so the state records no pause; a
    thread that records one, or has no interrupt pending, is returned as it is."""
    status = values.get("status") or Status.RUNNING.value
    if status in WAITING or not interrupts:
        return dict(values)
    first = interrupts[0]
    value = getattr(first, "value", first)
    question = value.get("question") if isinstance(value, Mapping) else value
    if not isinstance(question, str):
        question = json.dumps(value, default=str, ensure_ascii=False)
    escalation = {
        "kind": SUBAGENT_KIND,
        "question": clean_text(question, QUESTION_CHARS),
        "reason": "a subagent's graph or tool asked the user",
        "interrupt_id": getattr(first, "id", None),
        "value": value,
    }
    return {
        **values,
        "status": Status.AWAITING_INPUT.value,
        "stop_reason": StopReason.SUBAGENT_ASKED.value,
        "escalation": escalation,
    }


def failure_text(state: Mapping[str, Any]) -> str:
    """What a failed run says: the stop reason, the failing decision's reason, its fix."""
    last = (state.get("decisions") or [{}])[-1]
    reason = screen_text(str(last.get("reason") or ""), REASON_CHARS)  # artifact text: data
    text = f"The run failed ({state.get('stop_reason')}): {reason}".strip()
    if fix := failure_fix(state, last):
        text += f"\n\n{fix}"
    return text


def _message(state: Mapping[str, Any], status: str) -> str | None:
    if status == Status.SUCCESS:
        return _final_answer(state)
    if status == Status.FAILED:
        return failure_text(state)
    if status in WAITING:
        question = (state.get("escalation") or {}).get("question")
        return str(question) if question else None
    return None


def _stop_issue(state: Mapping[str, Any], status: str) -> dict[str, Any] | None:
    """The stop itself as an open issue, for a failed or paused run that has no critique
    issue to show: its reason and, as the suggestion, the fix or the question."""
    if status != Status.FAILED and status not in WAITING:
        return None
    last = (state.get("decisions") or [{}])[-1]
    escalation = state.get("escalation") or {}
    reason = str(escalation.get("reason") or last.get("reason") or state.get("stop_reason"))
    if status == Status.FAILED:
        suggestion = failure_fix(state, last)
    else:
        suggestion = str(escalation.get("question") or "")
    step_id = next(
        (
            str(e.get("step_id"))
            for e in reversed(state.get("trajectory") or [])
            if e.get("action") == "error" and reason.startswith(f"step {e.get('step_id')}: ")
        ),
        None,
    )
    issue = {"id": str(state.get("stop_reason") or status), "severity": "blocking"}
    return issue | {"step_id": step_id, "evidence": reason, "suggestion": suggestion}


def open_issues(files: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Blocking issues still open, read from the critique files subagents leave behind."""
    issues: list[dict[str, Any]] = []
    for path, entry in sorted(files.items()):
        if entry.get("kind") != "critique" or entry.get("status") != FileStatus.ACTIVE:
            continue
        try:
            body = json.loads(entry.get("content") or "{}")
        except json.JSONDecodeError:
            continue
        for issue in body.get("open_issues", []):
            issues.append({"step_id": body.get("step_id"), "file": path, **issue})
    return issues


def build_result(state: Mapping[str, Any], thread_id: str | None = None) -> Result:
    """Summarise a thread's state as a :class:`Result`; pure, so every caller agrees."""
    files = state.get("files") or {}
    plan = state.get("plan") or {}
    steps = plan.get("steps", [])
    artifacts = {
        s["expected_output"]: {
            "status": (files.get(s["expected_output"]) or {}).get("status", "missing"),
            "step_id": s["step_id"],
            "bytes": (files.get(s["expected_output"]) or {}).get("bytes", 0),
            "sha256": (files.get(s["expected_output"]) or {}).get("sha256"),
            "evidence": (files.get(s["expected_output"]) or {}).get("evidence_line"),
        }
        for s in steps
    }
    # read as state holds them (plain strings, each equal to its member)
    status = state.get("status") or Status.RUNNING.value
    stop_reason = state.get("stop_reason")
    issues = open_issues(files)
    if not issues and (stop := _stop_issue(state, status)) is not None:
        issues = [stop]
    return {
        "status": status,
        "stop_reason": stop_reason,
        # accepted by a human: a success, never a convergence
        "converged": status == Status.SUCCESS
        and stop_reason != StopReason.ACCEPTED_BY_HUMAN
        and all(is_done(s, files) for s in steps),
        "final_answer": _final_answer(state) if status == Status.SUCCESS else None,
        "artifacts": artifacts,
        "open_issues": issues,
        "rounds": int(state.get("step") or 0),
        "plan_version": int(plan.get("version") or 0),
        "usage": dict(state.get("usage") or {}),
        "thread_id": thread_id,
        "escalation": state.get("escalation"),
        "message": _message(state, status),
    }
