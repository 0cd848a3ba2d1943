"""One thread, one writer: every run and resume of a thread holds the thread's lease.

Two processes answering one paused thread at once would both continue from the same
checkpoint and fork the thread, and one answer would be lost. With the lease the second
writer fails at once with :class:`ThreadBusy` and nothing is written. The lease lives next
to the checkpoints, so it holds across processes and machines.

Each acquisition gets a fencing token, larger than every token before it in that database.
A writer can stall past its lease (a stopped process, a machine that paused) and wake after
another writer took the thread over: every checkpoint and journal write of a held thread
checks, in the write's own transaction, that the lease row still carries the writer's
token, so the stale writer gets :class:`LeaseLost` and writes nothing (``agent.store.fencing``).

- SQLite: a row in ``deepreflect_leases`` in the checkpoints' database file, taken inside
  ``BEGIN IMMEDIATE`` (one writer at a time, so checking and taking are one atomic step). A
  heartbeat thread renews the row while the run works. A row whose process is dead (on the
  same host) or whose time ran out (any host) is free, so a killed process never blocks a
  later resume.
- PostgreSQL: a session-level advisory lock on the saver's connection. The server drops it
  when that connection dies: at once for a killed process, within about 25 seconds for a
  machine that vanished (the session's TCP keepalive), without any timeout of ours. The
  token is a row of ``deepreflect_leases`` taken from a sequence once the lock is held.
- Any other checkpointer (in memory, unknown): a lock inside this process.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agent.errors import AgentError, ConfigError, ErrorClass
from agent.store.fencing import LEASE_TABLE, LeaseLost, fence, fence_tokens

__all__ = ["Lease", "LeaseLost", "ThreadBusy", "hold", "lease_holder", "lease_ttl_s"]

DEFAULT_TTL_S = 30.0  # a lease nobody renews is free after this long
TTL_ENV = "DEEPREFLECT_LEASE_TTL_S"
TABLE = LEASE_TABLE
EPOCH_TABLE = "deepreflect_lease_epoch"  # SQLite: the last token handed out in the file
PG_TOKENS = "deepreflect_lease_tokens"  # PostgreSQL: the sequence tokens come from
HOST = socket.gethostname()
_TRY_AGAIN = "try again when it has stopped"
_BUSY = f"another run or resume is writing to it; {_TRY_AGAIN}"


class ThreadBusy(AgentError):
    """Another writer holds the thread: this call did nothing, so nothing was lost."""

    def __init__(self, thread_id: str, detail: str = _BUSY) -> None:
        super().__init__(ErrorClass.TRANSIENT, f"thread {thread_id} is busy: {detail}")
        self.thread_id = thread_id


def lease_ttl_s() -> float:
    """How long a lease nobody renews lasts: ``DEEPREFLECT_LEASE_TTL_S``, else 30 seconds."""
    text = os.environ.get(TTL_ENV, "").strip()
    if not text:
        return DEFAULT_TTL_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.05 <= value <= 86400:  # NaN fails too
        msg = f"{TTL_ENV} wants a number of seconds between 0.05 and 86400, not {text!r}"
        raise ConfigError(msg)
    return value


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


def advisory_key(thread_id: str) -> int:
    """The signed 64-bit key of the thread's PostgreSQL advisory lock, equal in every process."""
    digest = hashlib.blake2b(f"deepreflect-lease:{thread_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Lease:
    """A held lease and its fencing token. :meth:`check` raises :class:`LeaseLost` once the
    heartbeat found it taken."""

    def __init__(self, thread_id: str, token: int = 0) -> None:
        self.thread_id = thread_id
        self.token = token
        self.lost = threading.Event()

    def check(self) -> None:
        """Stop a run whose lease another writer took (this process stalled past the TTL)."""
        if self.lost.is_set():
            raise LeaseLost(self.thread_id)


class _Store(Protocol):
    """Where leases of one checkpointer live."""

    scope: tuple[Any, ...]  # identity of the store inside this process
    renews: bool  # whether a heartbeat must renew a held lease

    def acquire(self, thread_id: str, me: Holder) -> int: ...  # the token; or ThreadBusy
    def renew(self, thread_id: str, me: Holder, token: int) -> bool: ...  # False: lost
    def release(self, thread_id: str, me: Holder, token: int) -> None: ...


class _LocalStore:
    """No shared store: the in-process lock in :func:`hold` is the whole lease."""

    renews = False

    def __init__(self, checkpointer: object) -> None:
        self.scope = ("local", id(checkpointer))

    def acquire(self, thread_id: str, me: Holder) -> int:
        return next(_LOCAL_TOKENS)

    def renew(self, thread_id: str, me: Holder, token: int) -> bool:
        return True

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        return None


_LOCAL_TOKENS = itertools.count(1)


_SQLITE_LEASES = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "host TEXT NOT NULL, pid INTEGER NOT NULL, expires_at REAL NOT NULL, "
    "token INTEGER NOT NULL DEFAULT 0)"
)
_SQLITE_EPOCH = (
    f"CREATE TABLE IF NOT EXISTS {EPOCH_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 0), "
    "last INTEGER NOT NULL)"
)


