"""A dataclass field's declared type at run time: resolved from the annotations, matched
against a value, and named in words when the value does not fit (Studio, the SDK and
``Context(**dict)`` pass values through unchecked, so ``Context.validate`` asks here)."""

from __future__ import annotations

import math
import types
from dataclasses import fields
from functools import cache
from typing import TYPE_CHECKING, Any, TypeGuard, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["field_types", "is_int", "type_problem"]

_KIND = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}


@cache
def field_types(cls: type[DataclassInstance]) -> dict[str, Any]:
    """Each field's declared type, resolved from the annotations (``str | None``, ...)."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (``True`` is an int to Python, not a count to us)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _matches(value: object, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return is_int(value)
    if kind is float:  # an int is a fine number of seconds; nan and inf are not
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, kind)


def type_problem(value: object, hint: Any) -> str | None:
    """What ``value`` should have been for a field declared ``hint``, or None if it fits."""
    optional = get_origin(hint) in (Union, types.UnionType)
    kinds = [k for k in get_args(hint) if k is not type(None)] if optional else [hint]
    if (optional and value is None) or any(_matches(value, kind) for kind in kinds):
        return None
    expected = " or ".join(_KIND.get(kind, kind.__name__) for kind in kinds)
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    return f"{expected}{' or None' if optional else ''}, got {shown} ({type(value).__name__})"
