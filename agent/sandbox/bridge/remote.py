"""Handles: the check's view of an object living in the artifact's process.

A handle takes part in no decision of the check's. Everything known about the object (its
class, its state, even which object it is) comes from the artifact's process, which runs the
artifact's code and can rewrite the bridge's own functions there; so nothing it reports
decides equality, ordering, truth, containment, hashing or arithmetic here. Where a decision
would need its word, the check **fails closed**: :meth:`CheckSide.refuse` records one evidence
line (what the artifact returned, what a check compares instead) and raises
:class:`HandleRefused`, and a check with a refusal never passes, even if its code caught the
error. Refused: ``==``/``!=`` with anything but the very same handle, ``<`` and its kin,
``bool``, ``hash``, unary operators, numeric conversions (``float``, ``int``, ``round`` …),
``isinstance(handle, TheirClass)``, and a binary operator answering plain data. Allowed, as
the behaviour under test: attribute reads, method calls, ``str``/``repr``/``format`` (plain
text), ``len`` (a plain int), iteration and item access (plain data or handles), binary
operators that answer another handle, and ``x in handle``, decided here by iterating it and
comparing each plain item with ``==``. Each arrival of an object is a new handle, so not even
identity is the artifact's word: a handle equals only itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NoReturn, Protocol

from .operations import BINARY, UNARY
from .plain_data import plain_error

INSTEAD = (
    "a check compares plain values: have the function return plain data (str, int, list, "
    "dict …), or compare the object's fields read as plain data (`(p.x, p.y) == (1, 2)`) "
    "or a method's plain result"
)
"""What a check can compare instead, said in every refusal."""


class HandleRefused(TypeError):
    """A decision the check would need the artifact's word for; the check fails."""


class CheckSide(Protocol):
    """What a handle needs of the check's side of the link (``check_side.CheckSide``)."""

    def request(self, op: str, /, *args: Any, **kwargs: Any) -> Any: ...

    def refuse(self, line: str) -> NoReturn: ...

    def raised_by_artifact(self, exc: BaseException) -> bool: ...

    def exception_class_id(self, cls: type) -> int | None: ...


class HandleClass(type):
    """The class of :class:`Remote`, so that what the check's code reads of a handle's class
    can be refused (``class_facts``)."""


