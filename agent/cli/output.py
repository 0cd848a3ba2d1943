"""What every command prints through, and the exit code a Result stops with."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.vocabulary import Status

if TYPE_CHECKING:
    from agent.graph.result import Result

EXIT_CODES: dict[str, int] = {  # a Result's status -> its exit code
    Status.SUCCESS: 0,
    Status.AWAITING_INPUT: 3,
    Status.BUDGET_EXHAUSTED: 3,
    Status.FAILED: 1,
}
EXIT_FAILED, EXIT_USAGE, EXIT_BUSY, EXIT_INTERRUPTED = 1, 2, 4, 130


class PipeConsole(Console):
    """rich's console, except that a reader gone (``| head``) is a BrokenPipeError for
    ``main`` to end quietly with 0, not rich's own ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    from agent.runs.progress import line

    _stderr().print(line(("warning", "yellow"), ": ", message))


def error_line(label: str, message: str, location: str | None = None) -> None:
    """``label: message`` on one line of stderr, a database URL's password scrubbed."""
    from agent.runs.progress import line
    from agent.store.pg_url import scrub

    one_line = " ".join((scrub(message, location) if location else message).split())
    _stderr().print(line((label, "red"), ": ", one_line))


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout, as ``--json`` prints it."""
    print(json.dumps(value, indent=2, default=str))


def finish(console: Console, result: Result, as_json: bool) -> int:
    """Print a run's Result and return the exit code its status stands for."""
    from agent.runs.progress import print_result

    if as_json:
        print_json(result)
    else:
        print_result(console, result)
    return EXIT_CODES.get(result["status"], EXIT_FAILED)
