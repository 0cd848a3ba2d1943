"""Progress as ``stream_mode="custom"`` events: a step started, a check ran, reflection
decided, the run paused. Chat front ends and ``graph.stream(..., stream_mode="custom")``
callers get them as they happen, one small dict each, with an ``event`` name.

Outside a run (a node called in a unit test) or when nobody streams ``custom``, they go
nowhere. The builders are pure, so what each event holds is tested without a graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["check_event", "decision_event", "emit", "plan_event", "step_event"]


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
    return {
        "event": "decision",
        "round": entry.get("round"),
        "decision": entry.get("decision"),
        "by": entry.get("by"),
        "reason": entry.get("reason"),
        "depth": entry.get("depth"),
        "forced": bool(entry.get("forced")),
    }
