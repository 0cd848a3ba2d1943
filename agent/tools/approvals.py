"""Approvals bound to their parameters: which tool calls wait for a human, the approval's
identity, the question the thread pauses on, and reading the human's decisions.

``interrupt_on={"send_email": True, "run_migration": {"allowed_decisions": ["approve",
"reject"]}}`` makes a subagent stop before those tools run. Its request is kept in the
``approvals`` state key; reflection pauses the thread on every pending request at once (one
``interrupt()``, so parallel steps' requests are answered together from any chat UI), and
the step runs again once they are decided, its earlier model answers replayed, not asked
again (``agent.controller.replay``).

An approval's id hashes the plan version, the step (its action, instructions and artifact),
the call's position among identical calls and the tool with its exact arguments: changed
arguments, a replan that changes the step or a new plan version make a new id, so the old
decision no longer applies and the human is asked again.

The payload follows LangChain's human-in-the-loop middleware (``action_requests`` and
``review_configs``); the answer is ``{"decisions": [...]}`` in the same order, each
``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name": ..., "args": {...}}}``
or ``{"type": "reject", "message": "why"}``; also accepted: one decision (or "approve" /
"reject") for every request, a mapping of request ids to decisions, and agent-chat-ui's
``[{"type": "accept" | "edit" | "response" | "ignore", "args": ...}]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from agent.errors import ConfigError
from agent.store.journal import canonical, key_material
from agent.vocabulary import ApprovalStatus, Status, StopReason

__all__ = [
    "DECISIONS",
    "InterruptOn",
    "approval_id",
    "approval_payload",
    "decided",
    "interrupt_config",
    "pending_requests",
    "read_decisions",
    "unknown_outcome_id",
]

InterruptOn = Mapping[str, bool | Mapping[str, Any]]
DECISIONS = ("approve", "edit", "reject")
UNKNOWN_OUTCOME_DECISIONS = ("approve", "reject", "done")
"""For a call whose outcome is unknown: run it again, do not, or it happened (its result in
``message``)."""


def interrupt_config(interrupt_on: InterruptOn | None) -> dict[str, dict[str, Any]]:
    """``interrupt_on`` checked and normalised: tool name to ``{"allowed_decisions",
    "description"}``; ``False`` entries dropped."""
    if interrupt_on is None:
        return {}
    if not isinstance(interrupt_on, Mapping):
        msg = "interrupt_on must map tool names to True or {'allowed_decisions': [...]}"
        raise ConfigError(msg)
    config: dict[str, dict[str, Any]] = {}
    for name, spec in interrupt_on.items():
        if not isinstance(name, str) or not name:
            msg = f"interrupt_on: tool names must be non-empty strings, got {name!r}"
            raise ConfigError(msg)
        if spec is False:
            continue
        if spec is True:
            spec = {}
        if not isinstance(spec, Mapping):
            msg = f"interrupt_on[{name!r}] must be True, False or a mapping, got {spec!r}"
            raise ConfigError(msg)
        unknown = sorted(set(spec) - {"allowed_decisions", "description"})
        if unknown:
            msg = f"interrupt_on[{name!r}]: unknown option(s) {', '.join(unknown)}"
            raise ConfigError(msg)
        allowed = list(spec.get("allowed_decisions") or DECISIONS)
        if bad := [d for d in allowed if d not in DECISIONS]:
            msg = f"interrupt_on[{name!r}]: unknown decision(s) {bad}; expected {DECISIONS}"
            raise ConfigError(msg)
        config[name] = {"allowed_decisions": allowed, "description": spec.get("description")}
    return config


def step_fingerprint(step: Mapping[str, Any]) -> str:
    """What makes a step the same step: a replan that changes any of it is another step."""
    fields = {k: step.get(k) for k in ("step_id", "action", "instructions", "expected_output")}
    return canonical(fields)


def approval_id(
    step: Mapping[str, Any], plan_version: int, occurrence: int, name: str, args: Any
) -> str:
    """The id of the approval of one call (see the module docstring)."""
    text = key_material(
        str(plan_version), step_fingerprint(step), str(occurrence), name, canonical(args)
    )
    return "ap-" + hashlib.sha256(text).hexdigest()[:24]


def unknown_outcome_id(call_key: str) -> str:
    """The id of the question about a call whose outcome is unknown: one per call key."""
    return "uo-" + hashlib.sha256(call_key.encode()).hexdigest()[:24]


def pending_requests(
    approvals: Mapping[str, Mapping[str, Any]] | None, plan_version: int | None = None
) -> list[dict[str, Any]]:
    """Requests still waiting for a decision, oldest first; with ``plan_version``, only those
    of that plan (a new plan makes the older ones moot: its steps ask again if they must)."""
    waiting = [
        dict(a)
        for a in (approvals or {}).values()
        if a
        and a.get("status") == ApprovalStatus.PENDING
        and (plan_version is None or a.get("plan_version") == plan_version)
    ]
    return sorted(waiting, key=lambda a: (a.get("asked_at", 0), a.get("id", "")))


def _description(request: Mapping[str, Any]) -> str:
    if request.get("kind") == "unknown_outcome":
        return (
            f"Step {request.get('step_id')} called {request.get('tool')} (idempotency key "
            f"{request.get('call_key')}) and its outcome is unknown: {request.get('reason')}. "
            "Approve to run it again with the same key, reject to skip it, or answer "
            '{"type": "done", "message": "<its result>"} if it did happen.'
        )
    text = request.get("description") or "Tool call waiting for approval"
    return f"{text} (step {request.get('step_id')})"


def approval_payload(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``interrupt()`` payload that asks for every pending request at once: LangChain's
    human-in-the-loop shape plus the fields every deepreflect escalation carries."""
    actions = [
        {
            "id": r["id"],
            "name": r["tool"],
            "args": r["args"],
            "description": _description(r),
            "step_id": r.get("step_id"),
            "kind": r.get("kind", "approval"),
            **({"idempotency_key": r["call_key"]} if r.get("call_key") else {}),
        }
        for r in requests
    ]
    configs = [
        {
            "action_name": r["tool"],
            "allowed_decisions": list(r.get("allowed_decisions") or DECISIONS),
        }
        for r in requests
    ]
    names = ", ".join(f"{a['name']} (step {a['step_id']})" for a in actions)
    unknown = any(r.get("kind") == "unknown_outcome" for r in requests)
    question = (
        f"A tool call's outcome is unknown and needs your decision: {names}."
        if unknown
        else f"Approve, edit or reject these tool calls before they run: {names}."
    )
    return {
        "kind": "approval",
        "question": question,
        "action_requests": actions,
        "review_configs": configs,
        "suggested_responses": [
            {"label": "approve all", "value": {"decisions": [{"type": "approve"}] * len(actions)}},
            {"label": "reject all", "value": {"decisions": [{"type": "reject"}] * len(actions)}},
        ],
        "stop_reason": StopReason.AWAITING_APPROVAL.value,  # plain strings: it is kept in state
        "status": Status.AWAITING_INPUT.value,
    }