class Remote(metaclass=HandleClass):
    """An object living in the artifact's process (a handle). Reads, calls and operators are
    requests; no comparison, truth, hash or conversion is answered (module docstring). Its
    only names besides Python's dunders are three slots no artifact attribute plausibly
    bears: every other attribute read (``_id``, ``_label``, ``_apply`` …) reaches the
    artifact's object."""

    __slots__ = ("_deepreflect_side", "_deepreflect_id", "_deepreflect_label")
    _deepreflect_side: CheckSide
    _deepreflect_id: int
    _deepreflect_label: str

    def __init__(self, side: CheckSide, number: int, label: str) -> None:
        object.__setattr__(self, "_deepreflect_side", side)
        object.__setattr__(self, "_deepreflect_id", number)
        object.__setattr__(self, "_deepreflect_label", label)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in READABLE_DUNDERS:
            raise AttributeError(name)  # copy/pickle probes; the supported dunders are below
        if name == "__all__":
            return self._deepreflect_side.request("names", self)
        return _apply(self, "getattr", name)

    @property
    def __doc__(self) -> Any:  # type: ignore[override]  # the artifact's, never this class's
        return _apply(self, "getattr", "__doc__")

    def __setattr__(self, name: str, value: Any) -> None:
        _apply(self, "setattr", name, value)

    def __delattr__(self, name: str) -> None:
        _apply(self, "delattr", name)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return _apply(self, "call", *args, **kwargs)

    def __repr__(self) -> str:
        return _text(self, _apply(self, "repr"), "repr")

    def __str__(self) -> str:
        return _text(self, _apply(self, "str"), "str")

    def __format__(self, spec: str) -> str:
        return _text(self, _apply(self, "format", spec), "format")

    def __len__(self) -> int:
        size = _apply(self, "len")
        if type(size) is not int or size < 0:
            label = self._deepreflect_label
            raise TypeError(f"len() of a '{label}' must be a non-negative plain int")
        return size

    def __iter__(self) -> Any:
        return _apply(self, "iter")

    def __next__(self) -> Any:
        return _apply(self, "next")

    def __getitem__(self, key: Any) -> Any:
        return _apply(self, "getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _apply(self, "setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        _apply(self, "delitem", key)

    def __enter__(self) -> Any:
        return self._deepreflect_side.request("enter", self)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        side = self._deepreflect_side
        error = None if exc is None else plain_error(exc)
        number = None if exc is None else side.exception_class_id(type(exc))
        if number is not None:
            error = {"class": number, "message": str(exc)}
        suppress = side.request("exit", self, error)
        # only what the artifact raised may the artifact swallow: never the check's own
        # errors (an assertion, a refusal, a JSON error), an outcome or an exit
        return suppress is True and exc is not None and side.raised_by_artifact(exc)

    # -- refused: each would take the artifact's word ------------------------------------
    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        refuse_handle(self, _compared("==", other))

    def __ne__(self, other: object) -> bool:
        if other is self:
            return False
        refuse_handle(self, _compared("!=", other))

    def __lt__(self, other: object) -> bool:
        refuse_handle(self, _compared("<", other))

    def __le__(self, other: object) -> bool:
        refuse_handle(self, _compared("<=", other))

    def __gt__(self, other: object) -> bool:
        refuse_handle(self, _compared(">", other))

    def __ge__(self, other: object) -> bool:
        refuse_handle(self, _compared(">=", other))

    def __bool__(self) -> bool:
        refuse_handle(
            self,
            "used it as a truth value (if, and, or, not, assert, all, any); "
            "test a plain value instead (`len(x) > 0`, a field, a method's plain result)",
        )

    def __hash__(self) -> int:
        refuse_handle(self, "hashed it (a set member or a dict key); " + INSTEAD)

    def __instancecheck__(self, instance: object) -> bool:
        """``isinstance(x, TheirClass)``: a check object never is one; a handle's class is
        the artifact's word."""
        if not isinstance(instance, Remote):
            return False
        refuse_handle(
            instance,
            f"asked isinstance() against the artifact's class '{self._deepreflect_label}', "
            "a class fact only the artifact's process reports; check what the object does "
            "instead: its fields read as plain data or a method's plain result",
        )

    def __contains__(self, item: object) -> bool:
        """``x in handle``: its items (the behaviour under test) compared here."""
        return any(item is value or item == value for value in _iterate(self))


def refuse_handle(handle: Remote, what: str) -> NoReturn:
    """Fail the check on a decision about ``handle``: what the artifact returned, and what
    the check did with it (``what``)."""
    label = handle._deepreflect_label
    handle._deepreflect_side.refuse(
        f"the artifact returned a '{label}' object and the check {what}"
    )


def callable_by_its_word(value: Any) -> bool:
    """Whether ``value`` can be called: the check's own fact for a value of the check's, the
    artifact process's word for a handle. So its no may fail a check (a name stated as a
    function, bound to an object nothing calls) and its yes may pass nothing a call would
    not; ``callable(handle)`` in a check's code is refused (``class_facts``)."""
    if type(value) is not Remote:
        return callable(value)
    return _apply(value, "callable") is True


def _apply(handle: Remote, op: str, /, *args: Any, **kwargs: Any) -> Any:
    return handle._deepreflect_side.request("apply", op, handle, *args, **kwargs)


def _text(handle: Remote, value: Any, how: str) -> str:
    if type(value) is not str:
        raise TypeError(f"{how}() of a '{handle._deepreflect_label}' must be plain text")
    return value


def _binary(handle: Remote, name: str, left: Any, right: Any) -> Any:
    result = handle._deepreflect_side.request("binary", name, left, right)
    if not isinstance(result, Remote):
        refuse_handle(
            handle,
            f"applied the operator {_SYMBOLS.get(name, name)}, which answered plain data "
            f"({type(result).__name__}) decided by the artifact's code; " + INSTEAD,
        )
    return result


READABLE_DUNDERS = {"__name__", "__qualname__", "__doc__", "__all__"}
_SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "matmul": "@",
    "lshift": "<<",
    "rshift": ">>",
    "and": "&",
    "or": "|",
    "xor": "^",
    "neg": "unary -",
    "pos": "unary +",
    "abs": "abs()",
    "invert": "~",
}
_CONVERSIONS = ("int", "float", "complex", "index", "round", "trunc", "floor", "ceil")


def _compared(symbol: str, other: object) -> str:
    if isinstance(other, Remote):
        return f"compared it with {symbol} to another object of the artifact's; " + INSTEAD
    return f"compared it with {symbol} to a plain {type(other).__name__}; " + INSTEAD


def _binary_methods(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Remote, other: Any) -> Any:
        return _binary(self, name, self, other)

    def backward(self: Remote, other: Any) -> Any:
        return _binary(self, name, other, self)

    return forward, backward


def _refused_unary(name: str) -> Callable[..., Any]:
    def refused(self: Remote, *args: Any) -> Any:
        what = _SYMBOLS.get(name, f"{name}()")
        refuse_handle(
            self, f"applied {what} to it; return plain numbers from the functions under test"
        )

    return refused


for _name in BINARY:
    _forward, _backward = _binary_methods(_name)
    setattr(Remote, f"__{_name}__", _forward)
    setattr(Remote, f"__r{_name}__", _backward)
for _name in (*UNARY, *_CONVERSIONS):
    setattr(Remote, f"__{_name}__", _refused_unary(_name))


def _iterate(handle: Remote) -> Iterator[Any]:
    iterator = iter(handle)
    while True:
        try:
            yield next(iterator)
        except StopIteration:
            return
