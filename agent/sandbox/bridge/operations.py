"""The operations a handle forwards to the artifact's process, where its own code answers them
(behaviour under test); what the check refuses (comparisons, truth, hashing, unary operators,
conversions) is not among them."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

BINARY = ("add sub mul truediv floordiv mod pow matmul lshift rshift and or xor").split()
UNARY = ("neg", "pos", "abs", "invert")
"""Unary operators: refused on a handle, never forwarded."""
APPLY: dict[str, Callable[..., Any]] = {
    "call": lambda f, /, *a, **k: f(*a, **k),
    "callable": lambda f, /: callable(f) and type(f).__call__ is not None,  # not `= None`
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "len": len,
    "iter": iter,
    "next": next,
    "repr": repr,
    "str": str,
    "format": format,
    **{
        name: getattr(operator, name if name not in ("and", "or") else name + "_")
        for name in BINARY
    },
}
