"""A reply's JSON validated against a schema, and what was wrong with it, written for a
retry prompt (field by field), when none of its JSON validates."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agent.models.reply_json import json_candidates, loads_json

__all__ = ["parse_structured"]

MAX_ERROR = 1_200
"""Characters of validation error a retry prompt quotes at most."""


def parse_structured(
    text: str, schema: type[BaseModel], *, repair: bool = True
) -> tuple[BaseModel | None, str]:
    """The reply's JSON validated as ``schema``: ``(object, "")``, or ``(None, error)``
    with an error written for a retry prompt (what was wrong, field by field).

    Every JSON object in the reply is a candidate, in the order of preference of
    :func:`~agent.models.reply_json.json_from_text`; the first that validates wins. A
    candidate wrapped the way small models wrap answers is unwrapped: a tool call written
    as text (``{"name": "<Schema>", "arguments": {...}}``, arguments possibly a JSON
    string) and a single key naming the schema (``{"Plan": {...}}``). When none validates,
    the error is the closest candidate's (the one with the fewest errors)."""
    best: tuple[int, str] | None = None
    seen = 0
    try:
        for value in json_candidates(text, repair=repair):
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
        args, ok = loads_json(args, repair=True)
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
