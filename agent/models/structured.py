"""Structured answers from small and local models: JSON read out of reply text, validated
against a schema, and a per-model memory of which structured-output method works.

Pure: no model is called here. ``agent.models.factory`` asks a model for a structured answer; when
the reply carries no tool call (or no parsed JSON) it hands the reply's text to
:func:`parse_structured`, and with ``structured_output="auto"`` it asks
:class:`StructuredMethods` which method to use and tells it how each attempt went.

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
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

# Bounds against adversarial or runaway replies: the scan is quadratic at worst.
MAX_TEXT = 200_000
MAX_STARTS = 400
MAX_SCAN = 2_000_000
MAX_ERROR = 1_200

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)
_CLOSER = {"{": "}", "[": "]"}
_VALID_ESCAPES = set('"\\/bfnrtu')


# ------------------------------------------------------------------------ JSON in text


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
            value, ok = _loads(text[i : span.end], repair=repair)
            budget -= (span.end - i) if not ok and repair else 0
        elif span.fixed is not None:
            value, ok = _loads(span.fixed, repair=True)
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
        for value in _candidates(text, repair=repair):
            if isinstance(value, dict):
                return value
            if isinstance(value, list) and first_list is None:
                first_list = value
        return first_list
    except Exception:  # pragma: no cover - a parser must never take the caller down
        return None


def _candidates(text: str, *, repair: bool) -> Iterator[Any]:
    if not isinstance(text, str) or not text.strip():
        return
    text = text[:MAX_TEXT]
    value, ok = _loads(text.strip(), repair=False)
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


def _loads(candidate: str, *, repair: bool) -> tuple[Any, bool]:
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


# ------------------------------------------------------------------- schema validation


def parse_structured(
    text: str, schema: type[BaseModel], *, repair: bool = True
) -> tuple[BaseModel | None, str]:
    """The reply's JSON validated as ``schema``: ``(object, "")``, or ``(None, error)``
    with an error written for a retry prompt (what was wrong, field by field).

    Every JSON object in the reply is a candidate, in :func:`json_from_text`'s order; the
    first that validates wins. A candidate wrapped the way small models wrap answers is
    unwrapped: a tool call written as text (``{"name": "<Schema>", "arguments": {...}}``,
    arguments possibly a JSON string) and a single key naming the schema
    (``{"Plan": {...}}``). When none validates, the error is the closest candidate's (the
    one with the fewest errors)."""
    best: tuple[int, str] | None = None
    seen = 0
    try:
        for value in _candidates(text, repair=repair):
            for candidate in _unwrapped(value, schema.__name__):
                seen += 1
                try:
                    return schema.model_validate(candidate), ""
                except ValidationError as exc:
                    count = exc.error_count()
                    if best is None or count < best[0]:
                        best = (count, _validation_message(exc, schema))
    except Exception as exc:  # pragma: no cover - never take the caller down
        return None, f"the answer could not be read: {type(exc).__name__}"
    if best is not None:
        return None, best[1]
    if seen == 0 and isinstance(text, str) and text.strip():
        return None, (
            f"the answer holds no JSON object: reply with one JSON object matching the "
            f"{schema.__name__} schema and nothing else"
        )
    return None, f"the answer was empty: reply with one JSON object matching {schema.__name__}"


def _unwrapped(value: Any, name: str) -> Iterator[Any]:
    """``value`` itself, then what a wrapper around it holds."""
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict):
            yield from _unwrapped(value[0], name)
        return
    if not isinstance(value, dict):
        return
    yield value
    args = None
    if isinstance(value.get("name"), str) and value["name"].lower() == name.lower():
        args = value.get("arguments", value.get("parameters"))
    elif isinstance(value.get("function"), Mapping):
        inner = value["function"]
        if str(inner.get("name", "")).lower() == name.lower():
            args = inner.get("arguments", inner.get("parameters"))
    if isinstance(args, str):
        args, ok = _loads(args, repair=True)
        args = args if ok else None
    if isinstance(args, dict):
        yield args
    if len(value) == 1:
        ((key, inner_value),) = value.items()
        if key.lower() == name.lower() and isinstance(inner_value, dict):
            yield inner_value


def _validation_message(exc: ValidationError, schema: type[BaseModel]) -> str:
    lines = [f"the JSON does not match the {schema.__name__} schema:"]
    for error in exc.errors(include_url=False)[:12]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "(top level)"
        got = error.get("input")
        shown = ""
        if error.get("type") != "missing" and not isinstance(got, dict | list):
            shown = repr(got)
            shown = f" (got {shown[:60] + '…' if len(shown) > 60 else shown})"
        lines.append(f"- {where}: {error.get('msg', 'invalid')}{shown}")
    if exc.error_count() > 12:
        lines.append(f"- … and {exc.error_count() - 12} more")
    message = "\n".join(lines)
    return message if len(message) <= MAX_ERROR else message[: MAX_ERROR - 1] + "…"


# ----------------------------------------------------------- which method works, per model

FUNCTION_CALLING = "function_calling"
JSON_SCHEMA = "json_schema"
TEXT = "text"  # no constraint on the request: the JSON is read from the reply's text
METHODS: tuple[str, ...] = (FUNCTION_CALLING, JSON_SCHEMA, TEXT)

# ``tool_choice`` shapes, most forcing first: an object naming the function, the string
# "required", and none at all (the server's default, "auto").
TOOL_CHOICE_OBJECT = "object"
TOOL_CHOICE_REQUIRED = "required"
TOOL_CHOICES: tuple[str, ...] = (TOOL_CHOICE_OBJECT, TOOL_CHOICE_REQUIRED)

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


@dataclass
class _ModelMemory:
    order: list[str]
    refusals: dict[str, int] = field(default_factory=dict)  # method -> refused requests
    misses: dict[str, int] = field(default_factory=dict)  # method -> failures in a row
    dropped: set[str] = field(default_factory=set)
    tool_choice_refusals: dict[str, int] = field(default_factory=dict)
    last_success: str | None = None


class StructuredMethods:
    """Which structured-output method to use with each model, learnt as calls go
    (``structured_output="auto"``). Thread-safe; one instance is shared by a process.

    For a model key (``provider:name@endpoint``, any string) :meth:`order` gives the
    methods to try, best first: tool calling, then ``json_schema``, then text JSON. The
    caller tries them in turn and reports each outcome:

    - :meth:`record_success` puts the method first for that model from then on;
    - :meth:`record_failure` with the reason (the error text, or what was wrong with the
      reply). A refusal of the request shape (HTTP 400 about ``tools`` or
      ``response_format``, see :func:`refusal_of`) counted ``refusals_to_drop`` times
      drops the method for that model. Any other failure (no tool call, invalid JSON)
      ``misses_to_demote`` times in a row moves the method to the back. ``text`` needs
      nothing of the server and is never dropped.
    - A refusal of ``tool_choice`` counts against the shape that was sent, not the method:
      :meth:`tool_choice` never again returns a shape refused ``refusals_to_drop`` times
      ("object", then "required", then None: send no ``tool_choice``).
    """

    def __init__(
        self,
        methods: Sequence[str] = METHODS,
        *,
        refusals_to_drop: int = 2,
        misses_to_demote: int = 2,
    ) -> None:
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not methods:
            msg = f"unknown structured-output methods {unknown}; expected some of {METHODS}"
            raise ValueError(msg)
        self._methods = list(dict.fromkeys(methods))
        self._refusals_to_drop = max(1, refusals_to_drop)
        self._misses_to_demote = max(1, misses_to_demote)
        self._models: dict[str, _ModelMemory] = {}
        self._lock = threading.Lock()

    def _memory(self, model_key: str, first: Sequence[str] = ()) -> _ModelMemory:
        key = str(model_key)
        memory = self._models.get(key)
        if memory is None:
            lead = [m for m in first if m in self._methods]
            order = list(dict.fromkeys([*lead, *self._methods]))
            memory = self._models[key] = _ModelMemory(order=order)
        return memory

    def order(self, model_key: str, first: Sequence[str] = ()) -> list[str]:
        """The methods to try for ``model_key``, best first (never empty when ``text`` is
        among the methods). ``first``: the methods to start with for a model not seen yet
        (``json_schema`` where the server constrains decoding); what was learnt about a
        model seen before wins."""
        with self._lock:
            memory = self._memory(model_key, first)
            return [m for m in memory.order if m not in memory.dropped]

    def preferred(self, model_key: str) -> str:
        """The method to try first."""
        order = self.order(model_key)
        return order[0] if order else TEXT

    def record_success(self, model_key: str, method: str) -> None:
        """``method`` gave a valid answer: it goes first for this model."""
        self._check(method)
        with self._lock:
            memory = self._memory(model_key)
            memory.misses[method] = 0
            memory.dropped.discard(method)
            memory.order = [method, *(m for m in memory.order if m != method)]
            memory.last_success = method

    def record_failure(
        self, model_key: str, method: str, reason: str, *, tool_choice: str | None = None
    ) -> str:
        """``method`` failed for ``reason``; ``tool_choice`` is the shape that request sent
        (see :data:`TOOL_CHOICES`), if any. Returns what was concluded: ``"tool_choice"``
        (the refusal counted against the shape), ``"refused"`` (against the method),
        ``"dropped"`` (the method will not be tried again), ``"demoted"`` or ``"miss"``."""
        self._check(method)
        refusal = refusal_of(reason)
        with self._lock:
            memory = self._memory(model_key)
            if refusal == "tool_choice" and tool_choice in TOOL_CHOICES:
                counts = memory.tool_choice_refusals
                counts[tool_choice] = counts.get(tool_choice, 0) + 1
                return "tool_choice"
            if refusal is not None and method != TEXT:
                memory.refusals[method] = memory.refusals.get(method, 0) + 1
                if memory.refusals[method] >= self._refusals_to_drop:
                    memory.dropped.add(method)
                    return "dropped"
                return "refused"
            memory.misses[method] = memory.misses.get(method, 0) + 1
            if memory.misses[method] >= self._misses_to_demote and len(memory.order) > 1:
                memory.misses[method] = 0
                memory.order.remove(method)
                memory.order.append(method)
                if memory.last_success == method:
                    memory.last_success = None
                return "demoted"
            return "miss"

    def tool_choice(self, model_key: str, wanted: str | None = TOOL_CHOICE_OBJECT) -> str | None:
        """The ``tool_choice`` shape to send for a forced tool call: ``wanted`` unless the
        server refused it ``refusals_to_drop`` times, then the next less forcing one;
        None when every shape was refused (send no ``tool_choice``)."""
        if wanted is None:
            return None
        if wanted not in TOOL_CHOICES:
            msg = f"unknown tool_choice shape {wanted!r}; expected one of {TOOL_CHOICES}"
            raise ValueError(msg)
        with self._lock:
            counts = self._memory(model_key).tool_choice_refusals
            for shape in TOOL_CHOICES[TOOL_CHOICES.index(wanted) :]:
                if counts.get(shape, 0) < self._refusals_to_drop:
                    return shape
            return None

    def snapshot(self, model_key: str) -> dict[str, Any]:
        """What is remembered about ``model_key``, for logs and the trajectory."""
        with self._lock:
            memory = self._memory(model_key)
            return {
                "order": [m for m in memory.order if m not in memory.dropped],
                "dropped": sorted(memory.dropped),
                "refusals": dict(memory.refusals),
                "tool_choice_refusals": dict(memory.tool_choice_refusals),
                "last_success": memory.last_success,
            }

    def forget(self, model_key: str | None = None) -> None:
        """Forget one model (or all): a server restarted with other settings."""
        with self._lock:
            if model_key is None:
                self._models.clear()
            else:
                self._models.pop(str(model_key), None)

    def _check(self, method: str) -> None:
        if method not in self._methods:
            msg = f"unknown structured-output method {method!r}; expected one of {self._methods}"
            raise ValueError(msg)


__all__ = [
    "FUNCTION_CALLING",
    "JSON_SCHEMA",
    "METHODS",
    "TEXT",
    "TOOL_CHOICES",
    "TOOL_CHOICE_OBJECT",
    "TOOL_CHOICE_REQUIRED",
    "StructuredMethods",
    "json_from_text",
    "json_values",
    "parse_structured",
    "refusal_of",
]
