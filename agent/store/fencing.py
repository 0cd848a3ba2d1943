"""Fenced writes: a writer that lost its thread's lease writes nothing.

A lease can run out under a writer that is still alive (a stopped process, a paused
machine): another writer takes the thread over, and when the first wakes, any write of its
would land on top of the other's turn. So every write of a thread this process leases
checks the lease's fencing token (``agent.store.lease``) in the same transaction as the write:

- SQLite: temporary triggers on the saver's connection (and the journal's) run before
  every insert, update and delete of a leased thread's rows, inside the statement that
  writes them, so under the same write lock: a lease row without this process's token
  rolls the transaction back. The write raises :class:`LeaseLost`.
- PostgreSQL (``PostgresSaver`` and ``AsyncPostgresSaver``): the write runs in a transaction
  that first reads the lease row ``FOR SHARE`` (a takeover waits for the write to commit)
  and stops with ``LeaseLost`` when the token is not this process's; the connection holding
  the lease dying is a lost lease too.

:func:`fence` turns the saver a lease is taken on into its fenced subclass (in place, so
the graph that holds it, and LangGraph's shallow copies of it, write through the fence).
A thread this process does not lease is written as before: no lease, no fence.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import AgentError, ErrorClass

LEASE_TABLE = "deepreflect_leases"
PG_FENCE = f"SELECT token FROM {LEASE_TABLE} WHERE thread_id = %s FOR SHARE"
"""The lease row a fenced write reads in its own transaction; FOR SHARE makes a takeover
(which updates the row) wait until that write has committed."""


class LeaseLost(AgentError):
    """Another writer took the thread over while this one was stalled past its lease.

    Raised by the write that found the lease gone (or by the next check after the heartbeat
    found it), before anything of it is stored: the steps written while the lease was held
    stay, the other writer's turn stays intact, and this run stops."""

    def __init__(self, thread_id: str) -> None:
        msg = (
            f"thread {thread_id}: another writer took over this thread while this run was "
            "stalled, so this run stopped and wrote nothing more; "
            f"`deepreflect show {thread_id}` shows the thread as that writer left it"
        )
        super().__init__(ErrorClass.UNKNOWN, msg)
        self.thread_id = thread_id


class _Tokens:
    """The tokens of the leases this process holds, by ``(*store scope, thread_id)``."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()

    def hold(self, scope: tuple[Any, ...], thread_id: str, token: int) -> None:
        with self._lock:
            self._tokens[(*scope, thread_id)] = token

    def drop(self, scope: tuple[Any, ...], thread_id: str) -> None:
        with self._lock:
            self._tokens.pop((*scope, thread_id), None)

    def get(self, scope: tuple[Any, ...], thread_id: str) -> int | None:
        with self._lock:
            return self._tokens.get((*scope, thread_id))


fence_tokens = _Tokens()


def held_token(scope: tuple[Any, ...], thread_id: str) -> int | None:
    """The token this process's lease on ``thread_id`` in ``scope`` carries; None when this
    process holds none there (its writes to the thread are then not fenced: no lease, as
    under ``langgraph dev``, means nothing changes)."""
    return fence_tokens.get(scope, thread_id)


FENCE_FUNCTION = "deepreflect_fence"
LOST_MARK = "deepreflect: the lease of this thread is lost"
SCOPE_ATTR = "deepreflect_lease_scope"
"""The lease store's scope, set on a fenced saver: which tokens of this process fence it."""
_INSTALLED_ATTR = "deepreflect_fenced_conn"
SAVER_TABLES = ("checkpoints", "writes")

Scope = tuple[Any, ...]


# A connection knows the schema as it last read it; reading the schema table makes it notice
# the lease table another connection created, which the triggers name.
_SCHEMA_REFRESH = "SELECT 1 FROM main.sqlite_master LIMIT 1"


