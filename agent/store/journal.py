"""Tool calls that happen once: the idempotency key of a call, and the durable journal
where a call is recorded before it runs and after (what a tool declares about its effects
is ``agent.store.effects``).

A subagent's step can run more than once: the graph's RetryPolicy re-runs it after a
transient model error, a thread resumed after a crash re-runs the step that was in flight,
an approval or a question re-runs it from its start, and a revision may repeat a call. The
filesystem tools act on the step's own workspace and simply run again; a tool that acts on
the world must not. So every call of such a tool gets a key that does not change between
those runs, and is journaled under it *before* it runs (``started``) and after
(``done``, with its result). A journaled result is reused; a call that started and has no
result (the process died, the response timed out) has an unknown outcome and is never
re-run blindly (``agent.tools.execute``).

The journal is durable where the thread is: a table in the checkpoints' SQLite file (its
own connection, committed before the tool runs, so a SIGKILL right after loses nothing) or
PostgreSQL database (the saver's connection),
the LangGraph store the graph runs with (``langgraph dev`` has one), else the process's
memory (which covers retries, not crashes).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from agent.store.savers import SQLITE_FILE_ATTR, postgres_kind, sqlite_file

IDEMPOTENCY_KEY_ARG = "idempotency_key"
"""A tool parameter of this name, annotated ``InjectedToolArg``, receives the call's key."""
TABLE = "deepreflect_tool_journal"
STORE_NAMESPACE = ("deepreflect", "tool_journal")


# ---------------------------------------------------------------------------- keys


def canonical(value: Any) -> str:
    """One text per value, whatever the key order the model wrote its arguments in."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def key_material(*parts: str) -> bytes:
    """The bytes a key or digest hashes: ``parts`` as a JSON list, one text per tuple.

    Joining with a separator is ambiguous as soon as a part may contain it (a thread id
    with a NUL in it: ``("a\\0b", "c")`` and ``("a", "b\\0c")`` would be one key); a JSON
    string is quoted and escaped, so no part runs into the next. ASCII escapes keep a lone
    surrogate encodable."""
    return json.dumps(list(parts), ensure_ascii=True, separators=(",", ":")).encode("ascii")


def args_digest(name: str, args: Mapping[str, Any]) -> str:
    """Hash of a tool name and its exact arguments."""
    return hashlib.sha256(key_material(name, canonical(args))).hexdigest()[:32]


def call_key(thread_id: str, scope: str, step_id: str, occurrence: int, digest: str) -> str:
    """The idempotency key of one call: the thread, the user turn (``scope``), the step, how
    many identical calls (same name and arguments) this draft made before it, and the hash.
    No attempt, retry or revision number: a re-run or a revision that makes the same call
    gets the same key."""
    text = key_material(thread_id, scope, step_id, str(occurrence), digest)
    return "dr-" + hashlib.sha256(text).hexdigest()[:40]


# ---------------------------------------------------------------------------- stores


class JournalStore(Protocol):
    """Where journal entries live: one JSON object per (thread, key). Coroutines, so a
    LangGraph store is used the async way; SQLite's writes are a few milliseconds and run
    inline, committed before the call they announce."""

    async def get(self, thread_id: str, key: str) -> dict[str, Any] | None: ...

    async def put(self, thread_id: str, key: str, entry: Mapping[str, Any]) -> None: ...


class MemoryJournal:
    """Entries in this process's memory: survives a retry, not a crash."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    async def get(self, thread_id: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get((thread_id, key))
            return dict(entry) if entry is not None else None

    async def put(self, thread_id: str, key: str, entry: Mapping[str, Any]) -> None:
        with self._lock:
            self._entries[(thread_id, key)] = dict(entry)


