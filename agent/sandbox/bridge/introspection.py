"""Reading an object's class and state in the artifact's process without running any of the
artifact's code: through the interpreter's own descriptors, never through a property,
``__getattribute__``, ``__class__`` or metaclass the artifact defined."""

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


def read_state(obj: Any) -> list[Any]:
    """``["state", [[name, value], ...]]`` from raw slots and ``__dict__``, or
    ``["identity", []]`` when the state is hidden: nothing of the class's code runs."""
    fields: list[list[Any]] = []
    for klass in reversed(real_mro(type(obj))):
        for name, member in list(class_dict(klass).items()):
            if type(member) is types.MemberDescriptorType and type(name) is str:
                try:
                    fields.append([name, member.__get__(obj, type(obj))])
                except AttributeError:
                    fields.append([name, ("deepreflect: unset slot",)])
    raw = raw_dict(obj)
    if raw is None:
        return ["identity", []]
    fields += [[str.__str__(k), v] for k, v in dict.items(raw) if isinstance(k, str)]
    stored = {name for name, _value in fields}
    declared: Any = next(
        (
            class_dict(k)["__dataclass_fields__"]
            for k in real_mro(type(obj))
            if "__dataclass_fields__" in class_dict(k)
        ),
        {},
    )
    for name, spec in dict.items(declared) if isinstance(declared, dict) else ():
        kind = getattr(getattr(spec, "_field_type", None), "name", None)
        if kind == "_FIELD" and name not in stored:
            return ["identity", []]  # a field kept elsewhere (a descriptor): hidden state
    return ["state", fields]


def builtin_base(cls: type) -> type:
    for klass in real_mro(cls):
        if klass.__module__ == "builtins":
            return klass
    return Exception
