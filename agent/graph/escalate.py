"""The ``escalate`` node: pause with the escalation as the ``interrupt()`` payload (Studio,
agent-chat-ui and the SDKs show it, its prose screened: ``agent.reflection.on_screen``);
resumed, act on the human's answer. Whoever routes
here has already written the escalation (``agent.graph.pauses``), since a node that
interrupts writes nothing until it is resumed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Command, interrupt

from agent.errors import ConfigError
from agent.graph.inputs import StateView, plan_version
from agent.graph.routes import ESCALATE_ROUTE, EscalateRoute
from agent.graph.turn import acted_on
from agent.reflection.answers import Answer, parse_answer, typed_choice
from agent.reflection.on_screen import on_screen
from agent.tools.approvals import decided, pending_requests, read_decisions
from agent.vocabulary import Status

__all__ = ["escalate"]


def escalate(state: StateView) -> Command[EscalateRoute]:
    """Pause on the question and act on the answer; no answer pauses again, no model called."""
    payload = dict(state.get("escalation") or {})
    if payload.get("kind") == "approval":
        return _decide_requests(state, payload)
    shown = on_screen(payload)  # a chat UI renders its text as markdown
    suggested = payload.get("suggested_responses") or []
    answer = _usable(interrupt(shown), suggested)
    while answer is None:
        answer = _usable(interrupt(shown), suggested)
    return Command(goto=ESCALATE_ROUTE[answer.action], update=acted_on(answer, state))


def _decide_requests(state: StateView, payload: Mapping[str, Any]) -> Command[EscalateRoute]:
    """Resumed on pending tool calls: record the decisions and run the waiting steps again
    (their approved calls run; rejected ones tell the model why). ``{"action": "stop"}``
    stops the run; anything that decides nothing asks again."""
    requests = pending_requests(state.get("approvals"), plan_version(state))
    shown = on_screen(payload)
    while True:
        value = interrupt(shown)
        if isinstance(value, str):  # a choice's label: "approve all", "stop here"
            value = typed_choice(value, payload.get("suggested_responses")) or value
        stop = _usable(value) if isinstance(value, Mapping) and "action" in value else None
        if stop is not None and stop.action in ("stop", "accept"):
            return Command(goto="finalize", update=acted_on(stop, state))
        decisions = read_decisions(value, requests)
        if decisions is not None:
            break
    update = {
        "approvals": decided(requests, decisions),
        "escalation": None,
        "status": Status.RUNNING.value,
    }
    return Command(goto="planner", update=update | {"stop_reason": None})


def _usable(value: Any, suggested: Any = None) -> Answer | None:
    """The resume value as an answer, or None to pause again. An unknown action pauses
    again too: LangGraph replays resume values, so raising here would replay the error on
    every later resume and the thread could never be answered (``agent.resume`` refuses such
    a value before it is sent, with the error)."""
    try:
        return parse_answer(value, suggested)
    except ConfigError:
        return None
