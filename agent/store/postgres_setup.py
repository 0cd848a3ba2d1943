"""Opening a PostgreSQL threads database: a saver on the URL's server whose tables are set
up by one process at a time, refused with a usage error that never shows the password."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, cast

from agent.errors import ConfigError
from agent.store.database_errors import postgres_problem
from agent.store.pg_url import pg_conninfo

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection, Connection

_POSTGRES_EXTRA = "PostgreSQL threads need `pip install 'deepreflect[postgres]'`"
# Any fixed 64-bit key ("deeprflc"): processes opening one database take turns at setup().
_SETUP_LOCK = 0x6465_6570_7266_6C63


@contextmanager
def open_postgres(location: str) -> Iterator[PostgresSaver]:
    """A ``PostgresSaver`` on ``location``, its tables set up."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise ConfigError(_POSTGRES_EXTRA) from exc
    import psycopg

    with ExitStack() as stack:
        try:
            pg_saver = stack.enter_context(PostgresSaver.from_conn_string(pg_conninfo(location)))
            _setup(pg_saver)
        except psycopg.Error as exc:
            raise postgres_problem(location, exc) from exc
        yield pg_saver


@asynccontextmanager
async def open_async_postgres(location: str) -> AsyncIterator[AsyncPostgresSaver]:
    """:func:`open_postgres` for an ``AsyncPostgresSaver``."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ConfigError(_POSTGRES_EXTRA) from exc
    import psycopg

    async with AsyncExitStack() as stack:
        try:
            conninfo = pg_conninfo(location)
            pg_saver = await stack.enter_async_context(
                AsyncPostgresSaver.from_conn_string(conninfo)
            )
            await _asetup(pg_saver)
        except psycopg.Error as exc:
            raise postgres_problem(location, exc) from exc
        yield pg_saver


def _setup(saver: PostgresSaver, wait_s: float = 60) -> None:
    """``setup()`` by one process at a time: workers starting at once on a fresh database
    otherwise race to create the tables and record the migrations (duplicate key errors).

    The lock is polled, never waited for in the server: a migration creates an index
    CONCURRENTLY, which waits for every open transaction, a blocked lock request included.
    """
    from psycopg.rows import tuple_row

    # from_conn_string: one connection, not a pool, in autocommit: the lock is per session
    conn = cast("Connection[Any]", saver.conn)
    deadline = time.monotonic() + wait_s
    locked = False
    while not locked and time.monotonic() < deadline:
        with conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,)).fetchone()
        locked = bool(row and row[0])
        if not locked:
            time.sleep(0.05)
    try:
        saver.setup()
    finally:
        if locked:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


async def _asetup(saver: AsyncPostgresSaver, wait_s: float = 60) -> None:
    """:func:`_setup` on an async connection."""
    import asyncio

    from psycopg.rows import tuple_row

    conn = cast("AsyncConnection[Any]", saver.conn)
    deadline = time.monotonic() + wait_s
    locked = False
    while not locked and time.monotonic() < deadline:
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,))
            row = await cur.fetchone()
        locked = bool(row and row[0])
        if not locked:
            await asyncio.sleep(0.05)
    try:
        await saver.setup()
    finally:
        if locked:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
