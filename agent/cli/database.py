"""The threads database as the commands open it, and a thread's state read from it.

Reading opens it read-only (nothing is created or written); a thread that is missing or
cannot be decoded is a usage error (exit 2) that names the thread and the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from agent.runs.runner import Graph


def where(db: str | None) -> str:
    """The database's location as printed (a URL without its password)."""
    from agent.store.checkpointers import db_location, shown_location

    return shown_location(db_location(db))


@contextmanager
def reading(db: str | None, thread_id: str | None = None) -> Iterator[BaseCheckpointSaver]:
    """The database opened read-only: nothing is created or written. With ``thread_id``,
    a missing database is that thread not being found."""
    from agent.errors import ConfigError
    from agent.store.checkpointers import open_checkpointer
    from agent.store.database_errors import NoThreads
    from agent.store.threads import plain_serde

    try:
        with open_checkpointer(db, write=False, serde=plain_serde()) as saver:
            yield saver
    except NoThreads as exc:
        if thread_id is None:
            raise
        msg = f"thread {thread_id!r} not found in {where(db)} ({exc})"
        raise ConfigError(msg) from exc


@contextmanager
def writing(db: str | None) -> Iterator[BaseCheckpointSaver]:
    """The database opened for deleting; a SQLite file that does not exist is not created."""
    from agent.store.checkpointers import db_location, open_checkpointer
    from agent.store.database_errors import NoThreads
    from agent.store.pg_url import is_postgres_url

    location = db_location(db)
    if not is_postgres_url(location) and not Path(location).exists():
        msg = f"there is no threads database at {location}: nothing has run with it yet"
        raise NoThreads(msg)
    with open_checkpointer(db) as saver:
        yield saver


def thread_state(saver: BaseCheckpointSaver, thread_id: str, db: str | None) -> dict[str, Any]:
    """The thread's state as stored, decoded without the graph (for show and export)."""
    from agent.store.threads import thread_values

    return _decoded(lambda: thread_values(saver, thread_id), thread_id, db)


def graph_state(graph: Graph, thread_id: str, db: str | None) -> dict[str, Any]:
    """The thread's state through the graph (for resume); a usage error when it is missing
    or cannot be decoded."""
    from agent.runs.runner import thread_config

    return _decoded(lambda: graph.get_state(thread_config(thread_id)).values, thread_id, db)


def _decoded(read: Callable[[], Any], thread_id: str, db: str | None) -> dict[str, Any]:
    from agent.errors import ConfigError, describe
    from agent.store.database_errors import is_database_error

    try:
        values = read()
    except Exception as exc:
        if is_database_error(exc):
            raise  # the database, not this thread: failures.failure names it
        msg = f"thread {thread_id!r} in {where(db)} cannot be read: {describe(exc)}"
        raise ConfigError(msg) from exc
    if not values:
        raise not_found(thread_id, db)
    return dict(values)


def not_found(thread_id: str, db: str | None) -> Exception:
    """The usage error for a thread the database does not hold."""
    from agent.errors import ConfigError

    msg = f"thread {thread_id!r} not found in {where(db)}"
    return ConfigError(msg)
