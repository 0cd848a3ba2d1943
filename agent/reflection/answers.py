"""A human's answer to an escalation: free text, or an action that acts.

See docs/architecture.md, escalate.

The escalation offers its suggested responses as choices a UI can render as buttons, each a
``label`` and the ``value`` to resume with. A resume value is one of those values or free
text: ``{"action": "answer", "text": ...}`` (the planner takes it in), ``{"action":
"accept"}`` (finish now with the artifacts as they are), ``{"action": "stop"}`` (finish,
nothing more runs), ``{"action": "continue", "budget": {...}}`` (a fresh budget for the
turn, and go on). A plain string is an answer, unless it is an offered choice's label or
its action's name (case, spacing and end punctuation aside): then it is that choice;
nothing (None, blank) is no answer; an unknown action or a malformed budget is a
``ConfigError`` that leaves the thread paused.

The interrupt also carries the question in the human-in-the-loop shape agent-chat-ui draws
as a card (:func:`review_request`): one ``escalation`` action whose ``approve`` accepts and
whose ``reject`` carries the human's words, read like typed text. Its decisions
(``{"decisions": [{"type": "approve"}]}``, ``{"decisions": [{"type": "reject", "message":
...}]}``) and the older agent inbox's responses (``[{"type": "accept" | "ignore" |
"response", "args": ...}]``) are understood here too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.errors import ConfigError
from agent.prompts import render
from agent.reflection.budget import BUDGET_FIELDS
from agent.vfs.quoting import code_span, screen_text
from agent.vocabulary import AnswerAction

__all__ = [
    "ESCALATION_ACTION",
    "Answer",
    "Choice",
    "choices",
    "labels_text",
    "offered",
    "parse_answer",
    "review_request",
    "screened_label",
    "typed_choice",
]

Action = AnswerAction
Choice = dict[str, Any]
"""``{"label": str, "value": {"action": ..., ...}}``: one button of an escalation."""

# what the rules' suggested responses mean (the rest are answers with their own text)
_ACTIONS: dict[str, Action] = {
    "accept the artifacts as they are": AnswerAction.ACCEPT,
    "stop here": AnswerAction.STOP,
    "continue with a higher budget": AnswerAction.CONTINUE,
}
# always offered, whatever the rule suggested: the design's accept and stop
_ALWAYS: tuple[Choice, ...] = (
    {"label": "accept the artifacts as they are", "value": {"action": "accept"}},
    {"label": "stop here", "value": {"action": "stop"}},
)
ESCALATION_ACTION = "escalation"
"""The name of the one action an escalation's review request asks about."""
REVIEW_DECISIONS = ("approve", "reject")
MAX_LISTED = 10  # artifacts shown in the card; the rest are counted
LABEL_CHARS = 400  # a label as a screen shows it (at most 120 characters before escaping)
_EDGE = " \t\n.!?;:,\"'`"


@dataclass(frozen=True)
class Answer:
    """A resume value, understood."""

    action: Action
    text: str = ""
    budget: dict[str, Any] = field(default_factory=dict)


def choices(suggested: Sequence[str | Mapping[str, Any]]) -> list[Choice]:
    """The escalation's suggested responses as labelled choices with their resume values."""
    out: list[Choice] = []
    for item in suggested:
        if isinstance(item, Mapping) and "label" in item and "value" in item:
            out.append({"label": str(item["label"]), "value": dict(item["value"])})
            continue
        label = str(item)
        action = _ACTIONS.get(label.strip().lower(), AnswerAction.ANSWER)
        value: dict[str, Any] = {"action": action.value}  # plain data: it goes into state
        if action == "answer":
            value["text"] = label
        out.append({"label": label, "value": value})
    return out


def offered(suggested: Sequence[str | Mapping[str, Any]] | None) -> list[Choice]:
    """The suggested responses, then accept and stop unless one of them already does that."""
    listed = choices(suggested or [])
    actions = {_action_of(c) for c in listed}
    return listed + [dict(c) for c in _ALWAYS if c["value"]["action"] not in actions]


def _normal(text: str) -> str:
    """Text as compared with a label: case, runs of spaces and end punctuation aside."""
    return " ".join(text.split()).casefold().strip(_EDGE)


def screened_label(label: str) -> str:
    """A choice's label as the interrupt shows it (``agent.reflection.on_screen``): escaped
    for markdown, so a client that sends it back as typed still names the choice."""
    return screen_text(label, LABEL_CHARS)


def _action_of(choice: Mapping[str, Any]) -> str:
    value = choice.get("value")
    return str(value.get("action", "answer")) if isinstance(value, Mapping) else "answer"


def typed_choice(
    text: str, suggested: Sequence[str | Mapping[str, Any]] | None
) -> Mapping[str, Any] | None:
    """The resume value of the offered choice ``text`` names, or None: its label, or the
    name of its action ("stop", "accept", "continue") when that action is offered."""
    said = _normal(text)
    if not said:
        return None
    listed = offered(suggested)
    for choice in listed:
        if said in (_normal(choice["label"]), _normal(screened_label(choice["label"]))):
            return dict(choice["value"])
    for choice in listed:
        if _action_of(choice) != "answer" and _action_of(choice) == said:
            return dict(choice["value"])
    return None


