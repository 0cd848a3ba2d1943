"""What a node does when its model fails: a transient error is re-raised for the graph's
``RetryPolicy`` until its last attempt, which pauses the thread with the error (a chat keeps
it; a human retries); a permanent one fails the run (saying how to choose another model when
that is the fix), and one of no known class escalates with its evidence."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import Context
from agent.errors import ErrorClass, classify, describe, unreachable_server
from agent.graph.inputs import StateView
from agent.graph.pauses import model_unavailable, unknown_error
from agent.graph.routes import ReflectionRoute, command_for
from agent.graph.turn import failed
from agent.prompts import render
from agent.state import SubagentTask
from agent.vocabulary import StopReason

__all__ = ["last_attempt", "model_error_event", "model_failure", "model_fix"]

# a model error that choosing another model (or its key) fixes: the failure says how
MODEL_FIXES = (ErrorClass.PERMISSION_DENIED, ErrorClass.INVALID_INPUT)
PERMANENT = (ErrorClass.PERMISSION_DENIED, ErrorClass.POLICY_REJECTED, ErrorClass.INVALID_INPUT)


def model_fix(error_class: ErrorClass) -> str | None:
    """How to choose another model, when that is what fixes ``error_class``."""
    return render("model_error_fix").strip() if error_class in MODEL_FIXES else None


def last_attempt(runtime: Runtime[Any], attempts: int) -> bool:
    """Whether the running node is on its last try under the graph's ``RetryPolicy``
    (``attempts`` in all); outside a graph run, never."""
    info = getattr(runtime, "execution_info", None)
    return info is not None and info.node_attempt >= attempts


def model_failure(
    exc: Exception,
    role: str,
    state: StateView,
    ctx: Context,
    update: dict[str, Any],
    *,
    last: bool = False,
) -> Command[ReflectionRoute]:
    """Transient errors are re-raised for the RetryPolicy, and pause the thread on the
    ``last`` attempt; the rest stop or escalate."""
    error_class = classify(exc)
    evidence = f"{role} model: {describe(exc)}"
    if error_class is ErrorClass.TRANSIENT:
        if not last:
            raise exc
        paused = model_unavailable(role, evidence, unreachable_server(exc))
        return command_for(paused, state, ctx, update)
    if error_class in PERMANENT:
        failure = failed(StopReason(error_class.value), evidence)
        if fix := model_fix(error_class):  # the model or its key is wrong: say how to choose
            failure["decisions"][-1]["fix"] = fix
        return Command(goto="finalize", update=update | failure)
    return command_for(unknown_error(role, evidence), state, ctx, update)


def model_error_event(task: SubagentTask, exc: Exception) -> dict[str, Any]:
    """What a subagent records when its model cannot even be made; reflection fails the run
    on its class (``rule_fatal_error``), and the observation says how to choose another."""
    error_class = classify(exc)
    event = {
        "round": task["round"],
        "step_id": task["step"]["step_id"],
        "actor": task["step"]["action"],
        "action": "error",
        "error_class": error_class.value,
        "observation": f"{task['step']['action']} model: {describe(exc)}",
    }
    if fix := model_fix(error_class):
        event["fix"] = fix
    return event
