"""A human's answer to an escalation: free text, or an action that acts (seed 000).

See docs/architecture.md, escalate.

The escalation offers its suggested responses as choices a UI can render as buttons, each a
``label`` and the ``value`` to resume with. A resume value is one of those values or free
text: ``{"action": "answer", "text": ...}`` (the planner takes it in), ``{"action":
"accept"}`` (finish now with the artifacts as they are), ``{"action": "stop"}`` (finish,
nothing more runs), ``{"action": "continue", "budget": {...}}`` (a fresh budget for the
turn, and go on). A plain string is an answer; nothing (None, blank) is no answer; an
unknown action or a malformed budget is a ``ConfigError`` that leaves the thread paused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.budget import BUDGET_FIELDS
from agent.errors import ConfigError

__all__ = ["Answer", "Choice", "choices", "parse_answer"]

Action = Literal["answer", "accept", "stop", "continue"]
Choice = dict[str, Any]
"""``{"label": str, "value": {"action": ..., ...}}``: one button of an escalation."""

# what the rules' suggested responses mean (the rest are answers with their own text)
_ACTIONS: dict[str, Action] = {
    "accept the artifacts as they are": "accept",
    "stop here": "stop",
    "continue with a higher budget": "continue",
}


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
        action = _ACTIONS.get(label.strip().lower(), "answer")
        value: dict[str, Any] = {"action": action}
        if action == "answer":
            value["text"] = label
        out.append({"label": label, "value": value})
    return out


def parse_answer(value: Any) -> Answer | None:
    """The resume value as an :class:`Answer`; None when it says nothing (pause again)."""
    if value is None:
        return None
    if isinstance(value, str):
        return Answer("answer", value) if value.strip() else None
    if isinstance(value, Mapping):
        if "value" in value and isinstance(value["value"], Mapping):  # a whole choice sent back
            return parse_answer(value["value"])
        action = value.get("action", "answer")
        if action == "answer":
            return parse_answer(str(value.get("text") or ""))
        if action in ("accept", "stop"):
            return Answer(action)
        if action == "continue":
            return Answer("continue", budget=_budget(value.get("budget")))
        msg = f"unknown action {action!r}; expected one of answer, accept, stop, continue"
        raise ConfigError(msg)
    return Answer("answer", str(value))  # a number or the like: its text, for the planner


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
