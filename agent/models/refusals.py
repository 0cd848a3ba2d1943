"""Which request shape a server refused, read from its error text: the method
``structured_output="auto"`` tried next depends on it."""

from __future__ import annotations

import re

__all__ = ["refusal_of"]

_REFUSED = re.compile(r"\b(400|422|unsupported|not supported|invalid|must be|unknown)\b", re.I)


def refusal_of(reason: str) -> str | None:
    """What a server's error text says it refused: ``"tool_choice"``, ``"response_format"``
    (json_schema / json mode) or ``"tools"``; None when it is no refusal of a request
    shape (a timeout, a reply without a usable answer, a validation error).

    llama.cpp's server, for one, answers a ``tool_choice`` object with HTTP 400 "type must
    be string, but is object"."""
    if not isinstance(reason, str) or not _REFUSED.search(reason):
        return None
    low = reason.lower()
    if "tool_choice" in low or "type must be string" in low:
        return "tool_choice"
    if "response_format" in low or "json_schema" in low or "json schema" in low:
        return "response_format"
    if re.search(r"\btools?\b", low) or "function" in low:
        return "tools"
    return None
