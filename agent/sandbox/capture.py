"""Read a run's output pipes until it ends, keeping the head and the tail of each stream.

The reading loop is also where a run is judged over: its main jobs exited, time ran out, the
output flooded, or the watcher saw too much memory or too many processes.
"""

from __future__ import annotations

import os
import selectors
import time
from collections.abc import Sequence
from typing import IO, cast

from agent.sandbox.processes import WATCH_EVERY_S, Watch, has_exited

OUTPUT_FLOOD_BYTES = 4 * 1024 * 1024  # more output than this (all streams) kills the run
_EXIT_GRACE_S = 0.2  # after the main jobs exit, how long to wait for their children's output


class Capture:
    """Keep the head and the tail of a stream: the last lines often carry the verdict."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.keep = 2 * max_chars + 4  # bytes per end; UTF-8 needs up to 4 per char
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        """Take the next bytes of the stream."""
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: -self.keep]

    def text(self) -> str:
        """The stream as text, ``[truncated]`` in the middle when it was longer than kept."""
        if self.total == len(self.head) + len(self.tail):  # nothing dropped yet
            first = last = (self.head + self.tail).decode("utf-8", errors="replace")
            if len(first) <= self.max_chars:
                return first
        else:
            first = self.head.decode("utf-8", errors="replace")
            last = self.tail.decode("utf-8", errors="replace")
        half = max(self.max_chars // 2, 1)
        return f"{first[:half]}\n[truncated]\n{last[-half:]}"


def collect(
    mains: Sequence[int],
    captures: dict[IO[bytes], Capture],
    deadline: float,
    watch: Watch,
) -> str | None:
    """Read every pipe until the ``mains`` processes are gone, time runs out, output floods or
    the watcher objects. Returns ``"timeout"``, ``"output"``, ``"memory"``, ``"killed"`` or None."""
    selector = selectors.DefaultSelector()
    for pipe in captures:
        selector.register(pipe, selectors.EVENT_READ)
    exited_at = None
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if verdict := watch.over(now):
                return verdict
            if exited_at is None and all(has_exited(pid) for pid in mains):
                exited_at = now
            if exited_at is not None and (
                now - exited_at > _EXIT_GRACE_S or not selector.get_map()
            ):
                return None  # leftover children may hold pipes; the kill ends them
            if not selector.get_map():
                time.sleep(0.01)
                continue
            if _read_ready(selector, captures, min(deadline - now, WATCH_EVERY_S)):
                return "output"
    finally:
        selector.close()


def _read_ready(
    selector: selectors.BaseSelector, captures: dict[IO[bytes], Capture], timeout: float
) -> bool:
    """Read what the pipes have within ``timeout``; True when the run's output flooded."""
    for key, _ in selector.select(timeout=timeout):
        chunk = os.read(key.fd, 65536)
        if not chunk:
            selector.unregister(key.fileobj)
            continue
        captures[cast(IO[bytes], key.fileobj)].add(chunk)
        if sum(c.total for c in captures.values()) > OUTPUT_FLOOD_BYTES:
            return True
    return False


def drain(captures: dict[IO[bytes], Capture], deadline: float) -> None:
    """Read what killed processes left in the pipes, then close them."""
    for pipe, capture in captures.items():
        os.set_blocking(pipe.fileno(), False)
        while time.monotonic() < deadline:
            try:
                chunk = os.read(pipe.fileno(), 65536)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if not chunk:
                break
            if capture.total < OUTPUT_FLOOD_BYTES:
                capture.add(chunk)
        pipe.close()
