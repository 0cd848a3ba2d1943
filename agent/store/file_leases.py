"""SQLite leases: a row of ``deepreflect_leases`` in the checkpoints' database file per held
thread, naming its holder, taken inside ``BEGIN IMMEDIATE`` (one writer at a time, so
checking and taking are one atomic step) and renewed by the heartbeat while the run works.
A row whose process is dead (on the same host) or whose time ran out (any host) is free, so
a killed process never blocks a later resume."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import suppress
from typing import Any

from agent.store.fencing import LEASE_TABLE
from agent.store.holders import HOST, TRY_AGAIN, Holder, ThreadBusy, holder_is_live

EPOCH_TABLE = "deepreflect_lease_epoch"  # the last token handed out in the file

_LEASES = (
    f"CREATE TABLE IF NOT EXISTS {LEASE_TABLE} (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "host TEXT NOT NULL, pid INTEGER NOT NULL, expires_at REAL NOT NULL, "
    "token INTEGER NOT NULL DEFAULT 0)"
)
_EPOCH = (
    f"CREATE TABLE IF NOT EXISTS {EPOCH_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 0), "
    "last INTEGER NOT NULL)"
)
_HOLDER = f"SELECT owner, host, pid, expires_at FROM {LEASE_TABLE} WHERE thread_id = ?"


def next_sqlite_token(conn: sqlite3.Connection) -> int:
    """The next fencing token of the file, inside the caller's write transaction.

    One counter for the whole file, never reset: a lease row is deleted on release, and a
    thread deleted and started again must not hand a stale writer its old token back."""
    conn.execute(_EPOCH)
    conn.execute(f"INSERT OR IGNORE INTO {EPOCH_TABLE} VALUES (0, 0)")
    conn.execute(f"UPDATE {EPOCH_TABLE} SET last = last + 1 WHERE id = 0")
    row = conn.execute(f"SELECT last FROM {EPOCH_TABLE} WHERE id = 0").fetchone()
    return int(row[0])


def ensure_sqlite_leases(conn: sqlite3.Connection) -> None:
    """The lease table, with its ``token`` column (added to a file from before tokens)."""
    conn.execute(_LEASES)
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({LEASE_TABLE})")}
    if "token" not in columns:
        conn.execute(f"ALTER TABLE {LEASE_TABLE} ADD COLUMN token INTEGER NOT NULL DEFAULT 0")


def _holder(row: Any) -> Holder:
    return Holder(str(row[0]), str(row[1]), int(row[2]), float(row[3]))


class SqliteLeases:
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
            row = conn.execute(_HOLDER, (thread_id,)).fetchone()
            if row is not None:
                holder = _holder(row)
                if holder_is_live(holder, now=time.time(), host=HOST):
                    raise ThreadBusy(thread_id, f"{holder.describe()}; {TRY_AGAIN}")
            token = next_sqlite_token(conn)
            conn.execute(
                f"INSERT OR REPLACE INTO {LEASE_TABLE} "
                "(thread_id, owner, host, pid, expires_at, token) VALUES (?, ?, ?, ?, ?, ?)",
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
                f"UPDATE {LEASE_TABLE} SET expires_at = ? WHERE thread_id = ? AND token = ?",
                (me.expires_at, thread_id, token),
            )
            return cur.rowcount == 1

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        # A row left behind (the delete failed) names this process, which is about to be
        # gone or is done with the thread: pid test and TTL free it.
        with self.lock, suppress(sqlite3.Error):
            if self.conn is not None:
                self.conn.execute(
                    f"DELETE FROM {LEASE_TABLE} WHERE thread_id = ? AND token = ?",
                    (thread_id, token),
                )
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def sqlite_holder(saver: Any, thread_id: str) -> str | None:
    """Who holds the thread in a SqliteSaver's file, read on the saver's own (possibly
    read-only) connection; None when no live row names a holder."""
    try:
        with saver.cursor(transaction=False) as cur:
            row = cur.execute(_HOLDER, (thread_id,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None  # no run ever took a lease in this file
        raise
    if row is None:
        return None
    holder = _holder(row)
    return holder.describe() if holder_is_live(holder, now=time.time(), host=HOST) else None