def next_sqlite_token(conn: sqlite3.Connection) -> int:
    """The next fencing token of the file, inside the caller's write transaction.

    One counter for the whole file, never reset: a lease row is deleted on release, and a
    thread deleted and started again must not hand a stale writer its old token back."""
    conn.execute(_SQLITE_EPOCH)
    conn.execute(f"INSERT OR IGNORE INTO {EPOCH_TABLE} VALUES (0, 0)")
    conn.execute(f"UPDATE {EPOCH_TABLE} SET last = last + 1 WHERE id = 0")
    row = conn.execute(f"SELECT last FROM {EPOCH_TABLE} WHERE id = 0").fetchone()
    return int(row[0])


def ensure_sqlite_leases(conn: sqlite3.Connection) -> None:
    """The lease table, with its ``token`` column (added to a file from before tokens)."""
    conn.execute(_SQLITE_LEASES)
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")}
    if "token" not in columns:
        conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN token INTEGER NOT NULL DEFAULT 0")


class _SqliteStore:
    """Lease rows in the checkpoints' SQLite file, on a connection of the lease's own."""

    renews = True

    def __init__(self, path: str) -> None:
        self.path = path
        self.scope = ("sqlite", os.path.realpath(path))
        self.conn: sqlite3.Connection | None = None
        self.lock = threading.Lock()  # the heartbeat and release share the connection

    def acquire(self, thread_id: str, me: Holder) -> int:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("BEGIN IMMEDIATE")
            ensure_sqlite_leases(conn)
            row = conn.execute(
                f"SELECT owner, host, pid, expires_at FROM {TABLE} WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            if row is not None:
                holder = Holder(str(row[0]), str(row[1]), int(row[2]), float(row[3]))
                if holder_is_live(holder, now=time.time(), host=HOST):
                    raise ThreadBusy(thread_id, f"{holder.describe()}; {_TRY_AGAIN}")
            token = next_sqlite_token(conn)
            conn.execute(
                f"INSERT OR REPLACE INTO {TABLE} (thread_id, owner, host, pid, expires_at, token) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, me.owner, me.host, me.pid, me.expires_at, token),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.close()  # closing rolls the open transaction back
            raise
        self.conn = conn
        return token

    def renew(self, thread_id: str, me: Holder, token: int) -> bool:
        # fenced like every write: a writer whose token was taken cannot extend the new lease
        with self.lock:
            if self.conn is None:
                return False
            cur = self.conn.execute(
                f"UPDATE {TABLE} SET expires_at = ? WHERE thread_id = ? AND token = ?",
                (me.expires_at, thread_id, token),
            )
            return cur.rowcount == 1

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        # A row left behind (the delete failed) names this process, which is about to be
        # gone or is done with the thread: pid test and TTL free it.
        with self.lock, suppress(sqlite3.Error):
            if self.conn is not None:
                self.conn.execute(
                    f"DELETE FROM {TABLE} WHERE thread_id = ? AND token = ?", (thread_id, token)
                )
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# The server keeps a session, and its locks, until it notices the client is gone: at once
# for a killed process, but only after TCP keepalive for a machine that lost power or its
# network (hours by default). These session settings make that about 25 seconds.
_PG_TRY_LOCK = (
    "SELECT set_config('tcp_keepalives_idle', '10', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false), "
    "pg_try_advisory_lock(%s)"
)


_PG_LEASES = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT PRIMARY KEY, token BIGINT NOT NULL)",
    f"CREATE SEQUENCE IF NOT EXISTS {PG_TOKENS}",
)
_PG_TAKE = (
    f"INSERT INTO {TABLE} (thread_id, token) VALUES (%s, nextval('{PG_TOKENS}')) "
    "ON CONFLICT (thread_id) DO UPDATE SET token = EXCLUDED.token RETURNING token"
)
_PG_DROP = f"DELETE FROM {TABLE} WHERE thread_id = %s AND token = %s"


