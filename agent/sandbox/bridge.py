"""The link between a check and the artifact it judges, which run in two separate sandboxes.

The artifact's code never runs in the process that decides the verdict: the check's process
imports artifact modules as proxies, and every attribute read, call or operator is a request
over a socket to the artifact's process. Values cross as **plain data** (None, bool, int,
float, str, bytes, list, tuple, dict, set), rebuilt from their base type, so a ``str``
subclass whose ``__eq__`` is always true arrives as a plain ``str``. Anything else crosses as
a handle whose every use is again a request. Exceptions cross by name and message; builtin
ones are raised as themselves (``pytest.raises(ValueError)`` works), the artifact's own
classes as stand-ins made once per class, and an exit or a test-framework outcome raised by
the artifact becomes an ordinary error, never an exit or a skip of the check.

Standard library only: this file is copied into both sandboxes and imported there.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import struct
import traceback
from collections.abc import Callable
from typing import Any

MAX_MESSAGE = 16 * 1024 * 1024
MAX_DEPTH = 100
# exceptions the check's process must never raise as themselves
_NOT_RAISED_AS_IS = (SystemExit, KeyboardInterrupt, GeneratorExit, StopAsyncIteration)


class BridgeError(RuntimeError):
    """The link broke: the other process died, hung up or spoke nonsense."""


class ArtifactExit(Exception):
    """The artifact called ``sys.exit``/``os._exit`` or raised a process-ending exception."""


class Remote:
    """An object living in the other process; every use is a request to it."""

    __slots__ = ("_bridge", "_handle", "_label")

    def __init__(self, bridge: Bridge, handle: int, label: str) -> None:
        object.__setattr__(self, "_bridge", bridge)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_label", label)

    def _op(self, name: str | None, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._bridge.request("invoke", self, name, list(args), kwargs)
        except AttributeError as exc:
            if name is None or not name.startswith("__"):
                raise
            # what Python itself raises for an operation the type lacks (len(), iter() …)
            msg = f"'{self._label}' object does not support {name}"
            raise TypeError(msg) from exc

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy/pickle probes; real dunders are defined below
        return self._bridge.request("getattr", self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._bridge.request("setattr", self, name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._op(None, *args, **kwargs)

    def __repr__(self) -> str:
        return str(self._op("__repr__"))

    def __str__(self) -> str:
        return str(self._op("__str__"))

    def __len__(self) -> int:
        return int(self._op("__len__"))

    def __iter__(self) -> Any:
        return self._bridge.request("iter", self)

    def __next__(self) -> Any:
        return self._op("__next__")

    def __getitem__(self, key: Any) -> Any:
        return self._op("__getitem__", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._op("__setitem__", key, value)

    def __contains__(self, item: Any) -> bool:
        return self._bridge.request("contains", self, item) is True

    def __bool__(self) -> bool:
        return self._bridge.request("truth", self) is True

    def __eq__(self, other: object) -> bool:
        # the answer must be a plain True: an object claiming equality is not believed
        return self._bridge.request("eq", self, other) is True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((id(self._bridge), self._handle))

    def __enter__(self) -> Any:
        return self._op("__enter__")

    def __exit__(self, *exc: Any) -> Any:
        return self._op("__exit__", None, None, None)


class Bridge:
    """One end of the link: serves the other end's requests and sends its own."""

    def __init__(self, sock: socket.socket, roots: dict[str, Callable[[], Any]] | None = None):
        self.sock = sock
        self.roots = roots or {}  # named entry points the other end may ask for
        self.objects: dict[int, Any] = {}
        self.remote_classes: dict[int, type[BaseException]] = {}

    # -- wire ----------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode()
        if len(data) > MAX_MESSAGE:
            msg = f"a value of {len(data)} bytes is too large to cross the sandbox boundary"
            raise BridgeError(msg)
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def _receive(self) -> dict[str, Any]:
        size = struct.unpack(">I", self._exact(4))[0]
        if size > MAX_MESSAGE:
            raise BridgeError("the other process sent an oversized message")
        try:
            message = json.loads(self._exact(size))
        except ValueError as exc:
            raise BridgeError("the other process sent a malformed message") from exc
        if not isinstance(message, dict):
            raise BridgeError("the other process sent a malformed message")
        return message

    def _exact(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                raise BridgeError("the artifact's process exited or closed the link mid-call")
            chunks += chunk
        return bytes(chunks)

    # -- requests ------------------------------------------------------------------------
    def request(self, op: str, *args: Any) -> Any:
        """Ask the other end; serve its nested requests (callbacks) until the reply comes."""
        self._send({"kind": "request", "op": op, "args": self.encode(list(args))})
        while True:
            message = self._receive()
            if message.get("kind") == "request":
                self._serve_one(message)
                continue
            if message.get("ok"):
                return self.decode(message.get("value"))
            raise self._exception(message.get("error") or {})

    def serve_forever(self) -> None:
        """The artifact's side: answer requests until the link closes."""
        while True:
            try:
                message = self._receive()
            except BridgeError:
                return
            if message.get("kind") == "request":
                self._serve_one(message)

    def _serve_one(self, message: dict[str, Any]) -> None:
        try:
            value = self._perform(str(message.get("op")), self.decode(message.get("args")))
            reply = {"kind": "reply", "ok": True, "value": self.encode(value)}
        except BridgeError:
            raise
        except BaseException as exc:  # everything the artifact raises goes back as data
            reply = {"kind": "reply", "ok": False, "error": self._describe(exc)}
        self._send(reply)

    def _perform(self, op: str, args: list[Any]) -> Any:
        if op == "root":
            return self.roots[args[0]](*args[1:])
        target = args[0]
        if op == "getattr":
            return getattr(target, args[1])
        if op == "setattr":
            return setattr(target, args[1], args[2])
        if op == "invoke":
            function = target if args[1] is None else getattr(target, args[1])
            return function(*args[2], **args[3])
        if op == "iter":
            return iter(target)
        if op == "contains":
            return args[1] in target
        if op == "truth":
            return bool(target)
        if op == "eq":
            return target == args[1]
        msg = f"unknown bridge operation {op!r}"
        raise BridgeError(msg)

    # -- values --------------------------------------------------------------------------
    def encode(self, value: Any, depth: int = 0) -> Any:
        """Plain data as tagged JSON, rebuilt from base types; anything else as a handle."""
        if depth > MAX_DEPTH:
            raise ValueError("a value nested too deeply to cross the sandbox boundary")
        nested = depth + 1
        if value is None or isinstance(value, bool):
            return ["n"] if value is None else ["b", value is True]
        if isinstance(value, int):
            return ["i", int.__repr__(value)]
        if isinstance(value, float):
            return ["f", float.__repr__(value)]
        if isinstance(value, str):
            return ["s", str.__str__(value)]
        if isinstance(value, bytes | bytearray):
            return ["y", bytes(memoryview(value)).hex()]
        if isinstance(value, Remote) and value._bridge is self:
            return ["r", value._handle]  # back home: the other end has the real object
        if isinstance(value, list | tuple | set | frozenset):
            base: Any = _base(value)
            tag = _TAGS[base]
            items = list(base.__iter__(value))  # the base type's own iteration, not an override
            return [tag, [self.encode(item, nested) for item in items]]
        if isinstance(value, dict):
            pairs = list(dict.items(value))
            return ["d", [[self.encode(k, nested), self.encode(v, nested)] for k, v in pairs]]
        if isinstance(value, type) and issubclass(value, BaseException):
            return ["e", self._keep(value), value.__name__, _builtin_base(value).__name__]
        return ["h", self._keep(value), type(value).__name__]

    def decode(self, data: Any) -> Any:
        if not isinstance(data, list) or not data:
            raise BridgeError("malformed value on the link")
        tag = data[0]
        if tag == "n":
            return None
        if tag == "b":
            return data[1] is True
        if tag == "i":
            return int(data[1])
        if tag == "f":
            return float(data[1])
        if tag == "s":
            return str(data[1])
        if tag == "y":
            return bytes.fromhex(data[1])
        if tag in ("l", "t", "S", "F"):
            items = [self.decode(item) for item in data[1]]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d":
            return {self.decode(k): self.decode(v) for k, v in data[1]}
        if tag == "r":
            return self.objects[int(data[1])]
        if tag == "e":
            return self._stand_in(int(data[1]), str(data[2]), str(data[3]))
        if tag == "h":
            return Remote(self, int(data[1]), str(data[2]))
        raise BridgeError(f"unknown value tag {tag!r} on the link")

    def _keep(self, value: Any) -> int:
        handle = id(value)
        self.objects[handle] = value
        return handle

    # -- exceptions ----------------------------------------------------------------------
    def _describe(self, exc: BaseException) -> dict[str, Any]:
        cls = type(exc)
        frames = [
            [os.path.basename(f.filename), f.lineno, (f.line or "").strip()]
            for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.endswith("__deepreflect_bridge__.py")
        ]
        return {
            "type": cls.__name__,
            "builtin": cls.__module__ == "builtins",
            "base": _builtin_base(cls).__name__,
            "class": self._keep(cls),
            "message": BaseException.__str__(exc)[:2000],
            "frames": frames[-6:],
        }

    def _exception(self, error: dict[str, Any]) -> BaseException:
        name = str(error.get("type", "Exception"))
        message = str(error.get("message", ""))
        builtin = getattr(builtins, name, None)
        if error.get("builtin") and isinstance(builtin, type) and issubclass(builtin, Exception):
            exc: BaseException = builtin(message)
        elif error.get("builtin") and name in {c.__name__ for c in _NOT_RAISED_AS_IS}:
            exc = ArtifactExit(f"the artifact raised {name}: {message}")
        else:
            cls = self._stand_in(int(error.get("class", 0)), name, str(error.get("base")))
            exc = cls(message)
        exc.deepreflect_frames = error.get("frames") or []  # type: ignore[attr-defined]
        return exc

    def _stand_in(self, handle: int, name: str, base_name: str) -> type[BaseException]:
        """One local class per artifact exception class, so ``raises`` can name it."""
        if handle not in self.remote_classes:
            base = getattr(builtins, base_name, Exception)
            if not (isinstance(base, type) and issubclass(base, Exception)):
                base = Exception  # BaseException outcomes (skip, exit) become plain errors
            self.remote_classes[handle] = type(name, (base,), {"__module__": "artifact"})
        return self.remote_classes[handle]


_TAGS: dict[type, str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}


def _base(value: Any) -> type:
    for cls in (list, tuple, frozenset, set):
        if isinstance(value, cls):
            return cls
    raise TypeError(type(value).__name__)


def _builtin_base(cls: type) -> type:
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            return klass
    return Exception


def connect() -> socket.socket:
    """This process's end of the link the host opened for it."""
    return socket.socket(fileno=int(os.environ["DEEPREFLECT_LINK_FD"]))
