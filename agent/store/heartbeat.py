"""Keeping a lease: a thread that renews it every third of its time to live, and marks it
lost the first time a renewal finds another writer's token in its place."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable


def heartbeat(
    renew: Callable[[float], bool], lost: threading.Event, ttl_s: float, name: str
) -> Callable[[], None]:
    """Call ``renew(expires_at)`` every ``ttl_s / 3`` until the returned ``stop`` is called;
    a renewal that returns False sets ``lost`` and ends the heartbeat."""
    stopped = threading.Event()

    def beat() -> None:
        while not stopped.wait(ttl_s / 3):
            try:
                renewed = renew(time.time() + ttl_s)
            except sqlite3.Error:  # locked for a while: try again at the next beat
                continue
            if not renewed:
                lost.set()
                return

    thread = threading.Thread(target=beat, name=name, daemon=True)
    thread.start()

    def stop() -> None:
        stopped.set()
        thread.join()

    return stop
