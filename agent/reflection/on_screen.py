"""The escalation as a screen shows it: the ``interrupt()`` value a chat UI draws.

The escalation a thread keeps (``escalation`` in state) is data for programs and the
terminal: its question, reason and labels are each one clean line (no control, escape or
bidi code). A chat UI (agent-chat-ui, Studio) renders the interrupt's text as markdown, and
that text quotes what an artifact or a model wrote. So the interrupt carries a copy in
which every text a UI shows as prose went through :func:`agent.vfs.quoting.screen_text`
(no live link or image, no tag, emphasis or heading), while what a UI sends back or a
program reads as data (a choice's value, paths, ids, a tool call's arguments) is kept as
it is.
"""

from __future__ import annotations

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
    approval keeps its requests' arguments, which are the edit form's starting values,
    and shows their descriptions screened.
    """
    shown = dict(escalation)
    for key in _PROSE:
        if isinstance(shown.get(key), str):
            shown[key] = screen_text(shown[key], SCREEN_CHARS)
    if shown.get("kind") == "approval":
        shown["action_requests"] = [
            _described(request) for request in shown.get("action_requests") or []
        ]
    else:
        shown |= review_request({**escalation, "question": shown.get("question") or ""})
    if isinstance(shown.get("suggested_responses"), list):
        shown["suggested_responses"] = _labelled(shown["suggested_responses"])
    return shown


def _described(request: Any) -> Any:
    if not isinstance(request, Mapping) or not isinstance(request.get("description"), str):
        return request
    return {**request, "description": screen_text(request["description"], SCREEN_CHARS)}


def _labelled(suggested: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"label": screened_label(choice["label"]), "value": choice["value"]}
        for choice in choices(suggested)
    ]
