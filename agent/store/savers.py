"""Which database a checkpointer keeps its threads in, asked without importing a backend
that is not installed: the lease, the fence and the journal live beside the checkpoints."""

from __future__ import annotations

import sqlite3

SQLITE_FILE_ATTR = "deepreflect_sqlite_file"
"""Attribute naming a saver's SQLite file when its connection cannot (an async saver)."""


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


def postgres_kind(checkpointer: object) -> bool | None:
    """True for an ``AsyncPostgresSaver``, False for a ``PostgresSaver``, else None."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        return None
    if isinstance(checkpointer, AsyncPostgresSaver):
        return True
    if isinstance(checkpointer, PostgresSaver):
        return False
    return None