class SqliteJournal:
    """Entries in a table of the checkpoints' SQLite file, on a connection of its own; each
    write is committed before :meth:`put` returns. An entry of a thread this process
    leases is fenced like its checkpoints (``agent.store.fencing``): a writer that lost the lease
    journals nothing, so it does not start a call either."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._fenced = False

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT NOT NULL, "
                "key TEXT NOT NULL, entry TEXT NOT NULL, updated_at REAL NOT NULL, "
                "PRIMARY KEY (thread_id, key))"
            )
            self._conn = conn
        return self._conn

    async def get(self, thread_id: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = (
                self._connection()
                .execute(
                    f"SELECT entry FROM {TABLE} WHERE thread_id = ? AND key = ?", (thread_id, key)
                )
                .fetchone()
            )
        return _loaded(row[0]) if row else None

    async def put(self, thread_id: str, key: str, entry: Mapping[str, Any]) -> None:
        from agent.store.fencing import (
            LeaseLost,
            held_token,
            install_sqlite_fence,
            refused_by_fence,
        )

        scope = ("sqlite", os.path.realpath(self.path))
        with self._lock:
            conn = self._connection()
            if not self._fenced and held_token(scope, thread_id) is not None:
                install_sqlite_fence(conn, scope, (TABLE,))  # the lease table exists by now
                self._fenced = True
            try:
                conn.execute(
                    f"INSERT OR REPLACE INTO {TABLE} (thread_id, key, entry, updated_at) "
                    "VALUES (?, ?, ?, ?)",
                    (thread_id, key, json.dumps(dict(entry), default=str), time.time()),
                )
            except sqlite3.IntegrityError as exc:
                if refused_by_fence(exc):
                    raise LeaseLost(thread_id) from exc
                raise


class StoreJournal:
    """Entries in a LangGraph ``BaseStore`` (the one ``langgraph dev`` gives every graph)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def get(self, thread_id: str, key: str) -> dict[str, Any] | None:
        item = await self.store.aget((*STORE_NAMESPACE, thread_id), key)
        return dict(item.value) if item is not None else None

    async def put(self, thread_id: str, key: str, entry: Mapping[str, Any]) -> None:
        await self.store.aput((*STORE_NAMESPACE, thread_id), key, dict(entry), index=False)


