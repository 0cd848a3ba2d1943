"""Where each node may go, and the one place a decision becomes a ``Command``.

The destinations are declared once, as the ``Literal`` each choosing node returns; the
graph's wiring reads its ``destinations`` from the same types, so the drawing shows every
edge the code can take."""

from __future__ import annotations

from typing import Any, Literal, get_args

from langgraph.types import Command

import agent.reflection.rules as rules
from agent.context import Context
from agent.events import decision_event, emit, progress_message, told
from agent.graph.dispatch import send_ready
from agent.graph.inputs import StateView
from agent.graph.pauses import escalation_of, paused
from agent.graph.updates import combined, with_update
from agent.reflection.situation import Situation, situation_from_state
from agent.vocabulary import Decision, Status

__all__ = [
    "ESCALATE_DESTINATIONS",
    "ESCALATE_ROUTE",
    "PLANNER_DESTINATIONS",
    "REFLECTION_DESTINATIONS",
    "ROUTE",
    "EscalateRoute",
    "PlannerRoute",
    "ReflectionRoute",
    "command_for",
]

PlannerRoute = Literal["subagent", "reflection", "escalate", "finalize"]
ReflectionRoute = Literal["planner", "subagent", "escalate", "finalize"]
EscalateRoute = Literal["planner", "finalize"]
PLANNER_DESTINATIONS: tuple[PlannerRoute, ...] = get_args(PlannerRoute)
REFLECTION_DESTINATIONS: tuple[ReflectionRoute, ...] = get_args(ReflectionRoute)
ESCALATE_DESTINATIONS: tuple[EscalateRoute, ...] = get_args(EscalateRoute)

# where each decision leads: the one table both reflection and forced escalations use
ROUTE: dict[Decision, ReflectionRoute] = {
    Decision.CONTINUE: "planner",
    Decision.REPLAN: "planner",
    Decision.END: "finalize",
    Decision.ESCALATE: "escalate",
    Decision.FAIL: "finalize",
}
# where a human's answer leads, by its action
ESCALATE_ROUTE: dict[str, EscalateRoute] = {
    "answer": "planner",
    "continue": "planner",
    "accept": "finalize",
    "stop": "finalize",
}


def command_for(
    d: rules.Decision,
    state: StateView,
    ctx: Context,
    update: dict[str, Any],
    *,
    situation: Situation | None = None,
) -> Command[ReflectionRoute]:
    """The one place a decision becomes an update and a destination, for reflection and
    for escalations decided elsewhere (an invalid plan, a model error). A ``continue``
    sends the plan's ready steps to subagents itself; with none ready it goes to the
    planner, as a resume does."""
    s = situation or situation_from_state(state, ctx)
    entry = rules.log_entry(d, s)
    if d.final_answer:
        entry["final_answer"] = d.final_answer
    update = update | {"decisions": [entry], "reflection_depth": entry["depth"]}
    event = decision_event(entry)
    emit(event)
    if ctx.chat_progress:  # before the pause's message: the question stays the last one
        told_id = f"progress-decision-{len(state.get('decisions') or []) + 1}"
        decision_told = told(state.get("messages") or [], [progress_message(event, told_id)])
        update = combined(update, {"messages": decision_told})
    decision = Decision(d.decision)
    if decision is Decision.ESCALATE:
        update = combined(update, paused(state, escalation_of(d, s, state)))
    elif decision is Decision.FAIL:
        update |= {"status": Status.FAILED.value, "stop_reason": entry.get("stop_reason")}
    elif decision is Decision.REPLAN:
        update["plan_request"] = {"reason": d.reason, "answer": ""}
    elif decision is Decision.CONTINUE:
        # the plan stands: its ready steps go out from here, with no planner superstep
        if (sent := send_ready(with_update(state, update), ctx, update)) is not None:
            return sent
    return Command(goto=ROUTE[decision], update=update)
