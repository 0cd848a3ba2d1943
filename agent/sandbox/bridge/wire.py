"""The link itself: length-prefixed JSON messages over a stream socket, never pickle.

A message is a 4-byte big-endian length, then a JSON object with a ``kind``. Anything the
artifact's end sends that is not such a message raises :class:`BridgeError`.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

MAX_MESSAGE = 16 * 1024 * 1024


class BridgeError(RuntimeError):
    """The link broke or the artifact's side broke the protocol; the check is tainted."""


class Wire:
    """Length-prefixed JSON messages over a stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode()
        if len(data) > MAX_MESSAGE:
            msg = f"a value of {len(data)} bytes is too large to cross the sandbox boundary"
            raise ValueError(msg)
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def receive(self) -> dict[str, Any]:
        size = struct.unpack(">I", self._exact(4))[0]
        if size > MAX_MESSAGE:
            raise BridgeError("the artifact's process sent an oversized message")
        try:
            message = json.loads(self._exact(size))
        except (ValueError, RecursionError) as exc:
            raise BridgeError("the artifact's process sent a message that is not JSON") from exc
        if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
            raise BridgeError("the artifact's process sent a malformed message")
        return message

    def _exact(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                raise BridgeError("the artifact's process exited or closed the link mid-call")
            chunks += chunk
        return bytes(chunks)


def connect() -> socket.socket:
    """This process's end of the link the host opened for it."""
    return socket.socket(fileno=int(os.environ["DEEPREFLECT_LINK_FD"]))