class _PostgresStore:
    """A session-level advisory lock, held on the saver's connection (or one from its pool).

    The saver's own connection lives as long as the process uses the saver, so it needs no
    connection of its own (PostgreSQL's connection slots are scarce under load). A session
    may take one advisory lock twice, which :func:`hold`'s in-process lock rules out.
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

        for statement in _PG_LEASES:
            try:
                self._execute(statement, ())
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                pass  # another process created it at the same moment

    def acquire(self, thread_id: str, me: Holder) -> int:
        self.session = self.saver.conn if self.pool is None else self.pool.getconn()
        locked = False
        try:
            locked = bool(self._execute(_PG_TRY_LOCK, (advisory_key(thread_id),)))
            if not locked:
                raise ThreadBusy(thread_id)
            self._ensure_table()
            # the lock is held: whoever held the thread before is gone, so its token ends
            return int(self._execute(_PG_TAKE, (thread_id,)))
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
                self._execute(_PG_DROP, (thread_id, token))
        with suppress(psycopg.Error):
            self._execute("SELECT pg_advisory_unlock(%s)", (advisory_key(thread_id),))
        self._return_session()

    def _return_session(self) -> None:
        if self.pool is not None and self.session is not None:
            self.pool.putconn(self.session)
        self.session = None


def sqlite_file(conn: sqlite3.Connection) -> str | None:
    """The file behind a SQLite connection; None for an in-memory or unreadable one."""
    try:
        rows = conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error:  # ProgrammingError too: a connection bound to another thread
        return None
    return next((str(file) for _, name, file in rows if name == "main" and file), None)


def is_postgres_saver(checkpointer: object) -> bool:
    """Whether ``checkpointer`` is a sync PostgresSaver (False when the extra is missing)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return False
    return isinstance(checkpointer, PostgresSaver)


LEASE_FILE_ATTR = "deepreflect_sqlite_file"
"""Attribute naming a saver's SQLite file when its connection cannot (an async saver)."""


def store_for(checkpointer: object) -> _Store:
    """Where the leases of ``checkpointer``'s threads live (see the module docstring)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    named = getattr(checkpointer, LEASE_FILE_ATTR, None)
    if isinstance(named, str) and named:
        return _SqliteStore(named)
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.lock:
            path = sqlite_file(checkpointer.conn)
        if path:
            return _SqliteStore(path)
    if is_postgres_saver(checkpointer):
        return _PostgresStore(checkpointer)
    return _LocalStore(checkpointer)


def lease_holder(checkpointer: object, thread_id: str) -> str | None:
    """Who holds ``thread_id``'s lease, as people read it; None when no run holds it.

    Only reads: a SQLite row is looked up (on the saver's own, possibly read-only,
    connection), a PostgreSQL advisory lock in ``pg_locks``; nothing is taken or written.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(checkpointer, SqliteSaver):
        return _sqlite_holder(checkpointer, thread_id)
    if is_postgres_saver(checkpointer):
        return _postgres_holder(checkpointer, thread_id)
    with _HELD_LOCK:
        held = any(key[-1] == thread_id and key[:2] == ("local", id(checkpointer)) for key in _HELD)
    return "a run in this process holds it" if held else None


