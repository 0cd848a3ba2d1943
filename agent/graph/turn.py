"""Taking in a turn: what a new invocation of a thread asks for, decided in one function.

A thread is invoked with a first goal, a human answer to a pending question, nothing (a
resume), or a follow-up request after a finished run. :func:`take_in` reads which one it is
and returns an :class:`Intake`: where the graph goes next and the state update that starts
the turn. Nothing here calls a model.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agent.context import Context
from agent.errors import ConfigError
from agent.models.factory import total_tokens
from agent.prompts import render
from agent.reflection.answers import Answer, parse_answer, typed_choice
from agent.state import CUT_KEY, MAX_GOAL_CHARS
from agent.tools.approvals import decided, pending_requests, read_decisions
from agent.vfs.origin import taken_in
from agent.vocabulary import Decision, Status, StopReason

__all__ = [
    "Intake",
    "acted_on",
    "config_failure",
    "failed",
    "goal_problem",
    "message_problem",
    "message_text",
    "new_human_message",
    "take_in",
]

TERMINAL = (Status.SUCCESS, Status.FAILED)
IntakeRoute = Literal["plan", "dispatch", "escalate", "finalize"]
"""``plan``: a (new) plan is needed; ``dispatch``: run the ready steps of the current one."""


@dataclass(frozen=True)
class Intake:
    """Where a new invocation goes, and what it writes on the way."""

    next: IntakeRoute
    update: dict[str, Any] = field(default_factory=dict)


def take_in(state: Mapping[str, Any], ctx: Context, *, now: float | None = None) -> Intake:
    """Decide what this invocation of the thread is, from its state and Context.

    Files a graph input sent (plain strings in ``files``) become user entries first, on
    every route, so nothing after the planner ever sees a raw one; refused, they are
    deleted and the turn fails (or, on a paused thread, it stays paused)."""
    given, problem = taken_in(state.get("files") or {}, int(state.get("step") or 0))
    if problem is not None:
        return _refused_files(state, given, problem)
    taken = _taken(state, ctx, now)
    if not given:
        return taken
    return Intake(taken.next, {**taken.update, "files": given})


def _refused_files(state: Mapping[str, Any], deleted: dict[str, Any], problem: str) -> Intake:
    """Refused files change nothing but their own removal; the message sent with them is
    taken in (so it does not run later without them)."""
    update: dict[str, Any] = {"files": deleted}
    if (human := new_human_message(state)) is not None:
        update["turn"] = {**(state.get("turn") or {}), "human_id": human.id}
    if state.get("escalation"):
        note = f"Those files were not accepted ({problem}); please send them again."
        return Intake("escalate", update | {"messages": [AIMessage(note)]})
    return Intake(
        "finalize", update | failed(StopReason.INVALID_INPUT, f"files refused: {problem}")
    )


def _taken(state: Mapping[str, Any], ctx: Context, now: float | None) -> Intake:
    if (failure := config_failure(ctx)) is not None:
        return Intake("finalize", failure)
    human = new_human_message(state)
    if state.get("escalation") and human is None:
        return Intake("escalate")  # resumed without an answer: pause again, no model
    # the answer to the goal's own question comes before any plan, and is not a new goal
    if not state.get("plan") and not _asked_first(state):  # None, or {} before the first plan
        return _first_goal(state, ctx, human, now)
    if human is not None:
        return _answer(state, ctx, human, now)
    if state.get("plan_request") is not None:
        return Intake("plan")  # reflection asked for a replan
    return Intake("dispatch")  # continue, or resumed with nothing new: run the ready steps


def _first_goal(
    state: Mapping[str, Any], ctx: Context, human: HumanMessage | None, now: float | None
) -> Intake:
    if human is not None:
        goal: Any = message_text(human)
        problem = message_problem(human)
    else:
        goal = state.get("goal")
        problem = goal_problem(goal)
    if problem:
        # nothing of a rejected goal is kept: a goal sent as `goal` is cleared, one sent as a
        # message is already a bounded placeholder (agent.state.bounded_messages)
        cleared = {"goal": ""} if human is None else {}
        return Intake("finalize", cleared | failed(StopReason.INVALID_INPUT, problem))
    update: dict[str, Any] = {}
    if human is None:
        human = HumanMessage(goal, id=str(uuid.uuid4()))
        update["messages"] = [human]
    update |= {"goal": goal, **new_turn(state, ctx, human, now)}
    return Intake("plan", update | {"plan_request": {"reason": "", "answer": ""}})


def _answer(
    state: Mapping[str, Any], ctx: Context, human: HumanMessage, now: float | None
) -> Intake:
    text = message_text(human)
    if problem := message_problem(human):
        if state.get("escalation"):  # keep the thread paused on its question; lose nothing
            turn = {**(state.get("turn") or {}), "human_id": human.id}
            note = AIMessage(f"That answer was not accepted ({problem}); please answer again.")
            return Intake("escalate", {"turn": turn, "messages": [note]})
        rejected = failed(StopReason.INVALID_INPUT, f"request rejected: {problem}")
        return Intake("finalize", rejected)
    if state.get("escalation"):
        chosen = _chosen(state, human, text)
        if isinstance(chosen, Intake):
            return chosen
        text = chosen
    update = new_turn(state, ctx, human, now)
    if state.get("status") in TERMINAL and not state.get("escalation"):
        update["goal"] = text  # a follow-up request after a finished run is a new goal
    elif _asked_first(state):
        # the answer completes the goal: every step, replan and reflection sees it (on the
        # 1.5B a replan rewrote the step's instructions without it, and a step guessed)
        answered = render("goal_answered", goal=state.get("goal", ""), answer=text.strip())
        update["goal"] = answered.strip()
    asked = (state.get("escalation") or {}).get("question", "")
    reason = f"the human answered the question {asked!r}" if asked else "a new request"
    return Intake("plan", update | {"plan_request": {"reason": reason, "answer": text}})


def _asked_first(state: Mapping[str, Any]) -> bool:
    """Whether the thread waits on a question about what the goal leaves open: its own
    question (``question_first``), or values and examples no source gave (``unverified``),
    whose answer completes the goal."""
    asked = (StopReason.QUESTION_FIRST, StopReason.UNVERIFIED)
    return state.get("stop_reason") in asked and bool(state.get("escalation"))


def _chosen(state: Mapping[str, Any], human: HumanMessage, text: str) -> Intake | str:
    """A message naming one of the escalation's choices acts as that choice, as its button
    would: the intake that does it, or the answer's text for the planner."""
    escalation = state.get("escalation") or {}
    value = typed_choice(text, escalation.get("suggested_responses"))
    if value is None:
        return text
    taken = {"turn": {**(state.get("turn") or {}), "human_id": human.id}}
    if escalation.get("kind") == "approval" and "decisions" in value:
        version = int((state.get("plan") or {}).get("version") or 0)
        requests = pending_requests(state.get("approvals"), version)
        decisions = read_decisions(value, requests)
        if decisions is None:
            return text
        update = {"approvals": decided(requests, decisions), "escalation": None}
        running = {"status": Status.RUNNING.value, "stop_reason": None}
        return Intake("dispatch", update | running | taken)
    try:
        answer = parse_answer(value)
    except ConfigError:  # a malformed suggested value: the words are an answer
        return text
    if answer is None or answer.action == "answer":
        return answer.text if answer else text
    acted = acted_on(answer, state)
    acted["turn"] = {**acted.get("turn", taken["turn"]), "human_id": human.id}
    return Intake("dispatch" if answer.action == "continue" else "finalize", acted)


