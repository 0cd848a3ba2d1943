"""A check as a prompt shows it: what it asserts, never the program that asserts it.

A subagent drafting an artifact is told its check: a typed check of what the goal states
(:mod:`agent.checks.stated`) as its data, a ``python`` check the evidence floor wrote
before checks were typed as what it ``stated``, the parts of an ``all`` one per line, and
JSON Schema keywords of our own in words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent.checks.stated import shown_stated
from agent.checks.text import schema_in_words

__all__ = ["checks_listed", "shown_check"]

_NOT_SHOWN = ("kind", "floor", "origin")  # what a part's listing leaves out besides its kind


def shown_check(spec: Any) -> Any:
    """``spec`` as a prompt shows it: a typed check as what it asserts, a stated-examples
    ``python`` check of an older plan as its ``stated``, the parts of an ``all`` alike."""
    if not isinstance(spec, Mapping):
        return spec
    if spec.get("kind") == "all" and isinstance(spec.get("checks"), list):
        return {"kind": "all", "checks": [shown_check(p) for p in spec["checks"]]}
    if (typed := shown_stated(spec)) is not None:
        return typed
    stated = spec.get("stated")
    if spec.get("kind") == "python" and isinstance(stated, dict):
        return {"kind": "python", "runs": True, **stated}
    return {k: v for k, v in spec.items() if k != "origin"}


def checks_listed(spec: Any) -> str:
    """``spec`` as :func:`shown_check` shows it, one line per part (``- json_schema:
    {"schema": …}``), with no ``{"kind": "all", "checks": …}`` around it: asked for a program
    printing ``deploy.json``, the 1.5B printed the check's own JSON on two runs of five; a
    JSON Schema's keywords of our own are said in words below it
    (:func:`agent.checks.text.schema_in_words`)."""
    shown = shown_check(spec)
    parts = shown["checks"] if isinstance(shown, dict) and shown.get("kind") == "all" else [shown]
    lines = []
    for part in parts:
        if not isinstance(part, dict):
            lines.append(f"- rubric: {part}")
            continue
        rest = {k: v for k, v in part.items() if k not in _NOT_SHOWN}
        said: list[str] = []
        if part.get("kind") == "json_schema" and "schema" in rest:
            rest["schema"], said = schema_in_words(rest["schema"])
        lines.append(f"- {part.get('kind')}" + (f": {json.dumps(rest)}" if rest else ""))
        lines += [f"  - {sentence}" for sentence in said]
    return "\n".join(lines)