_CHAT_UI = {"accept": "approve", "ignore": "reject", "response": "reject", "edit": "edit"}


def _one(value: Any, request: Mapping[str, Any]) -> dict[str, Any] | None:
    """One decision in our shape, or None when ``value`` is not one for ``request``."""
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, Mapping):
        return None
    kind = value.get("type")
    if kind in _CHAT_UI and kind not in DECISIONS:  # agent-chat-ui's HumanResponse
        if kind == "response":
            value = {"type": "reject", "message": str(value.get("args") or "")}
        else:
            value = {"type": _CHAT_UI[kind]}
        kind = value["type"]
    if kind == "edit" and "edited_action" not in value and isinstance(value.get("args"), Mapping):
        edited = value["args"]  # agent-chat-ui: {"action": name, "args": {...}}
        value = {"type": "edit", "edited_action": {"name": edited.get("action"), **edited}}
    allowed = request.get("allowed_decisions") or DECISIONS
    if kind not in allowed:
        return None
    decision: dict[str, Any] = {"type": kind}
    if kind == "edit":
        action = value.get("edited_action")
        args = action.get("args") if isinstance(action, Mapping) else None
        if not isinstance(args, Mapping):
            return None
        name = action.get("name") if isinstance(action, Mapping) else None
        if name not in (None, request.get("tool")):
            return None  # an edit may change the arguments, never the tool
        decision["args"] = dict(args)
    if kind in ("reject", "done"):
        decision["message"] = str(value.get("message") or "")
    return decision


def read_decisions(
    value: Any, requests: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]] | None:
    """The human's decision for every request, by request id; None when ``value`` does not
    decide them all validly (the thread then asks again, losing nothing)."""
    if not requests:
        return {}
    if isinstance(value, list) and len(value) == 1 and len(requests) > 1:
        value = value[0]  # one agent-chat-ui response for every request
    if isinstance(value, list):
        items: list[Any] = value
    elif isinstance(value, Mapping) and isinstance(value.get("decisions"), list):
        items = value["decisions"]
    elif isinstance(value, Mapping) and all(r["id"] in value for r in requests):
        items = [value[r["id"]] for r in requests]
    else:
        items = [value] * len(requests)  # one decision for every request
    if len(items) != len(requests):  # {"decisions": [...]} names one per request, in order
        return None
    decisions: dict[str, dict[str, Any]] = {}
    for item, request in zip(items, requests, strict=True):
        decision = _one(item, request)
        if decision is None:
            return None
        decisions[request["id"]] = decision
    return decisions


def decisions_problem(value: Any, requests: Sequence[Mapping[str, Any]]) -> str | None:
    """Why ``value`` does not answer ``requests`` (for a clear error before resuming)."""
    if read_decisions(value, requests) is not None:
        return None
    shown = [f"{r['tool']} ({'/'.join(r.get('allowed_decisions') or DECISIONS)})" for r in requests]
    return (
        f"the thread waits for decisions on {len(requests)} tool call(s): {', '.join(shown)}; "
        'answer {"decisions": [{"type": "approve"}, ...]} in that order'
    )


def decided(
    requests: Sequence[Mapping[str, Any]], decisions: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The ``approvals`` update recording each decision on its request."""
    update: dict[str, dict[str, Any]] = {}
    for request in requests:
        decision = decisions.get(request["id"])
        if decision is not None:
            update[request["id"]] = {
                **request,
                "status": ApprovalStatus.DECIDED.value,
                "decision": dict(decision),
            }
    return update