def sqlite_fence_triggers(table: str) -> list[str]:
    """The temporary triggers that refuse a stale writer's rows of ``table``.

    ``deepreflect_fence(thread)`` is this process's token for the thread (NULL when it holds
    no lease on it: nothing is checked). ``RAISE(ROLLBACK)`` undoes the whole transaction,
    so nothing of a refused write (an earlier row of the same batch included) is kept.
    """
    triggers = []
    for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
        thread = f"{row}.thread_id"
        triggers.append(
            f"CREATE TEMP TRIGGER IF NOT EXISTS deepreflect_fence_{table}_{event.lower()} "
            f"BEFORE {event} ON main.{table} "
            f"WHEN {FENCE_FUNCTION}({thread}) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
            f"main.{LEASE_TABLE} WHERE thread_id = {thread} "
            f"AND token = {FENCE_FUNCTION}({thread})) "
            f"BEGIN SELECT RAISE(ROLLBACK, '{LOST_MARK}'); END"
        )
    return triggers


def _token_of(scope: Scope) -> Callable[[Any], int | None]:
    def token(thread_id: Any) -> int | None:
        return held_token(scope, str(thread_id)) if thread_id is not None else None

    return token


def install_sqlite_fence(conn: sqlite3.Connection, scope: Scope, tables: tuple[str, ...]) -> None:
    """Fence writes to ``tables`` on ``conn`` by this process's tokens in ``scope``."""
    conn.execute(_SCHEMA_REFRESH).fetchall()
    conn.create_function(FENCE_FUNCTION, 1, _token_of(scope))
    for table in tables:
        for trigger in sqlite_fence_triggers(table):
            conn.execute(trigger)


def refused_by_fence(exc: BaseException) -> bool:
    """Whether ``exc`` is a fence trigger refusing a write."""
    return isinstance(exc, sqlite3.IntegrityError) and LOST_MARK in str(exc)


def _fence_token(saver: object, thread_id: Any) -> int | None:
    """This process's token for the thread a write of ``saver`` is for; None: not leased."""
    scope = getattr(saver, SCOPE_ATTR, None)
    if scope is None or thread_id is None:
        return None
    return held_token(scope, str(thread_id))


def _thread_of(config: Any) -> Any:
    return (config.get("configurable") or {}).get("thread_id")


class FencedSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` whose writes to a leased thread are fenced by the lease's token."""

    __slots__ = ()  # no state of its own: a saver's class can become this one

    def _fenced(self, thread_id: Any, write: Callable[[], Any]) -> Any:
        if _fence_token(self, thread_id) is None:
            return write()
        with self.lock:
            if getattr(self, _INSTALLED_ATTR, None) is not self.conn:
                install_sqlite_fence(self.conn, getattr(self, SCOPE_ATTR), SAVER_TABLES)
                setattr(self, _INSTALLED_ATTR, self.conn)
        try:
            return write()
        except sqlite3.IntegrityError as exc:
            if refused_by_fence(exc):
                raise LeaseLost(str(thread_id)) from exc
            raise

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        put = super().put
        return self._fenced(
            _thread_of(config), lambda: put(config, checkpoint, metadata, new_versions)
        )

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        put_writes = super().put_writes
        self._fenced(_thread_of(config), lambda: put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        delete_thread = super().delete_thread
        self._fenced(thread_id, lambda: delete_thread(thread_id))


def _async_sqlite_class() -> type | None:
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:  # aiosqlite is missing
        return None

    class FencedAsyncSqliteSaver(AsyncSqliteSaver):
        """An ``AsyncSqliteSaver`` whose writes to a leased thread are fenced."""

        __slots__ = ()  # no state of its own: a saver's class can become this one

        async def _fenced(self, thread_id: Any, write: Callable[[], Any]) -> Any:
            if _fence_token(self, thread_id) is None:
                return await write()
            async with self.lock:
                if getattr(self, _INSTALLED_ATTR, None) is not self.conn:
                    scope = getattr(self, SCOPE_ATTR)
                    await self.conn.execute_fetchall(_SCHEMA_REFRESH)
                    await self.conn.create_function(FENCE_FUNCTION, 1, _token_of(scope))
                    for table in SAVER_TABLES:
                        for trigger in sqlite_fence_triggers(table):
                            await self.conn.execute(trigger)
                    setattr(self, _INSTALLED_ATTR, self.conn)
            try:
                return await write()
            except sqlite3.IntegrityError as exc:
                if refused_by_fence(exc):
                    raise LeaseLost(str(thread_id)) from exc
                raise

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            aput = super().aput
            return await self._fenced(
                _thread_of(config), lambda: aput(config, checkpoint, metadata, new_versions)
            )

        async def aput_writes(
            self, config: Any, writes: Any, task_id: str, task_path: str = ""
        ) -> None:
            aput_writes = super().aput_writes
            await self._fenced(
                _thread_of(config), lambda: aput_writes(config, writes, task_id, task_path)
            )

        async def adelete_thread(self, thread_id: str) -> None:
            adelete_thread = super().adelete_thread
            await self._fenced(thread_id, lambda: adelete_thread(thread_id))

    return FencedAsyncSqliteSaver


# ------------------------------------------------------------------ PostgreSQL

_PG_WRITE: ContextVar[tuple[str, int] | None] = ContextVar("deepreflect_pg_write", default=None)
"""The leased thread and token of the write in progress (read by ``_cursor``)."""


def check_pg_fence(cur: Any, thread_id: str, token: int) -> None:
    """Inside the write's transaction: :class:`LeaseLost` unless the row has ``token``."""
    cur.execute(PG_FENCE, (thread_id,))
    row = cur.fetchone()
    if _row_token(row) != token:
        raise LeaseLost(thread_id)


async def acheck_pg_fence(cur: Any, thread_id: str, token: int) -> None:
    """:func:`check_pg_fence` on an async cursor."""
    await cur.execute(PG_FENCE, (thread_id,))
    row = await cur.fetchone()
    if _row_token(row) != token:
        raise LeaseLost(thread_id)


def _row_token(row: Any) -> int | None:
    if row is None:
        return None
    value = row["token"] if isinstance(row, dict) else row[0]
    return int(value)


@contextmanager
def _fenced_pg_cursor(saver: Any, target: tuple[str, int]) -> Iterator[Any]:
    """A cursor whose transaction first checked that the lease row still has the token."""
    from psycopg import Connection, OperationalError
    from psycopg.rows import dict_row

    # no pipeline: the check must have answered before the writes are sent
    with saver.lock, _pg_connection(saver) as conn:
        try:
            with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                check_pg_fence(cur, *target)
                yield cur
        except OperationalError as exc:
            if isinstance(saver.conn, Connection) and (conn.closed or conn.broken):
                # the one connection held the lock: the server dropped the lease
                raise LeaseLost(target[0]) from exc
            raise


@contextmanager
def _pg_connection(saver: Any) -> Iterator[Any]:
    """The saver's one connection, or one from its pool."""
    from psycopg import Connection

    if isinstance(saver.conn, Connection):
        yield saver.conn
    else:
        with saver.conn.connection() as conn:
            yield conn


def _postgres_class() -> type | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return None

    class FencedPostgresSaver(PostgresSaver):
        """A ``PostgresSaver`` whose writes to a leased thread check the token first."""

        __slots__ = ()  # no state of its own: a saver's class can become this one

        def _write(self, thread_id: Any, write: Callable[[], Any]) -> Any:
            token = _fence_token(self, thread_id)
            if token is None:
                return write()
            reset = _PG_WRITE.set((str(thread_id), token))
            try:
                return write()
            finally:
                _PG_WRITE.reset(reset)

        @contextmanager
        def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
            target = _PG_WRITE.get()
            if target is None or not pipeline:  # reads, and writes of unleased threads
                with super()._cursor(pipeline=pipeline) as cur:
                    yield cur
                return
            with _fenced_pg_cursor(self, target) as cur:
                yield cur

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            put = super().put
            return self._write(
                _thread_of(config), lambda: put(config, checkpoint, metadata, new_versions)
            )

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            put_writes = super().put_writes
            self._write(_thread_of(config), lambda: put_writes(config, writes, task_id, task_path))

        def delete_thread(self, thread_id: str) -> None:
            delete_thread = super().delete_thread
            self._write(thread_id, lambda: delete_thread(thread_id))

    return FencedPostgresSaver


@asynccontextmanager
async def _afenced_pg_cursor(saver: Any, target: tuple[str, int]) -> AsyncIterator[Any]:
    """:func:`_fenced_pg_cursor` on an ``AsyncPostgresSaver``'s connection or pool."""
    from psycopg import AsyncConnection, OperationalError
    from psycopg.rows import dict_row

    async with saver.lock, _apg_connection(saver) as conn:
        try:
            async with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                await acheck_pg_fence(cur, *target)
                yield cur
        except OperationalError as exc:
            if isinstance(saver.conn, AsyncConnection) and (conn.closed or conn.broken):
                raise LeaseLost(target[0]) from exc
            raise


@asynccontextmanager
async def _apg_connection(saver: Any) -> AsyncIterator[Any]:
    """The async saver's one connection, or one from its pool."""
    from psycopg import AsyncConnection

    if isinstance(saver.conn, AsyncConnection):
        yield saver.conn
    else:
        async with saver.conn.connection() as conn:
            yield conn


def _async_postgres_class() -> type | None:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        return None

    class FencedAsyncPostgresSaver(AsyncPostgresSaver):
        """An ``AsyncPostgresSaver`` whose writes to a leased thread check the token first
        (its sync methods run these on its loop, so they are fenced too)."""

        __slots__ = ()  # no state of its own: a saver's class can become this one

        async def _write(self, thread_id: Any, write: Callable[[], Any]) -> Any:
            token = _fence_token(self, thread_id)
            if token is None:
                return await write()
            reset = _PG_WRITE.set((str(thread_id), token))
            try:
                return await write()
            finally:
                _PG_WRITE.reset(reset)

        @asynccontextmanager
        async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[Any]:
            target = _PG_WRITE.get()
            if target is None or not pipeline:  # reads, and writes of unleased threads
                async with super()._cursor(pipeline=pipeline) as cur:
                    yield cur
                return
            async with _afenced_pg_cursor(self, target) as cur:
                yield cur

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            aput = super().aput
            return await self._write(
                _thread_of(config), lambda: aput(config, checkpoint, metadata, new_versions)
            )

        async def aput_writes(
            self, config: Any, writes: Any, task_id: str, task_path: str = ""
        ) -> None:
            aput_writes = super().aput_writes
            await self._write(
                _thread_of(config), lambda: aput_writes(config, writes, task_id, task_path)
            )

        async def adelete_thread(self, thread_id: str) -> None:
            adelete_thread = super().adelete_thread
            await self._write(thread_id, lambda: adelete_thread(thread_id))

    return FencedAsyncPostgresSaver


_FENCED: list[type] = [
    cls
    for cls in (
        FencedSqliteSaver,
        _async_sqlite_class(),
        _postgres_class(),
        _async_postgres_class(),
    )
    if cls is not None
]
_MADE: dict[type, type] = {}


def _fenced_class(cls: type) -> type | None:
    """The fenced subclass of ``cls`` (made once for a user's own subclass of a saver)."""
    if cls in _FENCED or cls in _MADE.values():
        return cls
    for fenced in _FENCED:
        base = fenced.__bases__[0]  # the LangGraph saver it fences
        if issubclass(cls, base):
            if cls is base:
                return fenced
            if cls not in _MADE:
                _MADE[cls] = type(f"Fenced{cls.__name__}", (fenced, cls), {"__slots__": ()})
            return _MADE[cls]
    return None


def fence(saver: Any, scope: Scope) -> None:
    """Make ``saver`` write through the fence of the leases this process holds in ``scope``.

    The saver's class becomes its fenced subclass in place: the graph keeps the very object
    it was given, with no state added but the scope. Any other checkpointer (in memory, of
    another kind) has only the in-process lease, which a stalled writer cannot outlive.
    """
    if scope[0] not in ("sqlite", "postgres"):
        return
    fenced = _fenced_class(type(saver))
    if fenced is None:
        return
    if type(saver) is not fenced:
        try:
            saver.__class__ = fenced
        except TypeError:  # a subclass with slots of its own: the lease alone, as before
            return
    setattr(saver, SCOPE_ATTR, scope)