class PostgresJournal:
    """Entries in a table of the checkpoints' PostgreSQL database, through the saver's own
    connection (or its pool), sync (``PostgresSaver``, in a worker thread) or async
    (``AsyncPostgresSaver``): PostgreSQL's connection slots are scarce under load."""

    GET = f"SELECT entry FROM {TABLE} WHERE thread_id = %s AND key = %s"
    PUT = (
        f"INSERT INTO {TABLE} (thread_id, key, entry, updated_at) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (thread_id, key) DO UPDATE SET entry = EXCLUDED.entry, "
        "updated_at = EXCLUDED.updated_at"
    )
    CREATE = (
        f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT NOT NULL, key TEXT NOT NULL, "
        "entry TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (thread_id, key))"
    )

    def __init__(self, saver: Any, *, is_async: bool) -> None:
        self.saver = saver
        self.is_async = is_async
        self._ready = False

    async def get(self, thread_id: str, key: str) -> dict[str, Any] | None:
        row = await self._execute(self.GET, (thread_id, key))
        if row is None:
            return None
        return _loaded(row["entry"] if isinstance(row, Mapping) else row[0])

    async def put(self, thread_id: str, key: str, entry: Mapping[str, Any]) -> None:
        from agent.store.fencing import held_token

        text = json.dumps(dict(entry), default=str)
        token = held_token(("postgres", id(self.saver.conn)), thread_id)
        fence = None if token is None else (thread_id, token)
        await self._execute(self.PUT, (thread_id, key, text, time.time()), fence)

    async def _execute(
        self, sql: str, params: tuple[Any, ...], fence: tuple[str, int] | None = None
    ) -> Any:
        if self.is_async:
            return await self._async_execute(sql, params, fence)
        import asyncio

        return await asyncio.to_thread(self._sync_execute, sql, params, fence)

    def _sync_execute(
        self, sql: str, params: tuple[Any, ...], fence: tuple[str, int] | None
    ) -> Any:
        from psycopg import Connection

        conn = self.saver.conn
        if isinstance(conn, Connection):
            with self.saver.lock:
                return self._run(conn, sql, params, fence)
        with conn.connection() as pooled:
            return self._run(pooled, sql, params, fence)

    def _run(
        self, conn: Any, sql: str, params: tuple[Any, ...], fence: tuple[str, int] | None
    ) -> Any:
        from agent.store.fencing import check_pg_fence

        if not self._ready:
            with conn.cursor() as cur:
                cur.execute(self.CREATE)
            if not conn.autocommit:
                conn.commit()
            self._ready = True
        # one transaction: a leased thread's entry is written only while its token holds
        with conn.transaction(), conn.cursor() as cur:
            if fence is not None:
                check_pg_fence(cur, *fence)
            cur.execute(sql, params)
            row = cur.fetchone() if cur.description else None
        if not conn.autocommit:
            conn.commit()
        return row

    async def _async_execute(
        self, sql: str, params: tuple[Any, ...], fence: tuple[str, int] | None
    ) -> Any:
        from psycopg import AsyncConnection

        conn = self.saver.conn
        if isinstance(conn, AsyncConnection):
            async with self.saver.lock:
                return await self._arun(conn, sql, params, fence)
        async with conn.connection() as pooled:
            return await self._arun(pooled, sql, params, fence)

    async def _arun(
        self, conn: Any, sql: str, params: tuple[Any, ...], fence: tuple[str, int] | None
    ) -> Any:
        from agent.store.fencing import acheck_pg_fence

        if not self._ready:
            async with conn.cursor() as cur:
                await cur.execute(self.CREATE)
            if not conn.autocommit:
                await conn.commit()
            self._ready = True
        # one transaction, as in _run
        async with conn.transaction(), conn.cursor() as cur:
            if fence is not None:
                await acheck_pg_fence(cur, *fence)
            await cur.execute(sql, params)
            row = await cur.fetchone() if cur.description else None
        if not conn.autocommit:
            await conn.commit()
        return row


def _loaded(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None  # a damaged row reads as no entry: the call's outcome is unknown again
    return value if isinstance(value, dict) else None


_SQLITE: dict[str, SqliteJournal] = {}
_BY_SAVER: weakref.WeakKeyDictionary[Any, JournalStore] = weakref.WeakKeyDictionary()
_FALLBACK: dict[int, JournalStore] = {}
_REGISTRY_LOCK = threading.Lock()


def journal_for(checkpointer: object, store: object | None = None) -> JournalStore:
    """The journal of the threads ``checkpointer`` keeps (see the module docstring)."""
    path = getattr(checkpointer, SQLITE_FILE_ATTR, None)
    conn = getattr(checkpointer, "conn", None)
    if not (isinstance(path, str) and path) and isinstance(conn, sqlite3.Connection):
        lock = getattr(checkpointer, "lock", None)
        if lock is not None:
            with lock:
                path = sqlite_file(conn)
        else:
            path = sqlite_file(conn)
    postgres = postgres_kind(checkpointer)
    with _REGISTRY_LOCK:
        if isinstance(path, str) and path:
            real = os.path.realpath(path)
            return _SQLITE.setdefault(real, SqliteJournal(real))
        if store is None and postgres is None:
            return _attached(checkpointer, MemoryJournal)
        if postgres is not None:
            return _attached(checkpointer, lambda: PostgresJournal(checkpointer, is_async=postgres))
        return StoreJournal(store)


def _attached(checkpointer: object, make: Callable[[], JournalStore]) -> JournalStore:
    """The journal kept with ``checkpointer`` (made on first use): one per saver, gone with
    it, so a new saver never sees a dead one's entries."""
    try:
        found = _BY_SAVER.get(checkpointer)
    except TypeError:  # not weak-referenceable (None: no checkpointer at all)
        return _FALLBACK.setdefault(id(checkpointer), make())
    if found is None:
        found = _BY_SAVER[checkpointer] = make()
    return found
