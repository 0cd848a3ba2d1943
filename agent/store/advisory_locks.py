"""PostgreSQL leases: a session-level advisory lock on the saver's connection. The server
drops it when that connection dies: at once for a killed process, within about 25 seconds
for a machine that vanished (the session's TCP keepalive), without any timeout of ours. The
fencing token is a row of ``deepreflect_leases`` taken from a sequence once the lock is held.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine
from contextlib import nullcontext, suppress
from typing import Any, TypeVar

from agent.errors import ConfigError
from agent.store.fencing import LEASE_TABLE
from agent.store.holders import Holder, ThreadBusy

_T = TypeVar("_T")
_TOKENS = "deepreflect_lease_tokens"  # the sequence tokens come from

# The server keeps a session, and its locks, until it notices the client is gone: at once
# for a killed process, but only after TCP keepalive for a machine that lost power or its
# network (hours by default). These session settings make that about 25 seconds.
_TRY_LOCK = (
    "SELECT set_config('tcp_keepalives_idle', '10', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false), "
    "pg_try_advisory_lock(%s)"
)
_LEASES = (
    f"CREATE TABLE IF NOT EXISTS {LEASE_TABLE} (thread_id TEXT PRIMARY KEY, token BIGINT NOT NULL)",
    f"CREATE SEQUENCE IF NOT EXISTS {_TOKENS}",
)
_TAKE = (
    f"INSERT INTO {LEASE_TABLE} (thread_id, token) VALUES (%s, nextval('{_TOKENS}')) "
    "ON CONFLICT (thread_id) DO UPDATE SET token = EXCLUDED.token RETURNING token"
)
_DROP = f"DELETE FROM {LEASE_TABLE} WHERE thread_id = %s AND token = %s"
# A bigint advisory key is held as (classid, objid) = its high and low 32 bits, objsubid 1.
_HOLDER = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND classid = %s::bigint::oid AND objid = %s::bigint::oid"
)


def advisory_key(thread_id: str) -> int:
    """The signed 64-bit key of the thread's PostgreSQL advisory lock, equal in every process."""
    digest = hashlib.blake2b(f"deepreflect-lease:{thread_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresLeases:
    """A session-level advisory lock, held on the saver's connection (or one from its pool).

    The saver's own connection lives as long as the process uses the saver, so it needs no
    connection of its own (PostgreSQL's connection slots are scarce under load). A session
    may take one advisory lock twice, which ``agent.store.lease.hold``'s in-process lock
    rules out.
    """

    renews = False

    def __init__(self, saver: Any) -> None:
        from psycopg import Connection

        self.saver = saver
        self.pool = None if isinstance(saver.conn, Connection) else saver.conn
        self.scope = ("postgres", id(saver.conn))
        self.session: Any = None

    def _execute(self, sql: str, params: tuple[Any, ...]) -> Any:
        from psycopg.rows import tuple_row

        lock = self.saver.lock if self.pool is None else nullcontext()
        with lock:
            try:
                with self.session.cursor(row_factory=tuple_row) as cur:
                    cur.execute(sql, params)
                    if self.pool is None and self.saver.pipe is not None:
                        self.saver.pipe.sync()  # a pipelined result arrives at a sync
                    row = cur.fetchone() if cur.description else None
            except BaseException:
                if not self.session.autocommit and not self.session.closed:
                    self.session.rollback()
                raise
            if not self.session.autocommit:  # a session lock outlives the transaction,
                self.session.commit()  # which must not stay open for the whole run
        return row[-1] if row else None

    def _ensure_table(self) -> None:
        import psycopg

        for statement in _LEASES:
            try:
                self._execute(statement, ())
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                pass  # another process created it at the same moment

    def acquire(self, thread_id: str, me: Holder) -> int:
        self.session = self.saver.conn if self.pool is None else self.pool.getconn()
        locked = False
        try:
            locked = bool(self._execute(_TRY_LOCK, (advisory_key(thread_id),)))
            if not locked:
                raise ThreadBusy(thread_id)
            self._ensure_table()
            # the lock is held: whoever held the thread before is gone, so its token ends
            return int(self._execute(_TAKE, (thread_id,)))
        except BaseException:
            if locked:
                self.release(thread_id, me, 0)
            else:
                self._return_session()
            raise

    def renew(self, thread_id: str, me: Holder, token: int) -> bool:
        return True

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        import psycopg

        # If the connection died the server has already dropped the lock with it.
        with suppress(psycopg.Error):
            if token:
                self._execute(_DROP, (thread_id, token))
        with suppress(psycopg.Error):
            self._execute("SELECT pg_advisory_unlock(%s)", (advisory_key(thread_id),))
        self._return_session()

    def _return_session(self) -> None:
        if self.pool is not None and self.session is not None:
            self.pool.putconn(self.session)
        self.session = None


class AsyncPostgresLeases:
    """:class:`PostgresLeases` for an ``AsyncPostgresSaver``: the same advisory lock and token
    row, taken on the saver's async connection (or one from its async pool), so a process of
    either kind is busy while the other holds the thread."""

    renews = False

    def __init__(self, saver: Any) -> None:
        from psycopg import AsyncConnection

        self.saver = saver
        self.pool = None if isinstance(saver.conn, AsyncConnection) else saver.conn
        self.scope = ("postgres", id(saver.conn))
        self.session: Any = None

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> Any:
        from psycopg.rows import tuple_row

        lock = self.saver.lock if self.pool is None else nullcontext()
        async with lock:
            try:
                async with self.session.cursor(row_factory=tuple_row) as cur:
                    await cur.execute(sql, params)
                    if self.pool is None and self.saver.pipe is not None:
                        await self.saver.pipe.sync()  # a pipelined result arrives at a sync
                    row = await cur.fetchone() if cur.description else None
            except BaseException:
                if not self.session.autocommit and not self.session.closed:
                    await self.session.rollback()
                raise
            if not self.session.autocommit:  # see PostgresLeases._execute
                await self.session.commit()
        return row[-1] if row else None

    async def _ensure_table(self) -> None:
        import psycopg

        for statement in _LEASES:
            try:
                await self._execute(statement, ())
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                pass  # another process created it at the same moment

    async def acquire(self, thread_id: str, me: Holder) -> int:
        self.session = self.saver.conn if self.pool is None else await self.pool.getconn()
        locked = False
        try:
            locked = bool(await self._execute(_TRY_LOCK, (advisory_key(thread_id),)))
            if not locked:
                raise ThreadBusy(thread_id)
            await self._ensure_table()
            return int(await self._execute(_TAKE, (thread_id,)))
        except BaseException:
            if locked:
                await self.release(thread_id, me, 0)
            else:
                await self._return_session()
            raise

    async def release(self, thread_id: str, me: Holder, token: int) -> None:
        import psycopg

        with suppress(psycopg.Error):  # a dead connection took the lock with it
            if token:
                await self._execute(_DROP, (thread_id, token))
        with suppress(psycopg.Error):
            await self._execute("SELECT pg_advisory_unlock(%s)", (advisory_key(thread_id),))
        await self._return_session()

    async def _return_session(self) -> None:
        if self.pool is not None and self.session is not None:
            await self.pool.putconn(self.session)
        self.session = None


class AsyncPostgresLeasesFromSync:
    """:class:`AsyncPostgresLeases` for sync code: each call runs on the saver's event loop
    and waits, as the saver's own sync methods do, so only from another thread than that
    loop's (on it, waiting would block the loop: async code holds threads with ``ahold``)."""

    renews = False

    def __init__(self, saver: Any) -> None:
        self.leases = AsyncPostgresLeases(saver)
        self.scope = self.leases.scope
        self.loop = saver.loop

    def _wait(self, call: Coroutine[Any, Any, _T]) -> _T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            call.close()
            msg = (
                "a thread of an AsyncPostgresSaver is leased from its own event loop: use "
                "agent.arun / agent.aresume (or agent.store.lease.ahold), not their sync forms"
            )
            raise ConfigError(msg)
        return asyncio.run_coroutine_threadsafe(call, self.loop).result()

    def acquire(self, thread_id: str, me: Holder) -> int:
        return self._wait(self.leases.acquire(thread_id, me))

    def renew(self, thread_id: str, me: Holder, token: int) -> bool:
        return True

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        self._wait(self.leases.release(thread_id, me, token))


def postgres_holder(saver: Any, thread_id: str) -> str | None:
    """Who holds the thread's advisory lock, read from ``pg_locks``; None when nobody does."""
    from psycopg import Connection
    from psycopg.rows import tuple_row

    key = advisory_key(thread_id) & 0xFFFF_FFFF_FFFF_FFFF
    params = (key >> 32, key & 0xFFFF_FFFF)
    if isinstance(saver.conn, Connection):
        with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(_HOLDER, params).fetchone()
    else:
        with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(_HOLDER, params).fetchone()
    return f"PostgreSQL session {row[0]} is running or resuming it" if row else None
