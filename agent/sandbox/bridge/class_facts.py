"""Class facts a handle would invent, refused in the check's process.

A handle's class defines every dunder a handle forwards (``__iter__``, ``__next__``,
``__len__``, ``__call__``, ``__enter__``, ``__hash__`` …), so structural answers about it are
the handle's, not the artifact object's: ``isinstance(h, collections.abc.Iterator)``,
``Hashable``, ``Sized``, ``typing.SupportsFloat``, ``callable(h)``, ``hasattr(h,
'__enter__')`` would be true whatever the artifact returned. Asking the artifact's process
instead would take its word. So these decisions fail closed, like every other decision on a
handle: an abstract class (``abc.ABCMeta`` and ``typing``'s protocols) that would say yes of
a handle refuses (a no is the check's own fact: the handle is registered as nothing), and the
check's own code asking ``callable``, ``hasattr`` or ``getattr`` of a handle's dunder
refuses. Library code (``pytest.raises(E, func)``) keeps the builtins' answers: it only
calls what it is given, and the call is the behaviour under test.
"""

from __future__ import annotations

import abc
import builtins
import sys
import typing
from collections.abc import Callable
from typing import Any

from .remote import READABLE_DUNDERS, CheckSide, Remote, refuse_handle

_WHAT = "check what the object does instead: call it, or read its fields as plain data"


def guard_class_facts(side: CheckSide, is_check_code: Callable[[str], bool]) -> None:
    """Install the refusals in this process (the check's, which the check owns);
    ``is_check_code`` tells the check's own files (its code, its tests) by file name."""
    metas = [abc.ABCMeta, getattr(typing, "_ProtocolMeta", abc.ABCMeta)]
    originals: dict[type, Any] = {}
    for meta in dict.fromkeys(metas):
        if "__subclasscheck__" in meta.__dict__:
            originals[meta] = meta.__dict__["__subclasscheck__"]
            meta.__subclasscheck__ = _guarded_subclasscheck(originals[meta], side)  # type: ignore[method-assign]
    for meta in dict.fromkeys(metas):
        if "__instancecheck__" in meta.__dict__:
            guarded = _guarded_instancecheck(meta.__dict__["__instancecheck__"], originals)
            meta.__instancecheck__ = guarded  # type: ignore[method-assign]
    original_callable, original_hasattr = builtins.callable, builtins.hasattr
    original_getattr = builtins.getattr

    def asked_by_check() -> bool:
        return is_check_code(sys._getframe(2).f_code.co_filename)

    def guarded_callable(obj: Any, /) -> bool:
        if type(obj) is Remote and asked_by_check():
            refuse_handle(obj, "asked callable() of it, a class fact; " + _WHAT)
        return original_callable(obj)

    def refuse_dunder(obj: Any, how: str, name: Any) -> None:
        what = f"asked {how}() of {name}, a class fact; " + _WHAT
        if type(obj) is Remote:
            refuse_handle(obj, what)
        side.refuse(f"the artifact returned an object and the check {what}")  # type(obj)

    def guarded_hasattr(obj: Any, name: str, /) -> bool:
        if (type(obj) is Remote or obj is Remote) and _handles_own(name) and asked_by_check():
            refuse_dunder(obj, "hasattr", name)
        return original_hasattr(obj, name)

    def guarded_getattr(obj: Any, name: str, /, *default: Any) -> Any:
        if (type(obj) is Remote or obj is Remote) and _handles_own(name) and asked_by_check():
            refuse_dunder(obj, "getattr", name)
        return original_getattr(obj, name, *default)

    builtins.callable = guarded_callable  # type: ignore[assignment]
    builtins.hasattr = guarded_hasattr
    builtins.getattr = guarded_getattr


def _handles_own(name: Any) -> bool:
    """A dunder the handle's class answers itself (every one but the artifact's names)."""
    return (
        type(name) is str
        and name.startswith("__")
        and name.endswith("__")
        and name not in READABLE_DUNDERS
    )


def _is_handle_class(cls: Any) -> bool:
    return isinstance(cls, type) and type.__subclasscheck__(Remote, cls)


def _guarded_subclasscheck(original: Any, side: CheckSide) -> Any:
    def __subclasscheck__(cls: Any, subclass: Any) -> bool:
        answer = original(cls, subclass)
        if answer and _is_handle_class(subclass):
            side.refuse(
                "the artifact returned an object and the check asked whether its class is "
                f"a {_name(cls)}, which a handle's own methods would answer, whatever the "
                "artifact returned; " + _WHAT
            )
        return bool(answer)

    return __subclasscheck__


def _guarded_instancecheck(original: Any, originals: dict[type, Any]) -> Any:
    def __instancecheck__(cls: Any, instance: Any) -> bool:
        if type(instance) is not Remote:
            return bool(original(cls, instance))
        unguarded = next(originals[k] for k in type(cls).__mro__ if k in originals)
        try:
            answer = unguarded(cls, Remote)
        except TypeError:  # a protocol with data members: its reads are the artifact's
            return bool(original(cls, instance))
        if answer:
            refuse_handle(
                instance,
                f"asked isinstance() against {_name(cls)}, which a handle's own methods "
                "would answer, whatever the artifact returned; " + _WHAT,
            )
        return False

    return __instancecheck__


def _name(cls: Any) -> str:
    return f"'{getattr(cls, '__qualname__', cls)}'"
