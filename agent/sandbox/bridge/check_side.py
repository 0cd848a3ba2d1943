"""The check's end of the link: it sends requests and reads their replies, and never serves a
request: no attribute of a check-side object is read, set or called on the artifact's behalf.

The one thing the artifact may ask for, and only while a request of the check is pending, is a
call of a callback the check itself passed in: arguments and result are plain data (or the
artifact's own objects), and nothing else of the callback (attributes, globals, closure)
exists on the artifact's side, which holds an opaque stub. Anything else from the artifact's
side (a request of its own, a reply to a request nobody made, malformed data, a closed link)
raises :class:`BridgeError` and **taints** the check: ``CheckSide.tainted`` names the reason
and the runner turns it into a failed verdict.

The artifact's exceptions are raised here as the builtin class or as a local class carrying
only the artifact class's name and bases; only ordinary errors cross as themselves: an exit,
a test-framework outcome, and a ``StopIteration`` that is not the answer to ``next`` (it
would end the check's own ``map``, ``zip`` or ``all`` early) become an
:class:`ArtifactError`. The check's own errors are never swallowed by artifact code: an
artifact's ``__exit__`` may suppress only what the artifact raised, and a failed assertion
inside a callback taints. A decision a handle refuses (``remote``) is recorded in
``CheckSide.refused``; a check with a refusal fails, whatever its code caught.
"""

from __future__ import annotations

import builtins
import socket
from collections.abc import Callable
from typing import Any, NoReturn

from .plain_data import as_int, as_list, as_text, decode_plain, encode_plain, plain_error
from .remote import HandleRefused, Remote
from .wire import BridgeError, Wire

_NOT_RAISED_AS_IS = {"SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopAsyncIteration"}
MAX_REFUSALS = 5
MAX_LABEL = 80


class ArtifactExit(Exception):
    """The artifact called ``sys.exit`` or raised another process-ending exception."""


class ArtifactError(RuntimeError):
    """An exception of the artifact's that would steer the check's flow if it crossed as
    itself (a ``StopIteration`` from anything but ``next``)."""


