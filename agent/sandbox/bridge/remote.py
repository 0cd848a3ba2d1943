"""Handles: the check's view of an object living in the artifact's process.

Decisions about handles are the check's own: a handle never equals plain data; two handles
are equal when they are the same object or, for a class that defines ``__eq__``, when their
states (class and raw instance fields read without running the class's code) are equal as
compared here; a handle hashes by its class; it is true unless its ``len`` (a plain int) is
0; ``x in handle`` iterates it and compares here; it orders only as a dataclass with
``order=True`` (by its fields); ``isinstance(handle, TheirClass)`` follows the real class
chain. A state with no field, or a dataclass field kept outside the instance (a descriptor),
is no evidence: such handles equal only themselves. An operator between a handle and plain
data must answer a handle, so the artifact's arithmetic never decides a number the check
compares, and a handle is not a number (``float(h)`` fails). Its methods, attributes,
``str``/``repr`` and ``len`` are its behaviour, answered by its code as plain data or handles.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .operations import BINARY, UNARY
from .plain_data import plain_error
from .wire import BridgeError


class CheckSide(Protocol):
    """What a handle needs of the check's side of the link (``check_side.CheckSide``): a
    request to the artifact, and the artifact's exception classes by id."""

    _class_ids: dict[type, int]

    def request(self, op: str, /, *args: Any, **kwargs: Any) -> Any: ...


