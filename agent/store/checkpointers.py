"""Where threads live: opening a checkpointer for a SQLite file or a PostgreSQL URL, with a
clear usage error (naming the file, never a password) for a damaged, read-only, missing or
unreachable database; and listing the threads a database holds."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import ConfigError
from agent.store.lease import LEASE_FILE_ATTR, is_postgres_saver
from agent.store.pg_url import is_postgres_url, pg_conninfo, redact, scrub

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from psycopg import AsyncConnection, Connection

DEFAULT_DB = ".deepreflect/threads.sqlite"


def db_location(db: str | None = None) -> str:
    """Where threads live: ``--db``, then ``DEEPREFLECT_DB``, then ``.deepreflect/``."""
    return db or os.environ.get("DEEPREFLECT_DB") or DEFAULT_DB


def shown_location(location: str) -> str:
    """``location`` as messages may print it: a PostgreSQL URL loses its password."""
    return redact(location) if is_postgres_url(location) else location


_POSTGRES_EXTRA = "PostgreSQL threads need `pip install 'deepreflect[postgres]'`"


@contextmanager
def open_checkpointer(
    db: str | None = None, *, write: bool = True, serde: SerializerProtocol | None = None
) -> Iterator[BaseCheckpointSaver]:
    """A checkpointer for ``db``: a SQLite file path, or a ``postgresql://`` URL.

    ``write=False`` is for callers that only read (``show``, ``threads``): a SQLite file is
    then opened read-only, so nothing is created or written (a missing one is
    :class:`NoThreads`). ``serde`` replaces LangGraph's serializer. Anything wrong with the
    database itself is a :class:`ConfigError` that names it and says what is wrong.
    """
    location = db_location(db)
    if is_postgres_url(location):
        with _open_postgres(location) as pg_saver:
            if serde is not None:
                pg_saver.serde = serde
            yield pg_saver
        return
    saver = _sqlite_saver(Path(location), write=write)
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
    refused with the same :class:`ConfigError` messages for the same problems."""
    location = db_location(db)
    if is_postgres_url(location):
        async with _open_async_postgres(location) as pg_saver:
            yield pg_saver
        return
    path = Path(location)
    read_only = checked_sqlite_path(path, write=write)
    try:
        saver = await (_aopen_read_only(path) if read_only else _aopen_for_writing(path))
    except sqlite3.Error as exc:
        raise database_problem(str(path), exc) from exc
    # its file, for the lease (agent.store.lease): an aiosqlite connection cannot say it from
    # another thread, and other processes must see this one's leases
    setattr(saver, LEASE_FILE_ATTR, str(path))
    try:
        yield saver
    finally:
        await saver.conn.close()


@contextmanager
def _open_postgres(location: str) -> Iterator[PostgresSaver]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise ConfigError(_POSTGRES_EXTRA) from exc
    import psycopg

    with ExitStack() as stack:
        try:
            pg_saver = stack.enter_context(PostgresSaver.from_conn_string(pg_conninfo(location)))
            _setup_postgres(pg_saver)
        except psycopg.Error as exc:
            raise _postgres_problem(location, exc) from exc
        yield pg_saver


@asynccontextmanager
async def _open_async_postgres(location: str) -> AsyncIterator[AsyncPostgresSaver]:
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
            await _asetup_postgres(pg_saver)
        except psycopg.Error as exc:
            raise _postgres_problem(location, exc) from exc
        yield pg_saver


def _postgres_problem(location: str, exc: BaseException) -> ConfigError:
    msg = f"cannot use PostgreSQL at {redact(location)}: {scrub(str(exc).strip(), location)}"
    return ConfigError(msg)


# ------------------------------------------------------------------ SQLite files

_SQLITE_MAGIC = b"SQLite format 3\x00"
_NOT_SQLITE = "it is not a SQLite database"
_DAMAGED = "it is damaged (truncated or corrupt)"


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
        return _NOT_SQLITE
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


class NoThreads(ConfigError):
    """A reader (``write=False``) found no threads database there: nothing was created."""


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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


def _sqlite_saver(path: Path, *, write: bool) -> SqliteSaver:
    """A saver on the threads file, read-write or (``write=False``) read-only."""
    read_only = checked_sqlite_path(path, write=write)
    try:
        return _open_read_only(path) if read_only else _open_for_writing(path)
    except sqlite3.Error as exc:
        raise database_problem(str(path), exc) from exc


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
        saver = SqliteSaver(conn)
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
        saver = AsyncSqliteSaver(conn)
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


