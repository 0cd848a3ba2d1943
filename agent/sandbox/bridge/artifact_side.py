"""The artifact's end of the link: it answers the check's requests with plain data or handles,
and calls the check back only through opaque stubs of the callbacks the check passed in."""

from __future__ import annotations

import builtins
import os
import socket
from collections.abc import Callable
from typing import Any

from .introspection import builtin_base, raw_dict, real_mro
from .operations import APPLY
from .plain_data import decode_plain, encode_plain
from .wire import BridgeError, Wire

_ARGS = BaseException.__dict__["args"]
_HERE = os.path.dirname(os.path.abspath(__file__))


class ArtifactSide:
    """The artifact's end: answers the check's requests; calls back only through stubs."""

    def __init__(self, sock: socket.socket, roots: dict[str, Callable[..., Any]]) -> None:
        self.wire = Wire(sock)
        self.roots = roots
        self.objects: dict[int, Any] = {}
        self._next_call = 0

    def serve_forever(self) -> None:
        """Answer requests until the check hangs up."""
        while True:
            try:
                message = self.wire.receive()
            except BridgeError:
                return
            if message["kind"] == "request":
                self._serve(message)

    def _serve(self, message: dict[str, Any]) -> None:
        number = message.get("id")
        try:
            args, kwargs = self.decode(message.get("args"))
            value = self.encode(self._perform(str(message.get("op")), args, kwargs))
            reply = {"kind": "reply", "id": number, "ok": True, "value": value}
            self.wire.send(reply)
        except BridgeError:
            raise
        except BaseException as exc:  # everything the artifact raises goes back as data
            try:
                self.wire.send(
                    {"kind": "reply", "id": number, "ok": False, "error": self._describe(exc)}
                )
            except ValueError:
                error = {"type": "ValueError", "builtin": True, "message": "a reply too large"}
                self.wire.send({"kind": "reply", "id": number, "ok": False, "error": error})

    def _perform(self, op: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if op == "root":
            return self.roots[args[0]](*args[1:])
        if op == "apply":
            return APPLY[args[0]](*args[1:], **kwargs)
        target = args[0]
        if op == "binary":
            return APPLY[target](args[1], args[2])
        if op == "names":
            names = getattr(target, "__all__", None)
            return (
                [str(n) for n in names]
                if names is not None
                else [n for n in dir(target) if not n.startswith("_")]
            )
        if op == "enter":
            return type(target).__enter__(target)
        if op == "exit":
            exc = self._rebuild_exception(args[1])
            kind = type(exc) if exc is not None else None
            return bool(type(target).__exit__(target, kind, exc, None))
        msg = f"unknown bridge operation {op!r}"
        raise ValueError(msg)

    def _rebuild_exception(self, error: Any) -> BaseException | None:
        if error is None:
            return None
        if "class" in error and error["class"] in self.objects:
            cls = self.objects[error["class"]]
        else:
            cls = getattr(builtins, str(error.get("type")), Exception)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            cls = Exception
        try:
            return cls(error.get("message", ""))
        except Exception:
            return Exception(error.get("message", ""))

    # -- values --------------------------------------------------------------------------
    def encode(self, value: Any) -> Any:
        return encode_plain(value, self._encode_other)

    def _encode_other(self, value: Any, depth: int) -> Any:
        if type(value) is _Callback and value._owner is self:
            return ["c", value._number]
        if issubclass(type(value), type) and BaseException in real_mro(value):
            return ["e", *self._class_descriptor(value)]
        return ["h", self._keep(value), type(value).__name__]

    def _class_descriptor(self, cls: type) -> list[Any]:
        chain = [
            [self._keep(k), k.__name__] for k in real_mro(cls)[1:] if k.__module__ != "builtins"
        ][:16]
        return [self._keep(cls), cls.__name__, chain, builtin_base(cls).__name__]

    def decode(self, data: Any) -> Any:
        return decode_plain(data, self._rebuild)

    def _rebuild(self, data: list[Any], depth: int) -> Any:
        if data[0] == "r" and data[1] in self.objects:
            return self.objects[data[1]]
        if data[0] == "c" and isinstance(data[1], int):
            return _Callback(self, data[1])
        raise BridgeError(f"unknown value tag {data[0]!r} on the link")

    def _keep(self, value: Any) -> int:
        number = id(value)
        self.objects[number] = value
        return number

    def call_back(self, number: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the check's callback ``number``; serve the check's requests until it answers."""
        self._next_call += 1
        call = self._next_call
        encoded_kwargs = {str(k): v for k, v in kwargs.items()}
        message = {
            "kind": "callback",
            "id": call,
            "callback": number,
            "args": self.encode(list(args)),
            "kwargs": self.encode(encoded_kwargs),
        }
        self.wire.send(message)
        while True:
            answer = self.wire.receive()
            if answer["kind"] == "request":
                self._serve(answer)
                continue
            if answer.get("id") != call:
                raise BridgeError("the check answered another call")
            if answer.get("ok") is True:
                return self.decode(answer.get("value"))
            raise _callback_error(answer.get("error") or {})

    # -- exceptions ----------------------------------------------------------------------
    def _describe(self, exc: BaseException) -> dict[str, Any]:
        import traceback  # only on a failure: start-up time is part of every check's cost

        cls = type(exc)
        frames = [
            [os.path.basename(f.filename), f.lineno, (f.line or "").strip()]
            for f in traceback.extract_tb(exc.__traceback__)
            if os.path.dirname(os.path.abspath(f.filename)) != _HERE  # not the bridge's own
        ]
        if isinstance(exc, SyntaxError) and exc.filename:  # where the artifact's text is wrong
            frames.append([os.path.basename(exc.filename), exc.lineno, (exc.text or "").strip()])
        try:
            message = str(exc)
            if type(message) is not str:
                message = BaseException.__str__(exc)
        except Exception:
            message = BaseException.__str__(exc)
        error: dict[str, Any] = {
            "type": cls.__name__,
            "builtin": cls.__module__ == "builtins",
            "class": self._class_descriptor(cls),
            "message": message[:4000],
            "frames": frames[-6:],
        }
        sources: dict[str, Any] = {
            "args": list(_ARGS.__get__(exc)),
            "attributes": raw_dict(exc) or {},
        }
        for key, source in sources.items():
            try:
                error[key] = self.encode(source)
            except Exception:
                pass
        return error


class _Callback:
    """The artifact's view of a check callback: callable, and nothing else."""

    __slots__ = ("_owner", "_number")

    def __init__(self, owner: ArtifactSide, number: int) -> None:
        self._owner = owner
        self._number = number

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self._owner.call_back(self._number, args, kwargs)

    def __repr__(self) -> str:
        return "<callback of the check>"


class CheckError(Exception):
    """Raised in the artifact's process when a callback of the check failed."""


def _callback_error(error: dict[str, Any]) -> BaseException:
    name, message = str(error.get("type")), str(error.get("message", ""))
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        return builtin(message)
    return CheckError(message)
