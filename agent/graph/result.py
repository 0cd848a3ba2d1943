"""The ``Result`` a caller gets when a run stops, derived from the thread's state."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

from agent.plan.progress import is_done
from agent.vocabulary import FileStatus, Status, StopReason


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


def _final_answer(state: Mapping[str, Any]) -> str | None:
    decisions = state.get("decisions") or []
    if decisions and decisions[-1].get("final_answer"):
        return decisions[-1]["final_answer"]
    return None


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
    return {
        "status": status,
        "stop_reason": stop_reason,
        # accepted by a human: a success, never a convergence
        "converged": status == Status.SUCCESS
        and stop_reason != StopReason.ACCEPTED_BY_HUMAN
        and all(is_done(s, files) for s in steps),
        "final_answer": _final_answer(state) if status == Status.SUCCESS else None,
        "artifacts": artifacts,
        "open_issues": open_issues(files),
        "rounds": int(state.get("step") or 0),
        "plan_version": int(plan.get("version") or 0),
        "usage": dict(state.get("usage") or {}),
        "thread_id": thread_id,
        "escalation": state.get("escalation"),
    }
