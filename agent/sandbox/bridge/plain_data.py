"""Values on the link: plain data as tagged JSON arrays, rebuilt from its base type on arrival.

A ``str`` subclass whose ``__eq__`` is always true arrives as a plain ``str``: ``["n"]`` None,
``["b", x]`` bool, ``["i", hex]`` int, ``["f", repr]`` float, ``["j", re, im]`` complex,
``["s", x]`` str, ``["y", hex]`` bytes, ``["l"|"t"|"S"|"F", items]`` list/tuple/set/frozenset,
``["d", pairs]`` dict, ``["D", str]`` Decimal, ``["Q", num, den]`` Fraction, ``["T", kind,
iso]`` date, time, datetime, ``["R", d, s, us]`` timedelta, ``["B", name]`` a builtin type.
Every other value is each side's own business (``other``): a handle, a callback, a refusal.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from .wire import MAX_MESSAGE, BridgeError

MAX_DEPTH = 100
_PLAIN_SEQUENCES: dict[str, type] = {"l": list, "t": tuple, "S": set, "F": frozenset}
_REAL, _IMAG = complex.__dict__["real"], complex.__dict__["imag"]

Other = Callable[[Any, int], Any]
"""How one side encodes a value that is not plain data (a handle, a callback, or a refusal)."""


def encode_plain(value: Any, other: Other, depth: int = 0) -> Any:
    """Plain data as tagged JSON, read through its base type's own code (never an override)."""
    if depth > MAX_DEPTH:
        raise ValueError("a value nested too deeply to cross the sandbox boundary")
    nested = depth + 1
    kind = type(value)  # the real type: a ``__class__`` property cannot claim another
    if value is None:
        return ["n"]
    if issubclass(kind, bool):
        return ["b", value is True]
    if issubclass(kind, int):
        return ["i", int.__format__(value, "x")]  # hex: no digit limit either way
    if issubclass(kind, float):
        return ["f", float.__repr__(value)]
    if issubclass(kind, complex):
        real, imag = _REAL.__get__(value), _IMAG.__get__(value)
        return ["j", float.__repr__(real), float.__repr__(imag)]
    if issubclass(kind, str):
        return ["s", str.__str__(value)]
    if issubclass(kind, (bytes, bytearray)):
        return ["y", bytes(memoryview(value)).hex()]
    for tag, base in _PLAIN_SEQUENCES.items():
        if issubclass(kind, base):
            items = list(base.__iter__(value))  # type: ignore[attr-defined]
            return [tag, [encode_plain(item, other, nested) for item in items]]
    if issubclass(kind, dict):
        pairs = list(dict.items(value))
        return [
            "d",
            [[encode_plain(k, other, nested), encode_plain(v, other, nested)] for k, v in pairs],
        ]
    stdlib = _encode_stdlib(value)
    if stdlib is not None:
        return stdlib
    if (
        issubclass(kind, type)
        and getattr(builtins, type.__dict__["__name__"].__get__(value), None) is value
    ):
        return ["B", type.__dict__["__name__"].__get__(value)]
    return other(value, nested)


def _encode_stdlib(value: Any) -> list[Any] | None:
    """Exact Decimal, Fraction and datetime values, by their text or numbers."""
    module = type(value).__module__
    if module not in ("decimal", "_decimal", "fractions", "datetime", "_datetime"):
        return None
    import datetime
    import decimal
    import fractions

    kind = type(value)
    if kind is decimal.Decimal:
        return ["D", decimal.Decimal.__str__(value)]
    if kind is fractions.Fraction:
        return ["Q", int.__format__(value.numerator, "x"), int.__format__(value.denominator, "x")]
    if kind is datetime.timedelta:
        return ["R", value.days, value.seconds, value.microseconds]
    for name in ("datetime", "date", "time"):
        if kind is getattr(datetime, name):
            return ["T", name, kind.isoformat(value)]
    return None


Decode = Callable[[list[Any], int], Any]


def decode_plain(data: Any, other: Decode, depth: int = 0) -> Any:
    """Rebuild a tagged value from base types; ``other`` rebuilds (or refuses) the rest."""
    if depth > MAX_DEPTH or not isinstance(data, list) or not data:
        raise BridgeError("malformed value on the link")
    tag, nested = data[0], depth + 1
    try:
        if tag == "n":
            return None
        if tag == "b":
            return data[1] is True
        if tag == "i":
            return int(as_text(data[1]), 16)
        if tag == "f":
            return float(as_text(data[1]))
        if tag == "j":
            return complex(float(as_text(data[1])), float(as_text(data[2])))
        if tag == "s":
            return as_text(data[1])
        if tag == "y":
            return bytes.fromhex(as_text(data[1]))
        if tag in _PLAIN_SEQUENCES:
            items = [decode_plain(item, other, nested) for item in as_list(data[1])]
            return _PLAIN_SEQUENCES[tag](items)
        if tag == "d":
            pairs = [as_list(pair) for pair in as_list(data[1])]
            return {
                decode_plain(k, other, nested): decode_plain(v, other, nested) for k, v in pairs
            }
        if tag in ("D", "Q", "R", "T"):
            return _decode_stdlib(data)
        if tag == "B":
            found = getattr(builtins, as_text(data[1]), None)
            if not isinstance(found, type):
                raise BridgeError("a builtin type on the link that does not exist")
            return found
    except (ValueError, TypeError, IndexError, KeyError, OverflowError) as exc:
        raise BridgeError(f"malformed {tag!r} value on the link") from exc
    return other(data, nested)


def _decode_stdlib(data: list[Any]) -> Any:
    import datetime
    import decimal
    import fractions

    tag = data[0]
    if tag == "D":
        return decimal.Decimal(as_text(data[1]))
    if tag == "Q":
        return fractions.Fraction(int(as_text(data[1]), 16), int(as_text(data[2]), 16))
    if tag == "R":
        return datetime.timedelta(
            days=as_int(data[1]), seconds=as_int(data[2]), microseconds=as_int(data[3])
        )
    kinds: dict[str, Any] = {
        "date": datetime.date,
        "time": datetime.time,
        "datetime": datetime.datetime,
    }
    return kinds[data[1]].fromisoformat(as_text(data[2]))


def as_text(value: Any) -> str:
    if type(value) is not str or len(value) > MAX_MESSAGE:
        raise TypeError("expected text")
    return value


def as_int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("expected an integer")
    return value


def as_list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise TypeError("expected a list")
    return value


def plain_error(exc: BaseException) -> dict[str, Any]:
    """An exception as plain data: its builtin class name (or ``Exception``) and message."""
    builtin = type(exc).__module__ == "builtins"
    return {
        "type": type(exc).__name__ if builtin else "Exception",
        "builtin": True,
        "message": f"{type(exc).__name__}: {BaseException.__str__(exc)}"[:2000],
    }
