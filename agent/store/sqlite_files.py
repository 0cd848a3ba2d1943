"""Opening a SQLite threads file: refused with a usage error before anything runs when it is
a directory, damaged, truncated or read-only for a writer; opened read-only (without a
single write) for a reader; switched to WAL and set up for a writer."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import ConfigError
from agent.store.database_errors import NOT_SQLITE, NoThreads, database_problem, unusable
from agent.store.int_versions import amarked, marked, with_int_versions
from agent.store.savers import SQLITE_FILE_ATTR

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

_SQLITE_MAGIC = b"SQLite format 3\x00"


def sqlite_header_problem(path: Path) -> str | None:
    """What the first 100 bytes of ``path`` say is wrong with it; None: missing, empty or sound.

    SQLite reads pages only when it needs them, so a truncated file opens without complaint
    and fails at the first read of a missing page, in the middle of a listing or a run. The
    header records the database's size, which catches a truncation before anything runs.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError:
        return None  # SQLite reports what it cannot open
    if size == 0:
        return None  # an empty file is an empty database
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return NOT_SQLITE
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counted = header[92:96] == header[24:28]  # the page count is valid (SQLite file format)
    wal = Path(f"{path}-wal")
    pending = wal.exists() and wal.stat().st_size > 0  # a checkpoint may still be copying
    if counted and not pending and pages * page_size > size:
        return f"it is truncated: its header counts {pages * page_size} bytes, the file has {size}"
    return None


def read_only_reason(path: Path) -> str | None:
    """Why this process cannot write the SQLite file at ``path``; None when it can.

    Asked of the operating system before opening: SQLite opens a file it may not write
    without complaint and fails at the first write, which would be in the middle of a run.
    In WAL mode a writer also creates ``-wal`` and ``-shm`` files next to the database.
    """
    folder = path.parent
    if not path.exists():
        return None if os.access(folder, os.W_OK) else f"its folder {folder} is read-only"
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    sidecars = [Path(f"{path}-wal"), Path(f"{path}-shm")]
    if not os.access(folder, os.W_OK) and not all(os.access(p, os.W_OK) for p in sidecars):
        return f"its folder {folder} is read-only"
    return None


STATE_FOLDER = ".deepreflect"
"""The folder of the default threads database: the one folder a threads path may create."""


def checked_sqlite_path(path: Path, *, write: bool) -> bool:
    """Refuse a threads file that cannot serve (a :class:`ConfigError` saying why); True when
    it is to be opened read-only: ``write=False`` always (a reader never creates, migrates
    or switches a file, and a missing one is :class:`NoThreads`), else never."""
    if path.is_dir():
        msg = f"the threads database {path} is a directory, not a file: pass a file to --db"
        raise ConfigError(msg)
    if not write and not path.exists():
        msg = f"there is no threads database at {path}: nothing has run with it yet"
        raise NoThreads(msg)
    folder = path.parent
    if not folder.is_dir() and folder.name != STATE_FOLDER:
        # a mistyped --db must not leave folders behind: only deepreflect's own is made
        msg = (
            f"cannot create the folder {folder} for the threads database {path}: it does not "
            f"exist (only a {STATE_FOLDER}/ folder is made); create it first or choose "
            "another --db"
        )
        raise ConfigError(msg)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        msg = (
            f"cannot create the folder {path.parent} for the threads database {path}: "
            f"{exc.strerror or exc}"
        )
        raise ConfigError(msg) from exc
    if problem := sqlite_header_problem(path):
        raise unusable(str(path), problem)
    reason = read_only_reason(path)
    if reason and not path.exists():
        msg = f"there is no threads database at {path}, and none can be created: {reason}"
        raise ConfigError(msg)
    if reason and write:
        msg = (
            f"the threads database {path} is read-only ({reason}): run, demo, resume, "
            "prune and threads --delete need to write to it; threads and show can still read it"
        )
        raise ConfigError(msg)
    return not write


def sqlite_saver(path: Path, *, write: bool) -> SqliteSaver:
    """A saver on the threads file, read-write or (``write=False``) read-only."""
    read_only = checked_sqlite_path(path, write=write)
    try:
        return _open_read_only(path) if read_only else _open_for_writing(path)
    except sqlite3.Error as exc:
        raise database_problem(str(path), exc) from exc


async def async_sqlite_saver(path: Path, *, write: bool) -> AsyncSqliteSaver:
    """:func:`sqlite_saver` on aiosqlite, naming its file for the lease and the journal."""
    read_only = checked_sqlite_path(path, write=write)
    try:
        saver = await (_aopen_read_only(path) if read_only else _aopen_for_writing(path))
    except sqlite3.Error as exc:
        raise database_problem(str(path), exc) from exc
    # an aiosqlite connection cannot say its file from another thread, and other processes
    # must see this one's leases
    setattr(saver, SQLITE_FILE_ATTR, str(path))
    return saver


