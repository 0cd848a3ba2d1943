"""Channel versions as integers in the SQLite threads files deepreflect creates.

LangGraph's SQLite savers write each channel's version as a 50-character string (a padded
counter and a random fraction); a checkpoint lists about twenty of them, and so do the
versions each node has seen: 0.4 of the bytes a thread stores per content byte
(``bench/storage_breakdown.py``). LangGraph's own default (``BaseCheckpointSaver``) is an
integer counter, which every part of the loop compares the same way. A file keeps one kind
for good: versions of two kinds do not compare, so a file created before this module (its
``checkpoints`` table there and no mark) keeps strings, and a new file is marked, in the
same locked transaction that finds it empty, before any checkpoint is written. A
``SqliteSaver`` of the user's given to ``build_graph`` on a marked file writes integers too
(:func:`matched`).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import ConfigError

if TYPE_CHECKING:
    import aiosqlite

__all__ = [
    "INT_VERSIONS_ATTR",
    "MARK_TABLE",
    "amarked",
    "marked",
    "matched",
    "with_int_versions",
]

MARK_TABLE = "deepreflect_int_versions"
"""The table whose presence says a file's channel versions are integers."""
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
_MARK = f"CREATE TABLE IF NOT EXISTS {MARK_TABLE} (since TEXT)"


def _next_version(base: type[BaseCheckpointSaver[Any]]) -> Any:
    """``get_next_version`` for a subclass of the saver class ``base``: after an integer (or
    none) the next integer; after a string, ``base``'s own next string."""

    def get_next_version(self: Any, current: Any, channel: None) -> Any:
        if isinstance(current, str):
            return base.get_next_version(self, current, channel)
        return int(current or 0) + 1

    return get_next_version


INT_VERSIONS_ATTR = "deepreflect_int_versions"
"""Class attribute of the savers that write integer versions."""


def with_int_versions(saver_class: type[BaseCheckpointSaver[Any]]) -> type[Any]:
    """``saver_class`` writing integer versions (``SqliteSaver``, ``AsyncSqliteSaver`` or a
    user's own subclass of one), made once per class; its layout is ``saver_class``'s, so a
    saver's class may be swapped for it in place."""
    if getattr(saver_class, INT_VERSIONS_ATTR, False):
        return saver_class
    if saver_class not in _MADE:
        namespace = {
            "__slots__": (),
            "__doc__": f"``{saver_class.__name__}`` writing integer channel versions.",
            "get_next_version": _next_version(saver_class),
            INT_VERSIONS_ATTR: True,
        }
        _MADE[saver_class] = type(f"IntVersions{saver_class.__name__}", (saver_class,), namespace)
    return _MADE[saver_class]


_MADE: dict[type, type[Any]] = {}


def matched(saver: object) -> None:
    """A ``SqliteSaver`` of the user's on a marked file writes integer versions too (its
    class becomes its integer subclass in place, as :func:`agent.store.fencing.fence` does):
    its string versions would not compare with the file's integers."""
    if not isinstance(saver, SqliteSaver) or getattr(saver, INT_VERSIONS_ATTR, False):
        return
    try:
        names = {row[0] for row in saver.conn.execute(_TABLES)}
    except sqlite3.Error:  # a connection bound to another thread, or closed
        return
    if MARK_TABLE in names:
        try:
            saver.__class__ = with_int_versions(type(saver))
        except TypeError:  # a subclass with slots of its own: its strings would not compare
            msg = (
                f"{type(saver).__name__} cannot write to this threads file: its channel "
                "versions are integers; open it with agent.open_checkpointer"
            )
            raise ConfigError(msg) from None


def _decide(names: set[str]) -> tuple[bool, bool]:
    """(integers, mark now) for a file holding the tables ``names``."""
    if MARK_TABLE in names:
        return True, False
    if "checkpoints" in names:
        return False, False  # written before: its versions are strings
    return True, True


def marked(conn: sqlite3.Connection) -> bool:
    """Whether the file's versions are integers, marking a file with no threads yet."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        ints, mark = _decide({row[0] for row in conn.execute(_TABLES)})
        if mark:
            conn.execute(_MARK)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return ints


async def amarked(conn: aiosqlite.Connection) -> bool:
    """:func:`marked` on aiosqlite."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        ints, mark = _decide({row[0] for row in await conn.execute_fetchall(_TABLES)})
        if mark:
            await conn.execute(_MARK)
        await conn.execute("COMMIT")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    return ints
