"""Resume a paused thread through the CLI and stop mid-run, holding its lease.

    python -m tests.lease_worker DB THREAD_ID ANSWER [MODE]

Used by tests/integration/test_lease.py. It runs ``deepreflect resume THREAD_ID ANSWER
--json`` in this process (so its exit code and error line are the CLI's own) and stops
after the first node update, lease held:

- ``wait`` (the default): prints ``leased`` and waits for a line on stdin, so a second
  writer certainly overlaps it (or the test freezes or kills it there); the heartbeat
  keeps running meanwhile.
- ``stop-in-write``: prints ``writing`` and stops itself (SIGSTOP) inside the next fenced
  checkpoint write, after its transaction took the write lock and while the fence is being
  checked; the test continues it (SIGCONT).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import agent.runs.runner
import agent.store.fencing
from agent.cli import main as cli_main


def _pause_after_first_update(pause: Any) -> None:
    reported = agent.runs.runner._reported
    done = False

    def first_then_pause(chunk: Any, lease: Any, on_update: Any) -> None:
        nonlocal done
        reported(chunk, lease, on_update)
        if not done:
            done = True
            pause()

    agent.runs.runner._reported = first_then_pause


def _wait_for_a_line() -> None:
    print("leased", flush=True)
    sys.stdin.readline()


def _stop_inside_the_next_fenced_write() -> None:
    armed = False
    token_of = agent.store.fencing._token_of

    def stopping_token_of(scope: Any) -> Any:
        token = token_of(scope)

        def checked(thread_id: Any) -> Any:
            nonlocal armed
            if armed:  # called by the fence trigger: the write's transaction is open
                armed = False
                print("writing", flush=True)
                os.kill(os.getpid(), signal.SIGSTOP)
            return token(thread_id)

        return checked

    def arm() -> None:
        nonlocal armed
        armed = True

    agent.store.fencing._token_of = stopping_token_of
    _pause_after_first_update(arm)


def main(db: str, thread_id: str, answer: str, mode: str = "wait") -> int:
    if mode == "wait":
        _pause_after_first_update(_wait_for_a_line)
    elif mode == "stop-in-write":
        _stop_inside_the_next_fenced_write()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return cli_main(["resume", thread_id, answer, "--json", "--db", db])


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