# SQLite folds the WAL back into the database every 1,000 pages (4 MB) by default, and leaves
# the file at its largest; a run's writes are small, so checkpoint sooner and give the space
# back (bench/storage.py printed a 4.1 MB WAL for 600 KB of files).
WAL_PRAGMAS = ("PRAGMA wal_autocheckpoint=256", "PRAGMA journal_size_limit=1048576")


def _open_for_writing(path: Path) -> SqliteSaver:
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    try:
        _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        for pragma in WAL_PRAGMAS:
            conn.execute(pragma)
        ints = _retry_locked(lambda: marked(conn))
        saver = (with_int_versions(SqliteSaver) if ints else SqliteSaver)(conn)
        _retry_locked(saver.setup)
    except BaseException:
        conn.close()
        raise
    return saver


# ``mode=ro`` still needs the ``-shm`` file of a WAL database, which a read-only folder may
# not have; ``immutable=1`` then reads the file as it is, with no locking at all.
READ_ONLY_OPTIONS = ("mode=ro", "mode=ro&immutable=1")
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
_WRITES_COLUMNS = "PRAGMA table_info(writes)"


def no_threads(path: Path, tables: set[str]) -> NoThreads | None:
    """The error for a file without the checkpoint tables; None when it has them."""
    if {"checkpoints", "writes"} <= tables:
        return None
    msg = f"{path} holds no deepreflect threads"
    if reason := read_only_reason(path):
        msg += f", and it is read-only ({reason}) so none can be added"
    return NoThreads(msg)


def _open_read_only(path: Path) -> SqliteSaver:
    """Open ``path`` read-only, without setup or a switch to WAL (both would write)."""
    uri = path.absolute().as_uri()
    for options in READ_ONLY_OPTIONS:
        conn = sqlite3.connect(f"{uri}?{options}", uri=True, check_same_thread=False)
        try:
            names = {row[0] for row in conn.execute(_TABLES)}
        except sqlite3.OperationalError:
            conn.close()
            if options == READ_ONLY_OPTIONS[-1]:
                raise
            continue
        except BaseException:
            conn.close()
            raise
        if problem := no_threads(path, names):
            conn.close()
            raise problem
        saver = SqliteSaver(conn)
        saver.is_setup = True  # what setup() would learn, without its writes:
        columns = {row[1] for row in conn.execute(_WRITES_COLUMNS)}
        saver._has_task_path = "task_path" in columns  # a file older than that column
        return saver
    raise AssertionError("unreachable")  # the last attempt returns or raises


async def _aopen_for_writing(path: Path) -> AsyncSqliteSaver:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    conn = await aiosqlite.connect(str(path), timeout=30)
    try:
        await _aretry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        for pragma in WAL_PRAGMAS:
            await conn.execute(pragma)
        ints = await _aretry_locked(lambda: amarked(conn))
        saver = (with_int_versions(AsyncSqliteSaver) if ints else AsyncSqliteSaver)(conn)
        await _aretry_locked(saver.setup)
    except BaseException:
        await conn.close()
        raise
    return saver


async def _aopen_read_only(path: Path) -> AsyncSqliteSaver:
    """:func:`_open_read_only` on aiosqlite."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    uri = path.absolute().as_uri()
    for options in READ_ONLY_OPTIONS:
        conn = await aiosqlite.connect(f"{uri}?{options}", uri=True)
        try:
            names = {row[0] for row in await conn.execute_fetchall(_TABLES)}
            problem = no_threads(path, names)
            if problem is None:
                columns = {row[1] for row in await conn.execute_fetchall(_WRITES_COLUMNS)}
        except sqlite3.OperationalError:
            await conn.close()
            if options == READ_ONLY_OPTIONS[-1]:
                raise
            continue
        except BaseException:
            await conn.close()
            raise
        if problem is not None:
            await conn.close()
            raise problem
        saver = AsyncSqliteSaver(conn)
        saver.is_setup = True
        saver._has_task_path = "task_path" in columns
        return saver
    raise AssertionError("unreachable")


def _retry_locked(action: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    """Run ``action``, retrying "database is locked" for up to ``timeout_s`` seconds.

    SQLite skips the busy timeout where waiting could deadlock: switching a new database to
    WAL while another process holds the write lock (creating the tables) fails at once, so
    processes opening a fresh database together would otherwise race.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


async def _aretry_locked(action: Callable[[], Awaitable[Any]], timeout_s: float = 30.0) -> Any:
    """:func:`_retry_locked` for a coroutine."""
    import asyncio

    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            return await action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)
