"""Who holds a thread's lease: the holder's record, whether it still blocks other writers,
and :class:`ThreadBusy`, what a second writer gets while it does."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from agent.errors import AgentError, ErrorClass

HOST = socket.gethostname()
TRY_AGAIN = "try again when it has stopped"
_BUSY = f"another run or resume is writing to it; {TRY_AGAIN}"


class ThreadBusy(AgentError):
    """Another writer holds the thread: this call did nothing, so nothing was lost."""

    def __init__(self, thread_id: str, detail: str = _BUSY) -> None:
        super().__init__(ErrorClass.TRANSIENT, f"thread {thread_id} is busy: {detail}")
        self.thread_id = thread_id


@dataclass(frozen=True)
class Holder:
    """Who holds a lease and until when (wall-clock seconds, renewed by the heartbeat)."""

    owner: str
    host: str
    pid: int
    expires_at: float

    def describe(self) -> str:
        """The holder as people read it in the busy message."""
        return f"process {self.pid} on {self.host} is running or resuming it"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def holder_is_live(
    holder: Holder, *, now: float, host: str, alive: Callable[[int], bool] = pid_alive
) -> bool:
    """Whether ``holder`` still blocks other writers.

    A lease blocks while its time has not run out and, when it was taken on this host, while
    its process lives: a killed process frees it at once. Its time covers what the pid test
    cannot see: a holder on another host, or a pid reused by an unrelated process.
    """
    if holder.expires_at <= now:
        return False
    return holder.host != host or alive(holder.pid)
