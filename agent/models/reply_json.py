"""JSON read out of a model's reply text, repaired where a slip has a single reading.

Small and local models often write their structured answer in the reply's text (prose, a
code fence, a slightly malformed object) instead of a tool call. Pure: no model is called
here; :func:`agent.models.reply_schema.parse_structured` validates what is found.

What :func:`json_from_text` accepts, in this order of preference:

1. the whole reply as JSON;
2. the contents of a Markdown code fence (```` ```json ````, ```` ``` ````, any tag) that
   opens with JSON;
3. the first balanced ``{...}`` (then ``[...]``) anywhere in the reply, prose around it
   ignored, that parses.

Each candidate is parsed strictly first, then leniently. The lenient pass repairs only
what small models commonly get wrong and what has a single reading: trailing commas
(``{"a": 1,}``), control characters inside strings (a raw newline in code), escapes JSON
does not know (``\\'``), and an object left open at the very end of the reply (a dropped
final ``}``; pass ``repair=False`` when the reply is known to have been cut at its token
limit, where closing it would pass off a truncated answer as whole). Python literals
(single quotes, ``True``/``None``) are read with :func:`ast.literal_eval`, which evaluates
nothing. Anything else is not JSON and yields None.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TEXT", "json_candidates", "json_from_text", "json_values", "loads_json"]

# Bounds against adversarial or runaway replies: the scan is quadratic at worst.
MAX_TEXT = 200_000
MAX_STARTS = 400
MAX_SCAN = 2_000_000

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)
_CLOSER = {"{": "}", "[": "]"}
_VALID_ESCAPES = set('"\\/bfnrtu')


def json_values(text: str, *, repair: bool = True) -> Iterator[tuple[int, Any]]:
    """Every top-level JSON object or array found in ``text``, as ``(offset, value)``.

    Balanced ``{...}``/``[...]`` spans are tried left to right; a span that parses is
    yielded and skipped over, one that does not is retried from its next opening bracket
    (so a valid object nested in broken text is still found). The work is bounded
    (``MAX_STARTS`` openings, ``MAX_SCAN`` characters scanned in all). Never raises."""
    if not isinstance(text, str):
        return
    text = text[:MAX_TEXT]
    budget = MAX_SCAN
    starts = 0
    i = _next_open(text, 0)
    while i != -1 and starts < MAX_STARTS and budget > 0:
        starts += 1
        span = _span(text, i, repair=repair)
        budget -= span.end - i
        value, ok = None, False
        if span.balanced:
            value, ok = loads_json(text[i : span.end], repair=repair)
            budget -= (span.end - i) if not ok and repair else 0
        elif span.fixed is not None:
            value, ok = loads_json(span.fixed, repair=True)
            budget -= len(span.fixed)
            ok = ok and bool(value)  # "{" alone is no answer
        if ok and isinstance(value, dict | list):
            yield i, value
            i = _next_open(text, span.end)
        else:
            i = _next_open(text, i + 1)


def json_from_text(text: str, *, repair: bool = True) -> Any | None:
    """The JSON object a reply holds (failing any object, the first array), or None.

    Preference: the whole text, then each code fence's contents, then the first balanced
    span in the text that parses (see the module's docstring for what is repaired)."""
    try:
        first_list: list[Any] | None = None
        for value in json_candidates(text, repair=repair):
            if isinstance(value, dict):
                return value
            if isinstance(value, list) and first_list is None:
                first_list = value
        return first_list
    except Exception:  # pragma: no cover - a parser must never take the caller down
        return None


def json_candidates(text: str, *, repair: bool) -> Iterator[Any]:
    """Every JSON value ``text`` holds, in :func:`json_from_text`'s order of preference."""
    if not isinstance(text, str) or not text.strip():
        return
    text = text[:MAX_TEXT]
    value, ok = loads_json(text.strip(), repair=False)
    if ok:
        yield value
    for match in _FENCE.finditer(text):
        # only a fence that opens with JSON: a fence inside a JSON string (code in a file's
        # content) cuts that JSON short, and a fragment of it is no answer
        body = match.group(2).strip()
        if body[:1] in ("{", "["):
            for offset, value in json_values(body, repair=repair):
                if offset == 0:
                    yield value
                break
    for _, value in json_values(text, repair=repair):
        yield value


def _next_open(text: str, start: int) -> int:
    """The next ``{`` or ``[`` at or after ``start``; -1 when none."""
    brace = text.find("{", start)
    bracket = text.find("[", start)
    found = [p for p in (brace, bracket) if p != -1]
    return min(found) if found else -1


@dataclass(frozen=True)
class _Span:
    end: int  # the index after the span
    balanced: bool  # text[start:end] closes every bracket it opens, in order
    fixed: str | None = None  # (repair) the span with the closers it lacks put in


def _span(text: str, start: int, *, repair: bool) -> _Span:
    """The span of the bracket opened at ``start``, up to the bracket that closes it.

    With ``repair``, two slips get a candidate with the missing closers put in: a closer
    that skips an open bracket (``[{"a": 1]``: the ``}`` is missing before the ``]``) and
    a text that ends, outside any string, with brackets still open. A text that ends
    inside a string, or a closer that matches nothing open, cannot be repaired."""
    stack: list[str] = []
    pieces: list[str] = []  # (repair) the span so far, with insertions
    last = start
    in_string = False
    escaped = False
    for j in range(start, len(text)):
        c = text[j]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in _CLOSER:
            stack.append(_CLOSER[c])
        elif c in "}]":
            if stack and stack[-1] != c and repair and c in stack:
                pieces.append(text[last:j])
                last = j
                while stack[-1] != c:
                    pieces.append(stack.pop())
            if not stack or stack[-1] != c:
                return _Span(j + 1, balanced=False)
            stack.pop()
            if not stack:
                if not pieces:
                    return _Span(j + 1, balanced=True)
                return _Span(j + 1, balanced=False, fixed="".join(pieces) + text[last : j + 1])
    if in_string or not repair:
        return _Span(len(text), balanced=False)
    return _Span(
        len(text), balanced=False, fixed="".join(pieces) + text[last:] + "".join(reversed(stack))
    )


def loads_json(candidate: str, *, repair: bool) -> tuple[Any, bool]:
    """``(value, True)`` when ``candidate`` reads as JSON (or, leniently, as a Python
    literal); ``(None, False)`` otherwise."""
    try:
        return json.loads(candidate), True
    except (ValueError, RecursionError):
        pass
    if not repair:
        return None, False
    fixed = _repaired(candidate)
    try:
        return json.loads(fixed, strict=False), True
    except (ValueError, RecursionError):
        pass
    if len(candidate) > 20_000:
        return None, False
    try:
        value = ast.literal_eval(candidate)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, False
    value = _jsonable(value)
    return (value, True) if isinstance(value, dict | list) else (None, False)


def _repaired(candidate: str) -> str:
    """``candidate`` with trailing commas dropped and unknown escapes in strings made
    literal backslashes; strings are otherwise left exactly as written."""
    out: list[str] = []
    in_string = False
    i = 0
    n = len(candidate)
    while i < n:
        c = candidate[i]
        if in_string:
            if c == "\\":
                nxt = candidate[i + 1] if i + 1 < n else ""
                if nxt in _VALID_ESCAPES and nxt:
                    out.append(c + nxt)
                    i += 2
                    continue
                if nxt == "'":  # \' is Python's, not JSON's
                    out.append("'")
                    i += 2
                    continue
                out.append("\\\\")
                i += 1
                continue
            if c == '"':
                in_string = False
            out.append(c)
        elif c == '"':
            in_string = True
            out.append(c)
        elif c == ",":
            k = i + 1
            while k < n and candidate[k] in " \t\r\n":
                k += 1
            if k < n and candidate[k] in "}]":
                i += 1  # a trailing comma
                continue
            out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _jsonable(value: Any) -> Any:
    """A Python literal as JSON would have it (tuples and sets become lists); None when
    it holds something JSON cannot (bytes, complex numbers, non-string keys)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                return None
            out[k] = _jsonable(v)
            if out[k] is None and v is not None:
                return None
        return out
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        if any(i is None and v is not None for i, v in zip(items, value, strict=True)):
            return None
        return items
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return None
