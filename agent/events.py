"""Progress as ``stream_mode="custom"`` events: a step started, a check ran, reflection
decided, the run paused. ``graph.stream(..., stream_mode="custom")`` callers get them as
they happen, one small dict each, with an ``event`` name.

Outside a run (a node called in a unit test) or when nobody streams ``custom``, they go
nowhere. The builders are pure, so what each event holds is tested without a graph.

The plan, each check and each decision are also told in the chat (:func:`progress_message`):
one short AI message each, kept in ``messages``, so every chat client (agent-chat-ui,
Studio, the SDKs) shows them and a reload still has them. They are tagged
(:func:`is_progress`) so nothing mistakes them for the answer or for the question of a
pause, and their ids are fixed by the event, so a node that runs again replaces them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.vfs.quoting import screen_text
from agent.vocabulary import Decision, StopReason

if TYPE_CHECKING:  # imported when a message is made: `deepreflect show` starts without it
    from langchain_core.messages import AIMessage

__all__ = [
    "PROGRESS_NAME",
    "check_event",
    "decision_event",
    "emit",
    "is_progress",
    "plan_event",
    "progress_message",
    "step_event",
    "told",
]

PROGRESS_NAME = "deepreflect-progress"
"""The ``name`` of every progress message."""
PROGRESS_KEY = "deepreflect"
"""Its ``additional_kwargs`` key: ``{"deepreflect": {"kind": "progress", "event": ...}}``."""
MAX_PROGRESS_CHARS = 600
"""A progress message is a line or a few, never a document."""
MAX_PLAN_LINES = 12
"""Steps listed in a plan message; the rest are counted."""
MAX_PROGRESS_MESSAGES = 20
"""Progress messages a thread keeps: the newest. ``messages`` is stored whole in every
checkpoint (it is not a delta channel), so an unbounded narration would make a long run's
storage grow with the square of its rounds; the full record stays in ``decisions`` and
``trajectory`` (``deepreflect show``)."""


def emit(event: Mapping[str, Any]) -> None:
    """Send ``event`` to the run's custom stream, if there is one."""
    from langgraph.config import get_stream_writer

    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a run
        return
    writer(dict(event))


def plan_event(plan: Mapping[str, Any]) -> dict[str, Any]:
    steps = plan.get("steps") or []
    return {
        "event": "plan",
        "version": int(plan.get("version") or 0),
        "steps": [
            {
                "step_id": s["step_id"],
                "action": s["action"],
                "expected_output": s["expected_output"],
            }
            for s in steps
        ],
    }


def step_event(step: Mapping[str, Any], round_no: int) -> dict[str, Any]:
    return {
        "event": "step_started",
        "step_id": step["step_id"],
        "action": step["action"],
        "expected_output": step["expected_output"],
        "round": round_no,
    }


def check_event(step_id: str, revision: int, report: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "event": "check",
        "step_id": step_id,
        "revision": revision,
        "kind": report.get("kind"),
        "passed": bool(report.get("passed")),
        "evidence": " ".join(str(report.get("evidence", "")).split())[:200],
    }


def decision_event(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Reflection's decision as it was logged (``decisions``), without the final answer."""
    event = {
        "event": "decision",
        "round": entry.get("round"),
        "decision": entry.get("decision"),
        "by": entry.get("by"),
        "reason": entry.get("reason"),
        "depth": entry.get("depth"),
        "forced": bool(entry.get("forced")),
    }
    if entry.get("stop_reason"):
        event["stop_reason"] = entry["stop_reason"]
    return event


def progress_message(event: Mapping[str, Any], message_id: str) -> AIMessage:
    """``event`` (a plan, check or decision event above) as a tagged, short AI message."""
    from langchain_core.messages import AIMessage

    text = _TEXT[str(event["event"])](event)
    if len(text) > MAX_PROGRESS_CHARS:
        text = text[: MAX_PROGRESS_CHARS - 1] + "…"
    tag = {"kind": "progress", "event": event["event"]}
    return AIMessage(text, id=message_id, name=PROGRESS_NAME, additional_kwargs={PROGRESS_KEY: tag})


def told(current: Sequence[Any], new: Sequence[AIMessage]) -> list[Any]:
    """The ``messages`` write that adds the progress messages ``new``: the oldest progress
    messages of ``current`` removed first, so at most ``MAX_PROGRESS_MESSAGES`` remain."""
    from langchain_core.messages import RemoveMessage

    kept = [m for m in current if is_progress(m) and _message_id(m)]
    fresh = {m.id for m in new}
    kept = [m for m in kept if _message_id(m) not in fresh]  # a re-run replaces its own
    excess = len(kept) + len(new) - MAX_PROGRESS_MESSAGES
    removed = [RemoveMessage(id=str(_message_id(m))) for m in kept[: max(0, excess)]]
    return [*removed, *new]


def _message_id(message: Any) -> Any:
    return message.get("id") if isinstance(message, Mapping) else getattr(message, "id", None)


def is_progress(message: Any) -> bool:
    """Whether ``message`` (a message object, or its dict from the SDK or a checkpoint
    read as JSON) is a progress message, not the conversation."""
    if isinstance(message, Mapping):
        kwargs = message.get("additional_kwargs") or {}
    else:
        kwargs = getattr(message, "additional_kwargs", None) or {}
    tag = kwargs.get(PROGRESS_KEY) if isinstance(kwargs, Mapping) else None
    return isinstance(tag, Mapping) and tag.get("kind") == "progress"


def _one_line(text: Any, limit: int) -> str:
    """Text a model or an artifact wrote, as the chat may show it (no markup, link or
    control code of its own: :func:`agent.vfs.quoting.screen_text`)."""
    return screen_text(text or "", max(limit, 16))


def _plan_text(event: Mapping[str, Any]) -> str:
    steps = list(event.get("steps") or [])
    lines = [
        f"- {_one_line(s['step_id'], 40)}: {_one_line(s['action'], 40)} → "
        f"{_one_line(s['expected_output'], 80)}"
        for s in steps[:MAX_PLAN_LINES]
    ]
    if len(steps) > MAX_PLAN_LINES:
        lines.append(f"- … and {len(steps) - MAX_PLAN_LINES} more")
    head = f"**Plan v{event.get('version')}**, {len(steps)} step(s):"
    return "\n".join([head, *lines])


def _check_text(event: Mapping[str, Any]) -> str:
    revision = int(event.get("revision") or 0)
    draft = "first draft" if revision == 0 else f"revision {revision}"
    verdict = "passed" if event.get("passed") else "failed"
    evidence = _one_line(event.get("evidence"), 200)
    return (
        f"**Check** {_one_line(event.get('step_id'), 40)}, {draft}: "
        f"{event.get('kind')} **{verdict}**" + (f" — {evidence}" if evidence else "")
    )


def _decision_text(event: Mapping[str, Any]) -> str:
    how = [f"by {event.get('by')}"] + (["forced"] if event.get("forced") else [])
    how.append(f"depth {event.get('depth')}")
    head = f"**Reflection**, round {event.get('round')}: {event.get('decision')} ({', '.join(how)})"
    if event.get("decision") == Decision.ESCALATE:
        # the question itself follows as the pause's own message; here only why
        why = event.get("stop_reason")
        return head + (f" — {why}" if why in set(StopReason) else "")
    reason = _one_line(event.get("reason"), 300)
    return head + (f" — {reason}" if reason else "")


_TEXT = {"plan": _plan_text, "check": _check_text, "decision": _decision_text}