def parse_answer(
    value: Any, suggested: Sequence[str | Mapping[str, Any]] | None = None
) -> Answer | None:
    """The resume value as an :class:`Answer`; None when it says nothing (pause again).

    ``suggested``: the escalation's suggested responses, so that text naming one of them (or
    accept or stop, always offered), typed or sent as a rejection's reason, acts as that
    choice; without them text is an answer."""
    if value is None:
        return None
    if isinstance(value, str):
        if suggested is not None and (chosen := typed_choice(value, suggested)) is not None:
            return parse_answer(chosen)
        return Answer(AnswerAction.ANSWER, value) if value.strip() else None
    if isinstance(value, list):  # agent-chat-ui's decisions or the agent inbox's responses
        return parse_answer(_only(value), suggested)
    if isinstance(value, Mapping):
        if "value" in value and isinstance(value["value"], Mapping):  # a whole choice sent back
            return parse_answer(value["value"])
        if "decisions" in value:
            decisions = value["decisions"]
            if not isinstance(decisions, list):
                msg = f"decisions must be a list such as [{{'type': 'approve'}}], not {decisions!r}"
                raise ConfigError(msg)
            return parse_answer(_only(decisions), suggested)
        if "type" in value and "action" not in value:
            return _review_decision(value, suggested)
        action = value.get("action", "answer")
        if action == "answer":  # its text as it is, even if it reads like a label
            text = str(value.get("text") or "")
            return Answer(AnswerAction.ANSWER, text) if text.strip() else None
        if action in (AnswerAction.ACCEPT, AnswerAction.STOP):
            return Answer(AnswerAction(action))
        if action == "continue":
            return Answer(AnswerAction.CONTINUE, budget=_budget(value.get("budget")))
        msg = f"unknown action {action!r}; expected one of answer, accept, stop, continue"
        raise ConfigError(msg)
    return Answer(
        AnswerAction.ANSWER, str(value)
    )  # a number or the like: its text, for the planner


def _only(items: list[Any]) -> Any:
    """The one decision an escalation's review request asks for."""
    if len(items) != 1:
        msg = f"an escalation takes one decision, got {len(items)}"
        raise ConfigError(msg)
    return items[0]


def _review_decision(
    value: Mapping[str, Any], suggested: Sequence[str | Mapping[str, Any]] | None
) -> Answer | None:
    """A button of the review card: approve accepts; reject's reason (the older inbox's
    response text) is read as typed text, and without a reason it asks again; the older
    inbox's ignore stops. Edit is not offered: there is no action to edit."""
    kind = value.get("type")
    if kind in ("approve", "accept"):
        return Answer(AnswerAction.ACCEPT)
    if kind == "ignore":
        return Answer(AnswerAction.STOP)
    if kind in ("reject", "response"):
        said = value.get("message") if kind == "reject" else value.get("args")
        return parse_answer(said if isinstance(said, str) else "", suggested)
    msg = (
        f"decision {kind!r} does not answer an escalation; expected approve (accept the "
        "artifacts) or reject with your answer as its message"
    )
    raise ConfigError(msg)


def review_request(escalation: Mapping[str, Any]) -> dict[str, Any]:
    """The escalation as LangChain's human-in-the-loop request, which agent-chat-ui draws as
    a card with buttons: one ``escalation`` action showing the question, the artifacts and
    the choices; approve accepts, reject's reason answers (a choice's label acts)."""
    question = str(escalation.get("question") or "")
    artifacts = _listed(
        [str(p) for p in escalation.get("artifacts_ready_for_review") or []]
    ) or _text("escalation_no_artifacts")
    typed = [
        c["label"]
        for c in offered(escalation.get("suggested_responses"))
        if _action_of(c) != "accept"
    ]
    reject = _text("escalation_reject", choices=_listed(typed))
    approve = _text("escalation_approve")
    description = _text(
        "escalation_description",
        question=question,
        artifacts=artifacts,
        approve=approve,
        reject=reject,
    )
    args = {
        "question": question,
        "artifacts_ready_for_review": artifacts,
        "approve": approve,
        "reject": reject,
    }
    return {
        "action_requests": [{"name": ESCALATION_ACTION, "args": args, "description": description}],
        "review_configs": [
            {"action_name": ESCALATION_ACTION, "allowed_decisions": list(REVIEW_DECISIONS)}
        ],
    }


def labels_text(suggested: Sequence[str | Mapping[str, Any]] | None, *, always: bool = True) -> str:
    """The labels a human may type, as a literal markdown list: the suggested responses, and
    with ``always`` accept and stop too."""
    listed = offered(suggested) if always else choices(suggested or [])
    return _listed([c["label"] for c in listed])


def _text(name: str, **values: object) -> str:
    return render(name, **values).strip()


def _listed(items: Sequence[str]) -> str:
    """A short markdown list, each item shown literally (an artifact's path or a label may
    hold markdown of its own, e.g. a link)."""
    lines = [f"- {code_span(item)}" for item in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        lines.append(f"- … {len(items) - MAX_LISTED} more")
    return "\n".join(lines)


def _budget(value: Any) -> dict[str, Any]:
    """The budgets a ``continue`` raises for the turn: known names, positive finite numbers."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        msg = f"budget must be an object such as {{'token_budget': 500000}}, not {value!r}"
        raise ConfigError(msg)
    unknown = sorted(set(value) - set(BUDGET_FIELDS))
    if unknown:
        msg = f"unknown budget {unknown[0]!r}; budgets are {', '.join(BUDGET_FIELDS)}"
        raise ConfigError(msg)
    for name, number in value.items():
        ok = isinstance(number, int | float) and not isinstance(number, bool)
        if not ok or not 0 < number < math.inf:
            msg = f"budget {name} must be a positive number, not {number!r}"
            raise ConfigError(msg)
    return dict(value)
