"""The ``finalize`` node: the run's last AI message (``agent.graph.final``) and its
``Result`` (``agent.graph.result``) in state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from agent.graph.final import final_message
from agent.graph.inputs import StateView, thread_id
from agent.graph.result import build_result
from agent.vocabulary import FileStatus, Status, StopReason

__all__ = ["failure_fix", "finalize"]


def finalize(state: StateView) -> dict[str, Any]:
    """The final answer as an AI message and the ``Result`` in state."""
    last = (state.get("decisions") or [{}])[-1]
    files, plan = state.get("files") or {}, state.get("plan")
    update: dict[str, Any] = {"dispatch": []}
    if state.get("status") == Status.FAILED:
        text = f"The run failed ({state.get('stop_reason')}): {last.get('reason', '')}".strip()
        if fix := failure_fix(state, last):
            text += f"\n\n{fix}"
        update["messages"] = [AIMessage(text)]
    elif state.get("stop_reason") == StopReason.ACCEPTED_BY_HUMAN:
        done = [p for p, e in files.items() if e.get("status") == FileStatus.DONE]
        text = "Accepted as they are." + (
            f" Artifacts done: {', '.join(sorted(done))}." if done else ""
        )
        update["messages"] = [AIMessage(final_message(text, plan, files))]
    else:
        answer = final_message(last.get("final_answer") or "Done.", plan, files)
        update |= {
            "status": Status.SUCCESS.value,
            "stop_reason": StopReason.END.value,
            "messages": [AIMessage(answer)],
        }
    return update | {"result": build_result({**state, **update}, thread_id())}


def failure_fix(state: StateView, decision: Mapping[str, Any]) -> str:
    """How to fix what failed the run, when it is known: on the failing decision, or on the
    error event of the step it names (a subagent whose model could not be made)."""
    if decision.get("fix"):
        return str(decision["fix"])
    reason = str(decision.get("reason") or "")
    for event in reversed(state.get("trajectory") or []):
        named = reason.startswith(f"step {event.get('step_id')}: ")
        if event.get("action") == "error" and event.get("fix") and named:
            return str(event["fix"])
    return ""
