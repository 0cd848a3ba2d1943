"""Configuration defaults from the environment: ``DEEPREFLECT_<FIELD>`` sets a field left at
its default, so ``langgraph.json``'s ``env`` or a shell sets the served graph's and the CLI's
defaults. A value is parsed to the field's type; one that does not parse is kept as text, so
that ``Context.validate`` names the field and the variable."""

from __future__ import annotations

import os
from dataclasses import fields
from typing import TYPE_CHECKING, Any, get_args

from agent.field_types import field_types

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["ENV_PREFIX", "MCP_CONFIG_VAR", "apply_environment", "parsed", "variable"]

ENV_PREFIX = "DEEPREFLECT_"
MCP_CONFIG_VAR = ENV_PREFIX + "MCP_CONFIG"
"""The MCP config file whose servers' tools the subagents get (CLI and served graph)."""
_BOOLEANS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def variable(name: str) -> str:
    """The environment variable of the field ``name``: ``DEEPREFLECT_<NAME>``."""
    return ENV_PREFIX + name.upper()


def apply_environment(config: DataclassInstance) -> None:
    """Set each field of ``config`` still at its default from its variable, parsed to the
    field's type."""
    types = field_types(type(config))
    for f in fields(config):
        raw = os.environ.get(variable(f.name))
        if raw is None or getattr(config, f.name) != f.default:
            continue
        setattr(config, f.name, parsed(raw, types[f.name]))


def parsed(raw: str, hint: Any) -> Any:
    """``raw`` as a value of the type ``hint``; ``raw`` itself when it does not parse."""
    text = raw.strip()
    kinds = [k for k in get_args(hint) if k is not type(None)] or [hint]
    if type(None) in get_args(hint) and text.lower() in ("", "none", "null"):
        return None
    kind = kinds[0]
    try:
        if kind is bool:
            return _BOOLEANS[text.lower()]
        if kind in (int, float):
            return kind(text)
    except (KeyError, ValueError):
        return raw
    return text
