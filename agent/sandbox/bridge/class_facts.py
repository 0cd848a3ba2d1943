"""Class facts a handle would invent, refused in the check's process.

A handle's class defines every dunder a handle forwards (``__iter__``, ``__next__``,
``__len__``, ``__call__``, ``__enter__``, ``__hash__`` …), so structural answers about it are
the handle's, not the artifact object's: ``isinstance(h, collections.abc.Iterator)``,
``Hashable``, ``Sized``, ``typing.SupportsFloat``, ``callable(h)``, ``hasattr(h,
'__enter__')``, ``h.__enter__``, ``h.__module__``, ``dir(h)``, ``type(h).__name__`` answer
the same for every artifact. Asking the artifact's process instead would take its word. So
these decisions fail closed, like every other decision on a handle: an abstract class
(``abc.ABCMeta`` and ``typing``'s protocols) that would say yes of a handle refuses wherever
it is asked, and the check's own code asking an abstract class at all (a no, ``Mapping``, is
computed from the same dunders), asking ``callable``, ``dir``, ``hasattr`` or ``getattr`` of
a handle's dunder, reading such a dunder (``h.__enter__``, ``h.__class__``) or any attribute
of a handle's class (``type(h).__name__``) refuses, and so does ``isinstance`` against a
class the artifact's object could be (``types.GeneratorType``, ``deque``, ``type``): the
handle is none, whatever the object is. ``type(h) is C`` compares the handle's own class,
which no hook sees. Library code (``pytest.raises(E, func)``) keeps the builtins' answers: it
only calls what it is given, and the call is the behaviour under test.
"""

from __future__ import annotations

import _collections_abc
import abc
import builtins
import dataclasses
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from .remote import READABLE_DUNDERS, CheckSide, HandleClass, Remote, refuse_handle

_WHAT = "check what the object does instead: call it, or read its fields as plain data"
_MACHINERY = {
    module.__file__ for module in (abc, typing, _collections_abc, inspect, dataclasses, functools)
} | {__file__}
"""The files of ``isinstance`` and of the introspection a check calls (``inspect.isclass``,
``dataclasses.is_dataclass``, ``functools.singledispatch``): who asks is the first frame
outside them."""
_PLAIN: tuple[type, ...] = (type(None), bool, int, float, complex, str, bytes, bytearray)
_PLAIN += (list, tuple, set, frozenset, dict)
"""The classes whose instances (subclasses' too) cross as plain data: a handle is none of
them, a fact of the check's own."""


def guard_class_facts(
    side: CheckSide, is_check_code: Callable[[str], bool], module_class: type
) -> None:
    """Install the refusals in this process (the check's, which the check owns);
    ``is_check_code`` tells the check's own files (its code, its tests) by file name;
    ``module_class`` is the class of an artifact module's proxy, whose ``dir()`` and
    ``__dict__`` are its own, not the module's."""

    def asked_by_check() -> bool:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _MACHINERY:
            frame = frame.f_back  # type: ignore[assignment]
        return frame is not None and is_check_code(frame.f_code.co_filename)

    _guard_abstract_classes(side, asked_by_check)
    _guard_builtins(side, asked_by_check)
    _guard_class_checks(side, is_check_code, asked_by_check)
    _guard_reads(side, asked_by_check)
    _guard_module_proxies(side, asked_by_check, module_class)


def _guard_abstract_classes(side: CheckSide, asked_by_check: Callable[[], bool]) -> None:
    """``isinstance``/``issubclass`` of a handle against an abstract class or protocol."""
    metas = [abc.ABCMeta, getattr(typing, "_ProtocolMeta", abc.ABCMeta)]
    originals: dict[type, Any] = {}
    for meta in dict.fromkeys(metas):
        if "__subclasscheck__" in meta.__dict__:
            originals[meta] = meta.__dict__["__subclasscheck__"]
            guarded = _guarded_subclasscheck(originals[meta], side, asked_by_check)
            meta.__subclasscheck__ = guarded  # type: ignore[method-assign]
    for meta in dict.fromkeys(metas):
        if "__instancecheck__" in meta.__dict__:
            original = meta.__dict__["__instancecheck__"]
            guarded = _guarded_instancecheck(original, originals, asked_by_check)
            meta.__instancecheck__ = guarded  # type: ignore[method-assign]


def _guard_builtins(side: CheckSide, asked_by_check: Callable[[], bool]) -> None:
    """``callable`` of a handle, ``hasattr`` and ``getattr`` of its dunder."""
    original_callable, original_hasattr = builtins.callable, builtins.hasattr
    original_getattr = builtins.getattr

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


def _guard_class_checks(
    side: CheckSide, is_check_code: Callable[[str], bool], asked_by_check: Callable[[], bool]
) -> None:
    """``isinstance(h, C)`` and ``issubclass(type(h), C)`` asked by the check's code, where
    the artifact's object could be a C (``types.GeneratorType``, ``collections.deque``,
    ``type``, ``Exception``): the handle is not one, whatever the object is. Plain-data
    classes and the check's own classes say no truly: such an object would have crossed as
    plain data, and nothing of the check's crosses."""
    original_isinstance, original_issubclass = builtins.isinstance, builtins.issubclass

    def undecided(classes: Any) -> Any:
        """The first class the artifact's object could be an instance of, or None."""
        for cls in _flat(classes):
            if not original_isinstance(cls, type) or original_isinstance(cls, abc.ABCMeta):
                continue  # a handle, an abstract class or protocol: each refuses itself
            if cls is object or original_issubclass(cls, _PLAIN):
                continue
            module = sys.modules.get(cls.__module__)
            if not is_check_code(str(getattr(module, "__file__", None) or "")):
                return cls
        return None

    def guarded_isinstance(obj: Any, classes: Any, /) -> bool:
        if type(obj) is Remote and asked_by_check() and (cls := undecided(classes)):
            refuse_handle(obj, _asked_isinstance(cls))
        return original_isinstance(obj, classes)

    def guarded_issubclass(cls: Any, classes: Any, /) -> bool:
        if cls is Remote and asked_by_check() and (other := undecided(classes)):
            side.refuse(_asked_subclass(other))
        return original_issubclass(cls, classes)

    builtins.isinstance = guarded_isinstance
    builtins.issubclass = guarded_issubclass


