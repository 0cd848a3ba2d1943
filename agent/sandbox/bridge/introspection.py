"""Reading an exception's class chain and attributes in the artifact's process without running
the artifact's code: through the interpreter's own descriptors, never through a property,
``__getattribute__``, ``__class__`` or metaclass the artifact defined. (What it reads is still
the artifact's word: the check decides nothing from it but how to name an error.)"""

from __future__ import annotations

import types
from typing import Any


def real_mro(cls: type) -> tuple[type, ...]:
    """The real MRO, whatever a metaclass claims."""
    return type.__dict__["__mro__"].__get__(cls)  # type: ignore[no-any-return,unused-ignore]


def class_dict(cls: type) -> Any:
    return type.__dict__["__dict__"].__get__(cls)


def raw_dict(obj: Any) -> dict[str, Any] | None:
    """The instance's own ``__dict__`` through the interpreter's descriptor, never through a
    property, ``__getattribute__`` or ``__class__`` the artifact defined; None if hidden."""
    for klass in real_mro(type(obj)):
        found = class_dict(klass).get("__dict__")
        if found is not None:
            if type(found) is types.GetSetDescriptorType:
                return found.__get__(obj, type(obj))  # type: ignore[no-any-return,unused-ignore]
            return None  # shadowed by the class: opaque
    return {}


def builtin_base(cls: type) -> type:
    for klass in real_mro(cls):
        if klass.__module__ == "builtins":
            return klass
    return Exception