def acted_on(answer: Answer, state: Mapping[str, Any]) -> dict[str, Any]:
    """The update an answer makes: a message for the planner, a finish, or a fresh budget."""
    done = {"escalation": None}
    if answer.action == "answer":
        return {"messages": [HumanMessage(answer.text, id=str(uuid.uuid4()))]}
    if answer.action == "accept":
        return done | {
            "status": Status.SUCCESS.value,
            "stop_reason": StopReason.ACCEPTED_BY_HUMAN.value,
        }
    if answer.action == "stop":
        return done | failed(StopReason.STOPPED_BY_HUMAN, "the human stopped the run")
    turn = {
        **(state.get("turn") or {}),
        "started_at": time.time(),
        "start_step": int(state.get("step") or 0),
        "start_tokens": total_tokens(state.get("usage")),
        "budget": answer.budget,  # raised budgets hold for this turn only
    }
    restarted = {"status": Status.RUNNING.value, "stop_reason": None, "reflection_depth": 0}
    return done | {"turn": turn} | restarted


def new_turn(
    state: Mapping[str, Any], ctx: Context, human: HumanMessage | None, now: float | None
) -> dict[str, Any]:
    """Budgets and depth count per user turn; a human answer starts a new one."""
    turn = {
        "started_at": time.time() if now is None else now,
        "start_step": int(state.get("step") or 0),
        "start_tokens": total_tokens(state.get("usage")),
        "human_id": human.id if human else None,
    }
    return {
        "turn": turn,
        "context": dataclasses.asdict(ctx),
        "reflection_depth": 0,
        "status": Status.RUNNING.value,
        "stop_reason": None,
        "escalation": None,
    }


def new_human_message(state: Mapping[str, Any]) -> HumanMessage | None:
    """The newest human message not yet taken in."""
    seen = (state.get("turn") or {}).get("human_id")
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            return None if message.id == seen else message
    return None


def goal_problem(goal: Any) -> str | None:
    """Why a goal cannot be planned, or None (invalid input is rejected, not retried)."""
    if not isinstance(goal, str) or not goal.strip():
        return "the goal is empty"
    if len(goal) > MAX_GOAL_CHARS:
        return f"the goal is {len(goal)} characters; the limit is {MAX_GOAL_CHARS}"
    if "\x00" in goal or sum(not (c.isprintable() or c.isspace()) for c in goal) > len(goal) // 20:
        return "the goal looks like binary data, not text"
    return None


def message_text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


def message_problem(message: BaseMessage) -> str | None:
    """Why a human message cannot be taken as a goal or an answer, or None. A message the
    ``messages`` reducer already cut to a placeholder is judged by its original size."""
    size = message.additional_kwargs.get(CUT_KEY)
    if isinstance(size, int):
        return f"the goal is {size} characters; the limit is {MAX_GOAL_CHARS}"
    return goal_problem(message_text(message))


def config_failure(ctx: Context) -> dict[str, Any] | None:
    """The update that fails the run on an invalid Context (every problem, each naming its
    field), or None. Every node that reads the Context's numbers checks it first."""
    if problems := ctx.validate():
        return failed(StopReason.INVALID_INPUT, "configuration: " + "; ".join(problems))
    return None


def failed(stop_reason: StopReason, reason: str) -> dict[str, Any]:
    """The update that ends the run ``failed`` with ``stop_reason``, logged as a decision
    (plain strings in state: a checkpoint stores an enum member as a Python object)."""
    return {
        "status": Status.FAILED.value,
        "stop_reason": stop_reason.value,
        "decisions": [
            {
                "round": None,
                "decision": Decision.FAIL.value,
                "reason": reason,
                "by": "rule",
                "forced": True,
                "stop_reason": stop_reason.value,
            }
        ],
    }