def _flat(classes: Any, depth: int = 0) -> list[Any]:
    """The classes of ``isinstance``'s second argument: nested tuples and unions opened."""
    if type(classes) is tuple or type(classes) is types.UnionType:
        inner = classes if type(classes) is tuple else typing.get_args(classes)
        return [c for item in inner for c in _flat(item, depth + 1)] if depth < 50 else []
    return [classes]


def _guard_reads(side: CheckSide, asked_by_check: Callable[[], bool]) -> None:
    """A handle's dunder read as an attribute (``h.__enter__``, ``h.__module__``), ``dir(h)``,
    and any attribute of a handle's class (``type(h).__name__``), read by the check's code."""
    read_handle, read_class = object.__getattribute__, type.__getattribute__

    def __getattribute__(handle: Remote, name: str) -> Any:
        if name == "__class__":  # isinstance() reads it too, called from our guard
            if sys._getframe(1).f_code.co_filename != __file__ and asked_by_check():
                refuse_handle(handle, "read its __class__, a class fact; " + _WHAT)
        elif _handles_own(name) and asked_by_check():
            refuse_handle(handle, f"read its {name}, a class fact; " + _WHAT)
        return read_handle(handle, name)

    def __dir__(handle: Remote) -> Any:
        if asked_by_check():
            refuse_handle(handle, "asked dir() of it, a class fact; " + _WHAT)
        return object.__dir__(handle)

    def class_getattribute(cls: type, name: str) -> Any:
        if name != "__class__" and asked_by_check():  # as isinstance() does
            side.refuse(
                f"the artifact returned an object and the check read {name} of its class "
                "(type(obj), obj.__class__), a class fact; " + _WHAT
            )
        return read_class(cls, name)

    def class_dir(cls: type) -> Any:
        if asked_by_check():
            side.refuse(
                "the artifact returned an object and the check asked dir() of its class "
                "(type(obj), obj.__class__), a class fact; " + _WHAT
            )
        return type.__dir__(cls)

    Remote.__getattribute__ = __getattribute__  # type: ignore[method-assign,assignment]
    Remote.__dir__ = __dir__  # type: ignore[method-assign,assignment]
    HandleClass.__getattribute__ = class_getattribute  # type: ignore[method-assign,assignment]
    HandleClass.__dir__ = class_dir  # type: ignore[method-assign,assignment]


def _guard_module_proxies(side: CheckSide, asked_by_check: Any, module_class: type) -> None:
    """``dir(m)``, ``vars(m)`` and ``m.__dict__`` of an artifact module, asked by the check's
    code: the proxy's own names (``hasattr(m, 'name')`` and ``m.__all__`` reach the module)."""
    read: Any = module_class.__getattribute__

    def refuse(module: Any, what: str) -> None:
        side.refuse(
            f"the check {what} of the artifact's module {module.__name__!r}, which its proxy "
            f"answers, not the module; read the names it needs: `hasattr({module.__name__}, "
            f"'name')`, `{module.__name__}.__all__`"
        )

    def __getattribute__(module: Any, name: str) -> Any:
        if name == "__dict__" and asked_by_check():
            refuse(module, "read __dict__")
        return read(module, name)

    def __dir__(module: Any) -> Any:
        if asked_by_check():
            refuse(module, "asked dir()")
        return types.ModuleType.__dir__(module)

    module_class.__getattribute__ = __getattribute__  # type: ignore[method-assign,assignment]
    module_class.__dir__ = __dir__  # type: ignore[method-assign,assignment]


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


def _guarded_subclasscheck(original: Any, side: CheckSide, asked_by_check: Any) -> Any:
    def __subclasscheck__(cls: Any, subclass: Any) -> bool:
        answer = original(cls, subclass)
        if _is_handle_class(subclass) and (answer or asked_by_check()):
            side.refuse(_asked_subclass(cls))
        return bool(answer)

    return __subclasscheck__


def _asked_subclass(cls: Any) -> str:
    return (
        "the artifact returned an object and the check asked whether its class is a "
        f"{_name(cls)}, which a handle's own class would answer, whatever the artifact "
        "returned; " + _WHAT
    )


def _guarded_instancecheck(original: Any, originals: dict[type, Any], asked_by_check: Any) -> Any:
    def __instancecheck__(cls: Any, instance: Any) -> bool:
        if type(instance) is not Remote:
            return bool(original(cls, instance))
        if asked_by_check():  # a no is computed from the same dunders as a yes
            refuse_handle(instance, _asked_isinstance(cls))
        unguarded = next(originals[k] for k in type(cls).__mro__ if k in originals)
        try:
            answer = unguarded(cls, Remote)
        except TypeError:  # a protocol with data members: its reads are the artifact's
            return bool(original(cls, instance))
        if answer:
            refuse_handle(instance, _asked_isinstance(cls))
        return False

    return __instancecheck__


def _asked_isinstance(cls: Any) -> str:
    return (
        f"asked isinstance() against {_name(cls)}, which a handle's own class would answer, "
        "whatever the artifact returned; " + _WHAT
    )


def _name(cls: Any) -> str:
    return f"'{getattr(cls, '__qualname__', cls)}'"
