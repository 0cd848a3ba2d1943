"""What an escalation holds: the forced decisions that escalate from outside reflection's
rules (tool calls awaiting approval, an invalid plan, an unexpected model error), the
payload a decision escalates with, and the state a thread keeps while it waits."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage

import agent.reflection.rules as rules
from agent.graph.inputs import StateView, plan_version, thread_id
from agent.graph.result import build_result
from agent.prompts import render
from agent.reflection.answers import labels_text, review_request
from agent.reflection.situation import Situation
from agent.tools.approvals import approval_payload, pending_requests
from agent.vfs.quoting import quote_data, screen_text
from agent.vocabulary import Decision, Status, StopReason

__all__ = [
    "approval_decision",
    "escalation_of",
    "invalid_plan",
    "model_unavailable",
    "paused",
    "question_first",
    "unknown_error",
]


def approval_decision(requests: Sequence[Mapping[str, Any]]) -> rules.Decision:
    """Pause on every pending tool-call request at once (``agent.tools.approvals``)."""
    payload = approval_payload(requests)
    return rules.Decision(
        Decision.ESCALATE,
        payload["question"],
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.AWAITING_APPROVAL,
        question=payload["question"],
    )


def invalid_plan(errors: list[str]) -> rules.Decision:
    """docs/architecture.md: an invalid plan is retried once with its errors, then escalated."""
    shown = "; ".join(errors)
    return rules.Decision(
        Decision.ESCALATE,
        "invalid_plan: " + quote_data("errors", shown, 400),
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.INVALID_PLAN,
        question="The planner could not produce a valid plan after one retry ("
        + quote_data("errors", shown, 300)
        + "). Can you clarify or narrow the goal?",
        suggested_responses=["narrow the goal to: <goal>", "stop here"],
    )


def question_first(sentence: str) -> rules.Decision:
    """The goal tells the agent to ask the user before the work (the ``question`` of its
    criteria, quoting the goal: ``agent.plan.criteria``): pause on it before the plan
    runs, so no step guesses the answer."""
    quoted = quote_data("goal", sentence, 300)
    return rules.Decision(
        Decision.ESCALATE,
        "question_first: " + quoted,
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.QUESTION_FIRST,
        question=render("escalation_question_first", sentence=quoted).strip(),
        suggested_responses=["stop here"],
    )


def unknown_error(role: str, evidence: str) -> rules.Decision:
    """A model error of no known class: keep the evidence and ask a human whether to retry."""
    shown = quote_data("error", evidence, 300)
    question = f"The {role} model failed with an unexpected error ({shown}). Retry?"
    return _retry_model(role, evidence, StopReason.UNKNOWN_ERROR, question)


def model_unavailable(role: str, evidence: str, server: str | None = None) -> rules.Decision:
    """A model that kept failing with transient errors through every retry: the thread
    pauses with the error in the chat, and a human retries once the provider is back.
    ``server``: the server no connection reached, when that is what failed (its URL and the
    variable that set it), so the question says where to look."""
    shown = quote_data("error", evidence, 300)
    question = (
        f"The {role} model kept failing after every retry ({shown}); the provider may be "
        "down or rate-limited. Retry once it is back?"
    )
    if server:
        question = (
            f"The {role} model could not be reached: nothing answered at {server} ({shown}). "
            "Start the server or correct the address, then retry?"
        )
    return _retry_model(role, evidence, StopReason.MODEL_UNAVAILABLE, question)


def _retry_model(
    role: str, evidence: str, stop_reason: StopReason, question: str
) -> rules.Decision:
    """Pause on a model that failed, offering a retry: of reflection, the turn continues
    (nothing is planned again); of the planner, "retry" is its answer, so it is asked again."""
    retry: str | dict[str, Any] = "retry"
    if role == "reflection":
        retry = {"label": "retry", "value": {"action": "continue"}}
    return rules.Decision(
        Decision.ESCALATE,
        evidence,
        forced=True,
        counts_depth=False,
        stop_reason=stop_reason,
        question=question,
        suggested_responses=[retry, "stop here"],
    )


def escalation_of(d: rules.Decision, s: Situation, state: StateView) -> dict[str, Any]:
    """The ``escalation`` an escalating decision stores: tool-call requests in LangChain's
    HITL shape, any other question as a review card (approve accepts, reject's reason
    answers)."""
    payload = rules.escalation_payload(d, s)
    if d.stop_reason == StopReason.AWAITING_APPROVAL:
        return payload | approval_payload(
            pending_requests(state.get("approvals"), plan_version(state))
        )
    return payload | review_request(payload)


QUESTION_CHARS = 2000
"""A pause's question as the chat shows it, at most."""


def paused(state: StateView, payload: dict[str, Any]) -> dict[str, Any]:
    """What a thread holds while it waits for a human: the escalation, its status, the
    question as an AI message and the ``Result`` (written before ``escalate`` pauses, since a
    node that calls ``interrupt()`` writes nothing until it is resumed)."""
    # every label a human may type, each shown literally (a label may hold markdown)
    always = payload.get("kind") != "approval"
    labels = labels_text(payload.get("suggested_responses"), always=always)
    # the question quotes evidence the artifact wrote: shown as text, never as markup
    question = screen_text(payload.get("question") or "How should I proceed?", QUESTION_CHARS)
    text = question + (f"\n{labels}" if labels else "")
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    # each pause a message of its own, after the human's words (a chat UI draws the question's
    # card under the last one); the same id when a node re-runs, so a replay adds nothing
    pause = len(state.get("decisions") or []) + 1
    update: dict[str, Any] = {
        "escalation": payload,
        "status": payload.get("status", Status.AWAITING_INPUT.value),
        "stop_reason": payload.get("stop_reason"),
        "messages": [AIMessage(text, id=f"escalation-{pause}-{digest}")],
    }
    return update | {"result": build_result({**state, **update}, thread_id())}
