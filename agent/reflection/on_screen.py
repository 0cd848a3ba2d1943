"""The escalation as a screen shows it: the ``interrupt()`` value a chat UI draws.

The escalation a thread keeps (``escalation`` in state) is data for programs and the
terminal: its question, reason and labels are each one clean line (no control, escape or
bidi code). A chat UI (agent-chat-ui, Studio) renders the interrupt's text as markdown, and
that text quotes what an artifact or a model wrote. So the interrupt carries a copy in
which every text a UI shows as prose went through :func:`agent.vfs.quoting.screen_text`
(no live link or image, no tag, emphasis or heading), while what a UI sends back or a
program reads as data (a choice's value, paths, ids, the arguments an edit form starts
from) is kept as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent.reflection.answers import choices, review_request, screened_label
from agent.vfs.quoting import screen_text

__all__ = ["SCREEN_CHARS", "on_screen"]

SCREEN_CHARS = 2000
"""The longest question, reason or description a screen shows (escaped, marker included)."""
_PROSE = ("question", "reason")


def on_screen(escalation: Mapping[str, Any]) -> dict[str, Any]:
    """The ``interrupt()`` value of ``escalation``: its prose screened, its data as it is.

    A question's review card (``action_requests``) is drawn again from the screened
    question (its artifact paths and labels are literal code spans already); a tool-call
    approval shows its requests' descriptions screened, and their arguments screened unless
    they may be edited.
    """
    shown = dict(escalation)
    for key in _PROSE:
        if isinstance(shown.get(key), str):
            shown[key] = screen_text(shown[key], SCREEN_CHARS)
    if shown.get("kind") == "approval":
        editable = {
            config.get("action_name"): "edit" in (config.get("allowed_decisions") or ())
            for config in shown.get("review_configs") or []
            if isinstance(config, Mapping)
        }
        shown["action_requests"] = [
            _described(request, editable) for request in shown.get("action_requests") or []
        ]
    else:
        shown |= review_request({**escalation, "question": shown.get("question") or ""})
    if isinstance(shown.get("suggested_responses"), list):
        shown["suggested_responses"] = _labelled(shown["suggested_responses"])
    return shown


def _described(request: Any, editable: Mapping[Any, bool]) -> Any:
    """A tool call under approval as the card shows it: its description screened, and its
    arguments too when they cannot be edited (they are then only shown, as markdown; an
    edit form shows them as plain text, and starts from them, so they stay exact)."""
    if not isinstance(request, Mapping):
        return request
    shown = dict(request)
    if isinstance(shown.get("description"), str):
        shown["description"] = screen_text(shown["description"], SCREEN_CHARS)
    if not editable.get(shown.get("name"), True) and isinstance(shown.get("args"), Mapping):
        shown["args"] = {key: _shown_value(value) for key, value in shown["args"].items()}
    return shown


def _shown_value(value: Any) -> Any:
    """An argument as a card shows it: numbers and truth values as they are, text screened,
    anything else as its JSON text screened (a string inside would render as markdown)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return screen_text(text, SCREEN_CHARS)


def _labelled(suggested: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"label": screened_label(choice["label"]), "value": choice["value"]}
        for choice in choices(suggested)
    ]