def is_database_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the threads database (SQLite or PostgreSQL)."""
    if isinstance(exc, sqlite3.Error):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.Error)


def is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the SQLite file is not a database or is corrupt: no resume helps."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.DatabaseError) and name.startswith(
        ("SQLITE_NOTADB", "SQLITE_CORRUPT")
    )


# SQLite's error names (Python 3.11+: ``exc.sqlite_errorname``) and what they mean here;
# True where the file itself is bad, so moving it aside is the way out.
_SQLITE_PROBLEMS = (
    ("SQLITE_NOTADB", _NOT_SQLITE, True),
    ("SQLITE_CORRUPT", _DAMAGED, True),
    ("SQLITE_READONLY", "this process may not write it", False),
    ("SQLITE_PERM", "this process may not write it", False),
    ("SQLITE_CANTOPEN", "it cannot be opened", False),
)


def database_problem(location: str, exc: BaseException) -> ConfigError:
    """The usage error for a database failure: which database, and what is wrong with it."""
    if not isinstance(exc, sqlite3.Error):
        return _postgres_problem(location, exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    what, bad_file = next(
        ((what, bad) for prefix, what, bad in _SQLITE_PROBLEMS if name.startswith(prefix)),
        ("it cannot be used", False),
    )
    return unusable(location, f"{what} (SQLite: {exc})", bad_file=bad_file)


def unusable(location: str, what: str, *, bad_file: bool = True) -> ConfigError:
    """The usage error for a threads database that cannot serve: which one, and why."""
    msg = f"the threads database {location} is unusable: {what}"
    if bad_file:
        msg += "; move it aside or use another"
    return ConfigError(msg)


# ------------------------------------------------------------------ PostgreSQL

# Any fixed 64-bit key ("deeprflc"): processes opening one database take turns at setup().
_PG_SETUP_LOCK = 0x6465_6570_7266_6C63


def _setup_postgres(saver: PostgresSaver, wait_s: float = 60) -> None:
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
            row = cur.execute("SELECT pg_try_advisory_lock(%s)", (_PG_SETUP_LOCK,)).fetchone()
        locked = bool(row and row[0])
        if not locked:
            time.sleep(0.05)
    try:
        saver.setup()
    finally:
        if locked:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))


async def _asetup_postgres(saver: AsyncPostgresSaver, wait_s: float = 60) -> None:
    """:func:`_setup_postgres` on an async connection."""
    import asyncio

    from psycopg.rows import tuple_row

    conn = cast("AsyncConnection[Any]", saver.conn)
    deadline = time.monotonic() + wait_s
    locked = False
    while not locked and time.monotonic() < deadline:
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute("SELECT pg_try_advisory_lock(%s)", (_PG_SETUP_LOCK,))
            row = await cur.fetchone()
        locked = bool(row and row[0])
        if not locked:
            await asyncio.sleep(0.05)
    try:
        await saver.setup()
    finally:
        if locked:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))


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


# Each thread's first and newest checkpoint id (uuid6: they carry their time), newest first.
_THREAD_SPANS = (
    "SELECT thread_id, min(checkpoint_id), max(checkpoint_id) FROM checkpoints "
    "GROUP BY thread_id ORDER BY max(checkpoint_id) DESC"
)


def thread_spans(checkpointer: BaseCheckpointSaver) -> list[tuple[str, str, str]]:
    """``(thread_id, first checkpoint id, newest checkpoint id)`` of every thread, newest
    first, without decoding any checkpoint (so an undecodable one hides nothing)."""
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            rows = cur.execute(_THREAD_SPANS).fetchall()
    elif is_postgres_saver(checkpointer):
        rows = _postgres_rows(checkpointer, _THREAD_SPANS)
    else:
        spans: dict[str, tuple[str, str]] = {}
        for item in checkpointer.list(None):
            configurable = item.config["configurable"]
            first, last = spans.get(configurable["thread_id"], (None, None))
            cid = str(configurable["checkpoint_id"])
            spans[configurable["thread_id"]] = (min(first or cid, cid), max(last or cid, cid))
        rows = sorted(((t, a, b) for t, (a, b) in spans.items()), key=lambda r: r[2], reverse=True)
    return [(str(t), str(first), str(last)) for t, first, last in rows]


def list_threads(checkpointer: BaseCheckpointSaver) -> list[str]:
    """Thread ids known to a checkpointer, newest first.

    SQLite and PostgreSQL are asked for the ids alone: listing checkpoints would decode every
    checkpoint of every thread, and one that cannot be decoded would hide all the others.
    """
    return [thread_id for thread_id, _, _ in thread_spans(checkpointer)]


def _postgres_rows(saver: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on a PostgresSaver's connection (or its pool), as tuples."""
    from psycopg import Connection
    from psycopg.rows import tuple_row

    if isinstance(saver.conn, Connection):
        with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
            return cur.execute(sql).fetchall()
    with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
        return cur.execute(sql).fetchall()