class CheckSide:
    """The check's end: sends requests, reads their replies, serves nothing but its callbacks."""

    def __init__(self, sock: socket.socket) -> None:
        self.wire = Wire(sock)
        self.tainted: list[str] = []
        self.refused: list[str] = []
        self._next_id = 0
        self._raised: dict[int, BaseException] = {}
        self._callbacks: dict[int, Callable[..., Any]] = {}
        self._callback_ids: dict[int, int] = {}
        self._classes: dict[int, type[BaseException]] = {}
        self._class_ids: dict[type, int] = {}

    def request(self, op: str, /, *args: Any, **kwargs: Any) -> Any:
        """Ask the artifact's side; run the callbacks it calls meanwhile; return its answer."""
        if self.tainted:
            raise BridgeError(f"the link is closed: {self.tainted[0]}")
        self._next_id += 1
        number = self._next_id
        encoded = self.encode((list(args), kwargs))
        try:
            message = self._exchange({"kind": "request", "id": number, "op": op, "args": encoded})
        except BridgeError as exc:
            self._taint(str(exc))
            raise
        try:
            if message.get("ok") is True:
                return self.decode(message.get("value"))
            failure = self._exception(message.get("error"))
        except BridgeError as exc:
            self._taint(str(exc))
            raise
        if isinstance(failure, StopIteration | StopAsyncIteration) and (
            op != "apply" or not args or args[0] != "next"
        ):
            failure = ArtifactError(
                f"the artifact raised {type(failure).__name__} from a call that was not "
                f"next(): {failure}"
            )
        self._raised[id(failure)] = failure
        raise failure

    def refuse(self, line: str) -> NoReturn:
        """Fail closed on a decision a handle cannot take part in: the line is the check's
        evidence, and the check fails even if its code catches the error."""
        if line not in self.refused and len(self.refused) < MAX_REFUSALS:
            self.refused.append(line)
        raise HandleRefused(line)

    def raised_by_artifact(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an exception a reply of the artifact's raised here."""
        return self._raised.get(id(exc)) is exc

    def exception_class_id(self, cls: type) -> int | None:
        """The artifact's id of a stand-in exception class, for its ``__exit__``."""
        return self._class_ids.get(cls)

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its reply, after running the callbacks the artifact calls."""
        try:
            self.wire.send(request)
            while True:
                message = self.wire.receive()
                if message["kind"] == "callback":
                    self._run_callback(message)
                    continue
                if message["kind"] != "reply" or type(message.get("id")) is not int:
                    self._violation(f"unexpected {message['kind']!r} message while waiting")
                if message["id"] != request["id"]:
                    self._violation(f"a reply to request {message['id']}, not {request['id']}")
                return message
        except OSError as exc:
            raise BridgeError(f"the link failed: {exc}") from exc

    def finish(self) -> None:
        """Taint the check if the artifact's side said anything nobody asked for."""
        try:
            self.wire.sock.setblocking(False)
            pending = self.wire.sock.recv(1)
        except (BlockingIOError, OSError):
            pending = b""
        if pending:
            self._taint("the artifact's process sent a message nobody asked for")

    def _taint(self, reason: str) -> None:
        if reason not in self.tainted:
            self.tainted.append(reason)

    def _violation(self, what: str) -> NoReturn:
        raise BridgeError(f"protocol violation by the artifact's process: {what}")

    # -- callbacks -----------------------------------------------------------------------
    def _run_callback(self, message: dict[str, Any]) -> None:
        """The one request served: a callback this side registered, plain data in and out."""
        callback = self._callbacks.get(message.get("callback"))  # type: ignore[arg-type]
        if callback is None or type(message.get("id")) is not int:
            self._violation("a request that is not a call of a callback the check passed in")
        args = self._strict(message.get("args"))
        kwargs = self._strict(message.get("kwargs"))
        if (
            type(args) is not list
            or type(kwargs) is not dict
            or any(type(k) is not str for k in kwargs)
        ):
            self._violation("a callback call with malformed arguments")
        reply: dict[str, Any] = {"kind": "callback_reply", "id": message["id"]}
        try:
            result = callback(*args, **kwargs)
            reply.update(ok=True, value=encode_plain(result, self._refuse))
        except BridgeError:
            raise
        except BaseException as exc:
            if isinstance(exc, AssertionError) or not isinstance(exc, Exception):
                # the artifact must not be able to swallow the check's own failure
                self._taint(f"the check failed inside a callback: {type(exc).__name__}: {exc}")
            reply.update(ok=False, error=plain_error(exc))
        self.wire.send(reply)

    def _strict(self, data: Any) -> Any:
        """Callback arguments: plain data and the artifact's own objects, nothing of ours."""

        def only_handles(item: list[Any], depth: int) -> Any:
            if item[0] != "h":
                self._violation(f"a callback argument tagged {item[0]!r}")
            return self._rebuild(item, depth)

        return decode_plain(data, only_handles)

    def _refuse(self, value: Any, depth: int) -> Any:
        if isinstance(value, Remote) and value._deepreflect_side is self:
            return ["r", value._deepreflect_id]
        msg = f"a callback returned a {type(value).__name__}: only plain data may go back"
        raise TypeError(msg)

    # -- values --------------------------------------------------------------------------
    def encode(self, value: Any) -> Any:
        """Plain data, the artifact's own objects sent back, and callbacks; nothing else."""
        return encode_plain(value, self._encode_other)

    def _encode_other(self, value: Any, depth: int) -> Any:
        if isinstance(value, Remote) and value._deepreflect_side is self:
            return ["r", value._deepreflect_id]
        if isinstance(value, type) and value in self._class_ids:
            return ["r", self._class_ids[value]]  # a stand-in goes home as the real class
        if callable(value) and not isinstance(value, type | Remote):
            number = self._callback_ids.setdefault(id(value), len(self._callbacks) + 1)
            self._callbacks[number] = value
            return ["c", number]
        msg = (
            f"a {type(value).__name__} of the check cannot be given to the artifact: only plain"
            " data, the artifact's own objects and functions cross"
        )
        raise TypeError(msg)

    def decode(self, data: Any) -> Any:
        return decode_plain(data, self._rebuild)

    def _rebuild(self, data: list[Any], depth: int) -> Any:
        tag = data[0]
        try:
            if tag == "h":  # a new handle per arrival: identity is not the artifact's word
                return Remote(self, as_int(data[1]), _label(data[2]))
            if tag == "e":
                return self._stand_in(data[1:])
            if tag == "c" and data[1] in self._callbacks:
                return self._callbacks[data[1]]
        except (TypeError, IndexError) as exc:
            raise BridgeError(f"malformed {tag!r} value on the link") from exc
        raise BridgeError(f"unknown value tag {tag!r} on the link")

    # -- exceptions ----------------------------------------------------------------------
    def _exception(self, error: Any) -> BaseException:
        if not isinstance(error, dict):
            self._violation("a failure reply without an error")
        try:
            exc = self._rebuild_exception(error)
        except (TypeError, ValueError) as failure:
            raise BridgeError(f"a malformed error on the link: {failure}") from failure
        frames = error.get("frames")
        exc.deepreflect_frames = frames if isinstance(frames, list) else []  # type: ignore[attr-defined]
        return exc

    def _rebuild_exception(self, error: dict[str, Any]) -> BaseException:
        name, message = as_text(error.get("type")), as_text(error.get("message"))[:4000]
        builtin = getattr(builtins, name, None)
        args = self._decode_or(error.get("args"), [message])
        args = args if type(args) is list else [message]
        exc: BaseException | None = None
        if error.get("builtin") is True and name in _NOT_RAISED_AS_IS:
            return ArtifactExit(f"the artifact raised {name}: {message}")
        if (
            error.get("builtin") is True
            and isinstance(builtin, type)
            and issubclass(builtin, Exception)
        ):
            for attempt in (args, [message]):
                try:
                    exc = builtin(*attempt)
                    break
                except Exception:
                    continue
        if exc is None:
            cls = self._stand_in(error.get("class"))
            try:
                exc = cls(*args)
            except Exception:
                exc = cls(message)
            exc.deepreflect_message = message  # type: ignore[attr-defined]
        attributes = self._decode_or(error.get("attributes"), {})
        for key, value in attributes.items() if type(attributes) is dict else ():
            if isinstance(key, str) and not key.startswith("__"):
                try:
                    setattr(exc, key, value)
                except (AttributeError, TypeError):
                    pass
        return exc

    def _decode_or(self, data: Any, default: Any) -> Any:
        try:
            return self.decode(data) if data is not None else default
        except BridgeError:
            return default

    def _stand_in(self, descriptor: Any) -> type[BaseException]:
        """One local class per artifact exception class and its artifact bases, so
        ``pytest.raises(TheirError)`` can name it; it carries only names."""
        if not isinstance(descriptor, list) or len(descriptor) != 4:
            self._violation("a malformed exception class")
        number, name, chain, base_name = descriptor
        base = getattr(builtins, str(base_name), Exception)
        if not (isinstance(base, type) and issubclass(base, Exception)):
            base = Exception  # BaseException outcomes (skip, exit) become plain errors
        parent: type[BaseException] = base
        links = [as_list(link) for link in as_list(chain)][:16]
        for link_id, link_name in reversed(
            [(as_int(n), as_text(s)) for n, s in [[number, name], *links]]
        ):
            if link_id not in self._classes:
                cls = type(
                    link_name[:200], (parent,), {"__module__": "artifact", "__str__": _stand_in_str}
                )
                self._classes[link_id] = cls
                self._class_ids[cls] = link_id
            parent = self._classes[link_id]
        return parent


def _label(name: Any) -> str:
    """The artifact's name for a class, as a short identifier-like label for evidence."""
    text = "".join(c for c in as_text(name)[:MAX_LABEL] if c.isalnum() or c in "_.")
    return text or "?"


def _stand_in_str(self: BaseException) -> str:
    return str(getattr(self, "deepreflect_message", BaseException.__str__(self)))