class Remote:
    """An object living in the artifact's process (a handle). Reads, calls and operators are
    requests; equality, hashing, truth, ordering and containment are decided here."""

    __slots__ = ("_side", "_id", "_label", "_class", "_facts")

    def __init__(
        self, side: CheckSide, number: int, label: str, klass: int, facts: dict[str, Any]
    ) -> None:
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_id", number)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_class", klass)
        object.__setattr__(self, "_facts", facts)

    def _apply(self, op: str, /, *args: Any, **kwargs: Any) -> Any:
        return self._side.request("apply", op, self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _READABLE_DUNDERS:
            raise AttributeError(name)  # copy/pickle probes; the supported dunders are below
        if name == "__all__":
            return self._side.request("names", self)
        return self._apply("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._apply("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        self._apply("delattr", name)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self._apply("call", *args, **kwargs)

    def __repr__(self) -> str:
        return str(self._apply("repr"))

    def __str__(self) -> str:
        return str(self._apply("str"))

    def __format__(self, spec: str) -> str:
        return str(self._apply("format", spec))

    def __len__(self) -> int:
        size = self._apply("len")
        if type(size) is not int or size < 0:
            raise TypeError(f"len() of a '{self._label}' must be a non-negative plain int")
        return size

    def __iter__(self) -> Any:
        return self._apply("iter")

    def __next__(self) -> Any:
        return self._apply("next")

    def __getitem__(self, key: Any) -> Any:
        return self._apply("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._apply("setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        self._apply("delitem", key)

    def __enter__(self) -> Any:
        return self._side.request("enter", self)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        error = None if exc is None else plain_error(exc)
        if exc is not None and type(exc) in self._side._class_ids:
            error = {"class": self._side._class_ids[type(exc)], "message": str(exc)}
        suppress = self._side.request("exit", self, error)
        # never swallowed by the artifact: the check's own failure, an outcome, an exit
        allowed = isinstance(exc, Exception) and not isinstance(exc, AssertionError | BridgeError)
        return suppress is True and allowed

    # -- decided here --------------------------------------------------------------------
    def __instancecheck__(self, instance: object) -> bool:
        """``isinstance(handle, TheirClass)``: by the real class chain of the handle."""
        if not isinstance(instance, Remote) or instance._side is not self._side:
            return False
        chain = instance._facts.get("mro")
        return isinstance(chain, list) and self._id in chain

    def __bool__(self) -> bool:
        return not self._facts.get("len") or len(self) != 0

    def __hash__(self) -> int:
        return hash(("deepreflect-handle", self._class))

    def __eq__(self, other: object) -> bool:
        return _same(self, other, set())

    def __ne__(self, other: object) -> bool:
        return not _same(self, other, set())

    def __contains__(self, item: object) -> bool:
        return any(_equal(item, value, set()) for value in _iterate(self))

    def __lt__(self, other: object) -> bool:
        return self._order(other, operator.lt)

    def __le__(self, other: object) -> bool:
        return self._order(other, operator.le)

    def __gt__(self, other: object) -> bool:
        return self._order(other, operator.gt)

    def __ge__(self, other: object) -> bool:
        return self._order(other, operator.ge)

    def _order(self, other: object, compare: Callable[[Any, Any], bool]) -> bool:
        if isinstance(other, Remote) and self._facts.get("order") and other._class == self._class:
            return compare(_fields(self), _fields(other))
        msg = f"'{self._label}' objects of the artifact order only as dataclasses with order=True"
        raise TypeError(msg)

    def _binary(self, name: str, left: Any, right: Any) -> Any:
        result = self._side.request("binary", name, left, right)
        if not isinstance(result, Remote) and not (
            isinstance(left, Remote) and isinstance(right, Remote)
        ):
            msg = (
                f"an operator between a '{self._label}' of the artifact and plain data answered"
                f" plain data ({type(result).__name__}): the artifact's operators do not decide"
                " a value the check compares; return a plain value instead"
            )
            raise TypeError(msg)
        return result


_READABLE_DUNDERS = {"__name__", "__qualname__", "__doc__", "__all__"}


def _binary_methods(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Remote, other: Any) -> Any:
        return self._binary(name, self, other)

    def backward(self: Remote, other: Any) -> Any:
        return self._binary(name, other, self)

    return forward, backward


def _unary_method(name: str) -> Callable[..., Any]:
    return lambda self: self._apply(name)


for _name in BINARY:
    _forward, _backward = _binary_methods(_name)
    setattr(Remote, f"__{_name}__", _forward)
    setattr(Remote, f"__r{_name}__", _backward)
for _name in UNARY:
    setattr(Remote, f"__{_name}__", _unary_method(_name))


def _iterate(handle: Remote) -> Iterator[Any]:
    iterator = iter(handle)
    while True:
        try:
            yield next(iterator)
        except StopIteration:
            return


def _state(handle: Remote) -> Any:
    state = handle._side.request("state", handle)
    if not isinstance(state, list | tuple) or len(state) != 2:
        raise BridgeError("the artifact's process sent a malformed state")
    return state


def _fields(handle: Remote) -> tuple[Any, ...]:
    mode, fields = _state(handle)
    return tuple(value for _name, value in fields) if mode == "state" else (handle._id,)


def _same(handle: Remote, other: object, seen: set[tuple[int, int]]) -> bool:
    """Two handles: the same object, or one class defining ``__eq__`` and equal states."""
    if not isinstance(other, Remote) or other._side is not handle._side:
        return False  # never equal to plain data or to anything of the check
    if other._id == handle._id:
        return True
    if other._class != handle._class or handle._facts.get("eq") != "state":
        return False
    if (handle._id, other._id) in seen:
        return True  # a cycle: equal so far
    seen.add((handle._id, other._id))
    mine, theirs = _state(handle), _state(other)
    if mine[0] != "state" or theirs[0] != "state" or len(mine[1]) != len(theirs[1]):
        return False
    if not mine[1]:
        return False  # no state at all is no evidence of equality: the same object only
    return all(
        a[0] == b[0] and _equal(a[1], b[1], seen) for a, b in zip(mine[1], theirs[1], strict=True)
    )


def _equal(left: Any, right: Any, seen: set[tuple[int, int]]) -> bool:
    """Python's ``==`` on plain data, ours on handles, inside containers too."""
    if isinstance(left, Remote):
        return _same(left, right, seen)
    if isinstance(right, Remote):
        return False
    if type(left) in (list, tuple) and type(right) is type(left):
        pairs = zip(left, right, strict=False)
        return len(left) == len(right) and all(_equal(a, b, seen) for a, b in pairs)
    if type(left) is dict and type(right) is dict:
        return left.keys() == right.keys() and all(
            _equal(v, right[k], seen) for k, v in left.items()
        )
    return bool(left == right)
