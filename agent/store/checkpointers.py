"""Where threads live: opening a checkpointer for a SQLite file or a PostgreSQL URL, with a
clear usage error (naming the file, never a password) for a damaged, read-only, missing or
unreachable database."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from agent.store.pg_url import is_postgres_url, redact
from agent.store.postgres_setup import open_async_postgres, open_postgres
from agent.store.sqlite_files import async_sqlite_saver, sqlite_saver

DEFAULT_DB = ".deepreflect/threads.sqlite"


def db_location(db: str | None = None) -> str:
    """Where threads live: ``--db``, then ``DEEPREFLECT_DB``, then ``.deepreflect/``."""
    return db or os.environ.get("DEEPREFLECT_DB") or DEFAULT_DB


def shown_location(location: str) -> str:
    """``location`` as messages may print it: a PostgreSQL URL loses its password."""
    return redact(location) if is_postgres_url(location) else location


@contextmanager
def open_checkpointer(
    db: str | None = None, *, write: bool = True, serde: SerializerProtocol | None = None
) -> Iterator[BaseCheckpointSaver]:
    """A checkpointer for ``db``: a SQLite file path, or a ``postgresql://`` URL.

    ``write=False`` is for callers that only read (``show``, ``threads``): a SQLite file is
    then opened read-only, so nothing is created or written (a missing one is
    :class:`~agent.store.database_errors.NoThreads`). ``serde`` replaces LangGraph's
    serializer. Anything wrong with the database itself is a
    :class:`~agent.errors.ConfigError` that names it and says what is wrong.
    """
    location = db_location(db)
    if is_postgres_url(location):
        with open_postgres(location) as pg_saver:
            if serde is not None:
                pg_saver.serde = serde
            yield pg_saver
        return
    saver = sqlite_saver(Path(location), write=write)
    if serde is not None:
        saver.serde = serde
    try:
        yield saver
    finally:
        saver.conn.close()


@asynccontextmanager
async def open_async_checkpointer(
    db: str | None = None, *, write: bool = True
) -> AsyncIterator[BaseCheckpointSaver]:
    """:func:`open_checkpointer` for ``await graph.ainvoke(...)``: an ``AsyncSqliteSaver``
    (aiosqlite) for a SQLite file, an ``AsyncPostgresSaver`` for a ``postgresql://`` URL,
    refused with the same :class:`~agent.errors.ConfigError` messages for the same problems."""
    location = db_location(db)
    if is_postgres_url(location):
        async with open_async_postgres(location) as pg_saver:
            yield pg_saver
        return
    saver = await async_sqlite_saver(Path(location), write=write)
    try:
        yield saver
    finally:
        await saver.conn.close()