def _sqlite_holder(saver: Any, thread_id: str) -> str | None:
    sql = f"SELECT owner, host, pid, expires_at FROM {TABLE} WHERE thread_id = ?"
    try:
        with saver.cursor(transaction=False) as cur:
            row = cur.execute(sql, (thread_id,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None  # no run ever took a lease in this file
        raise
    if row is None:
        return None
    holder = Holder(str(row[0]), str(row[1]), int(row[2]), float(row[3]))
    return holder.describe() if holder_is_live(holder, now=time.time(), host=HOST) else None


# A bigint advisory key is held as (classid, objid) = its high and low 32 bits, objsubid 1.
_PG_HOLDER = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND classid = %s::bigint::oid AND objid = %s::bigint::oid"
)


def _postgres_holder(saver: Any, thread_id: str) -> str | None:
    from psycopg import Connection
    from psycopg.rows import tuple_row

    key = advisory_key(thread_id) & 0xFFFF_FFFF_FFFF_FFFF
    params = (key >> 32, key & 0xFFFF_FFFF)
    if isinstance(saver.conn, Connection):
        with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(_PG_HOLDER, params).fetchone()
    else:
        with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(_PG_HOLDER, params).fetchone()
    return f"PostgreSQL session {row[0]} is running or resuming it" if row else None


_HELD: set[tuple[Any, ...]] = set()
_HELD_LOCK = threading.Lock()


def _claim_here(key: tuple[Any, ...]) -> bool:
    """Take ``key`` inside this process; False when another thread of it holds it."""
    with _HELD_LOCK:
        if key in _HELD:
            return False
        _HELD.add(key)
        return True


def _heartbeat(store: _Store, lease: Lease, me: Holder, ttl_s: float) -> Callable[[], None]:
    """Renew the lease every third of its TTL until the returned ``stop`` is called."""
    stopped = threading.Event()

    def beat() -> None:
        while not stopped.wait(ttl_s / 3):
            renewed_me = replace(me, expires_at=time.time() + ttl_s)
            try:
                renewed = store.renew(lease.thread_id, renewed_me, lease.token)
            except sqlite3.Error:  # locked for a while: try again at the next beat
                continue
            if not renewed:
                lease.lost.set()
                return

    thread = threading.Thread(target=beat, name=f"lease {lease.thread_id}", daemon=True)
    thread.start()

    def stop() -> None:
        stopped.set()
        thread.join()

    return stop


@contextmanager
def hold(checkpointer: object, thread_id: str, *, ttl_s: float | None = None) -> Iterator[Lease]:
    """Hold ``thread_id``'s lease for the block; :class:`ThreadBusy` at once if it is taken.

    Nothing waits for a busy thread: the caller learns at once that someone else is writing
    to it and can try again, instead of continuing from a checkpoint that is going stale.
    While the block runs, the saver's writes to the thread are fenced by the lease's token
    (``agent.store.fencing``): once another writer took the thread over they raise
    :class:`LeaseLost` and write nothing. ``ttl_s`` defaults to :func:`lease_ttl_s`.
    """
    ttl = lease_ttl_s() if ttl_s is None else ttl_s
    store = store_for(checkpointer)
    key = (*store.scope, thread_id)
    if not _claim_here(key):
        raise ThreadBusy(thread_id)
    try:
        me = Holder(uuid.uuid4().hex, HOST, os.getpid(), time.time() + ttl)
        token = store.acquire(thread_id, me)
        lease = Lease(thread_id, token)
        try:
            fence(checkpointer, store.scope)
            fence_tokens.hold(store.scope, thread_id, token)
            stop = _heartbeat(store, lease, me, ttl) if store.renews else None
            try:
                yield lease
            finally:
                if stop is not None:
                    stop()
        finally:
            fence_tokens.drop(store.scope, thread_id)
            store.release(thread_id, me, token)
    finally:
        with _HELD_LOCK:
            _HELD.discard(key)
