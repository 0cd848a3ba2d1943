"""Where threads live: opening a checkpointer for a SQLite file or a PostgreSQL URL, with a
clear usage error (naming the file, never a password) for a damaged, read-only, missing or
unreachable database; and listing the threads a database holds."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import ConfigError
from agent.lease import is_postgres_saver
from agent.pg_url import is_postgres_url, pg_conninfo, redact, scrub

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection

DEFAULT_DB = ".deepreflect/threads.sqlite"


def db_location(db: str | None = None) -> str:
    """Where threads live: ``--db``, then ``DEEPREFLECT_DB``, then ``.deepreflect/``."""
    return db or os.environ.get("DEEPREFLECT_DB") or DEFAULT_DB


def shown_location(location: str) -> str:
    """``location`` as messages may print it: a PostgreSQL URL loses its password."""
    return redact(location) if is_postgres_url(location) else location


@contextmanager
def open_checkpointer(
    db: str | None = None, *, write: bool = True
) -> Iterator[BaseCheckpointSaver]:
    """A checkpointer for ``db``: a SQLite file path, or a ``postgresql://`` URL.

    ``write=False`` is for callers that only read (``show``, ``threads``): a SQLite file this
    process may not write is then opened read-only instead of refused. Anything wrong with
    the database itself is a :class:`ConfigError` that names it and says what is wrong.
    """
    location = db_location(db)
    if is_postgres_url(location):
        with _open_postgres(location) as pg_saver:
            yield pg_saver
        return
    saver = _sqlite_saver(Path(location), write=write)
    try:
        yield saver
    finally:
        saver.conn.close()


@contextmanager
def _open_postgres(location: str) -> Iterator[PostgresSaver]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        msg = "PostgreSQL threads need `pip install 'deepreflect[postgres]'`"
        raise ConfigError(msg) from exc
    import psycopg

    with ExitStack() as stack:
        try:
            pg_saver = stack.enter_context(PostgresSaver.from_conn_string(pg_conninfo(location)))
            _setup_postgres(pg_saver)
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


def _sqlite_saver(path: Path, *, write: bool) -> SqliteSaver:
    """A saver on the threads file, read-write or (``write=False``) read-only if it must."""
    try:
        if path.is_dir():
            msg = f"the threads database {path} is a directory, not a file: pass a file to --db"
            raise ConfigError(msg)
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
            f"the threads database {path} is read-only ({reason}): run, demo and resume "
            "need to write to it; threads and show can still read it"
        )
        raise ConfigError(msg)
    try:
        return _open_read_only(path) if reason else _open_for_writing(path)
    except sqlite3.Error as exc:
        raise database_problem(str(path), exc) from exc


def _open_for_writing(path: Path) -> SqliteSaver:
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    try:
        _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        saver = SqliteSaver(conn)
        _retry_locked(saver.setup)
    except BaseException:
        conn.close()
        raise
    return saver


def _open_read_only(path: Path) -> SqliteSaver:
    """Open ``path`` read-only, without setup or a switch to WAL (both would write).

    ``mode=ro`` still needs the ``-shm`` file of a WAL database, which a read-only folder
    may not have; ``immutable=1`` then reads the file as it is, with no locking at all.
    """
    uri = path.absolute().as_uri()
    for options in ("mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(f"{uri}?{options}", uri=True, check_same_thread=False)
        try:
            tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            names = {row[0] for row in tables}
        except sqlite3.OperationalError:
            conn.close()
            if "immutable" in options:
                raise
            continue
        except BaseException:
            conn.close()
            raise
        if not {"checkpoints", "writes"} <= names:
            conn.close()
            msg = f"{path} holds no deepreflect threads, and it is read-only so none can be added"
            raise ConfigError(msg)
        saver = SqliteSaver(conn)
        saver.is_setup = True  # what setup() would learn, without its writes:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
        saver._has_task_path = "task_path" in columns  # a file older than that column
        return saver
    raise AssertionError("unreachable")  # the last attempt returns or raises


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


# Thread ids, the thread with the newest checkpoint first (checkpoint ids grow with time).
_THREAD_IDS = (
    "SELECT thread_id FROM checkpoints GROUP BY thread_id ORDER BY max(checkpoint_id) DESC"
)


def list_threads(checkpointer: BaseCheckpointSaver) -> list[str]:
    """Thread ids known to a checkpointer, newest first.

    SQLite and PostgreSQL are asked for the ids alone: listing checkpoints would decode every
    checkpoint of every thread, and one that cannot be decoded would hide all the others.
    """
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            return [str(row[0]) for row in cur.execute(_THREAD_IDS)]
    if is_postgres_saver(checkpointer):
        return [str(row[0]) for row in _postgres_rows(checkpointer, _THREAD_IDS)]
    seen: dict[str, None] = {}
    for item in checkpointer.list(None):
        seen.setdefault(item.config["configurable"]["thread_id"], None)
    return list(seen)


def _postgres_rows(saver: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on a PostgresSaver's connection (or its pool), as tuples."""
    from psycopg import Connection
    from psycopg.rows import tuple_row

    if isinstance(saver.conn, Connection):
        with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
            return cur.execute(sql).fetchall()
    with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
        return cur.execute(sql).fetchall()
