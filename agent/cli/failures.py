"""How an error that ended a command is reported: its exit code, label and message.

A run that stopped on its thread is told apart from an error before it started (a bad
database, a busy thread): only the first leaves a checkpoint worth resuming.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from agent.cli.output import EXIT_BUSY, EXIT_FAILED, EXIT_USAGE, warn


class RunStopped(Exception):
    """An error raised while a run was executing on a thread (the cause is chained).

    Only then is the thread's checkpoint worth resuming; an error before the run started
    (a bad database, a busy thread) or after it is reported as what it is.
    """

    def __init__(self, thread_id: str) -> None:
        super().__init__(thread_id)
        self.thread_id = thread_id


@contextmanager
def running(thread_id: str) -> Iterator[None]:
    """Mark errors of the block as a run that stopped on ``thread_id``.

    A usage error or a busy thread keeps its own meaning: nothing ran. A run under the
    weaker process sandbox says so first, on stderr (``--json`` output stays clean).
    """
    from agent.errors import ConfigError
    from agent.sandbox import weaker_isolation_warning
    from agent.store.holders import ThreadBusy

    if warning := weaker_isolation_warning():
        warn(warning)
    try:
        yield
    except (ConfigError, ThreadBusy):
        raise
    except Exception as exc:
        if (lost := _lease_lost(exc)) is not None:
            raise lost from None  # another writer has the thread: not a stopped run
        raise RunStopped(thread_id) from exc


def _lease_lost(exc: BaseException) -> Exception | None:
    """The :class:`~agent.store.lease.LeaseLost` in ``exc``'s chain, if a lost lease ended it."""
    from agent.errors import exception_chain
    from agent.store.fencing import LeaseLost

    return next((link for link in exception_chain(exc) if isinstance(link, LeaseLost)), None)


def failure(exc: BaseException, location: str) -> tuple[int, str, str]:
    """The exit code, label and message for an error that ended a command."""
    from agent.errors import ConfigError, classify, describe
    from agent.store.database_errors import database_problem, is_damaged, is_database_error
    from agent.store.holders import ThreadBusy

    if isinstance(exc, ThreadBusy):
        return EXIT_BUSY, "error", str(exc)
    if (lost := _lease_lost(exc)) is not None:
        return EXIT_BUSY, "error", str(lost)
    if isinstance(exc, ConfigError):
        return EXIT_USAGE, "error", str(exc)
    cause = exc.__cause__ if isinstance(exc, RunStopped) else exc
    if cause is not None and is_database_error(cause):
        # Outside a run the database is the problem; inside one only a damaged file is
        # (resuming continues a run that lost its connection, not one whose file is corrupt).
        if not isinstance(exc, RunStopped) or is_damaged(cause):
            return EXIT_USAGE, "error", str(database_problem(location, cause))
    if isinstance(exc, RunStopped) and cause is not None:
        hint = f"; the checkpoint is kept: `deepreflect resume {exc.thread_id}` continues it"
        return EXIT_FAILED, "run stopped", f"({classify(cause).value}): {describe(cause)}{hint}"
    return EXIT_FAILED, "error", f"({classify(exc).value}): {describe(exc)}"


def interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C left: a run's checkpoint is kept and the command that continues it."""
    thread_id = getattr(args, "thread", None) or getattr(args, "thread_id", None)
    if args.command in ("demo", "run", "resume") and thread_id:
        return f"the checkpoint is kept: `deepreflect resume {thread_id}` continues the run"
    return "nothing was changed"
