"""The ``sql`` check's program: run queries read-only against one database, in the sandbox.

The database comes with the job, never from a path: an SQLite image (a declared database's
snapshot, or a thread file holding one) is loaded into memory, or a thread file holding SQL
(a dump: ``CREATE TABLE``, ``INSERT``) is run into an empty in-memory database, under an
authorizer that refuses ``ATTACH``, ``PRAGMA`` (but ``foreign_keys``), virtual tables and
risky functions. No file is opened by SQLite at all.

Each query then runs on a connection that is ``query_only``, does not trust its schema and
has an authorizer that allows only reads (writes, ATTACH, PRAGMA and DDL are refused before
anything executes); a progress handler interrupts it at the time limit; values, rows and the
result's size are capped. The sandbox around it bounds memory and wall time for what those
cannot. Results go to the report descriptor.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

_READ = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_READ.add(sqlite3.SQLITE_RECURSIVE)  # WITH RECURSIVE only reads; the time limit bounds it
# building a database from a thread's SQL text: tables, rows, indexes, views and triggers
_BUILD = _READ | {
    getattr(sqlite3, f"SQLITE_{name}")
    for name in (
        "INSERT UPDATE DELETE TRANSACTION SAVEPOINT CREATE_TABLE CREATE_INDEX CREATE_VIEW "
        "CREATE_TRIGGER DROP_TABLE DROP_INDEX DROP_VIEW DROP_TRIGGER ALTER_TABLE REINDEX ANALYZE"
    ).split()
}
_BUILD_PRAGMAS = {"foreign_keys"}  # what `sqlite3 db .dump` writes first
_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name
    for name in (
        "INSERT UPDATE DELETE ATTACH DETACH PRAGMA TRANSACTION SAVEPOINT ALTER_TABLE REINDEX "
        "ANALYZE CREATE_INDEX CREATE_TABLE CREATE_TEMP_INDEX CREATE_TEMP_TABLE "
        "CREATE_TEMP_TRIGGER CREATE_TEMP_VIEW CREATE_TRIGGER CREATE_VIEW CREATE_VTABLE "
        "DROP_INDEX DROP_TABLE DROP_TEMP_INDEX DROP_TEMP_TABLE DROP_TEMP_TRIGGER "
        "DROP_TEMP_VIEW DROP_TRIGGER DROP_VIEW DROP_VTABLE FUNCTION"
    ).split()
}
# functions that reach outside the database where a build has them
_FUNCTIONS_DENIED = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
_MAX_VALUE_BYTES = 1_000_000
_HEADER = b"SQLite format 3\x00"
Authorizer = Callable[[int, Any, Any, Any, Any], int]


def cell(value: Any) -> Any:
    return {"b": bytes(value).hex()} if isinstance(value, bytes | memoryview) else value


def size_of(value: Any) -> int:
    """Bytes a value adds to the report, roughly (a number counts as 8)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bytes | memoryview):
        return 2 * len(value)
    return 8


def authorizer(
    allowed: set[int], pragmas: set[str], denied: list[str], read: set[str] | None = None
) -> Authorizer:
    """An authorizer allowing ``allowed`` actions and ``pragmas``, recording what it refused
    and, in ``read``, the tables the statement reads (``count(*)`` reads its table too)."""

    def authorize(action: int, arg1: Any, arg2: Any, _db: Any, _source: Any) -> int:
        if action == sqlite3.SQLITE_READ and read is not None and arg1:
            read.add(str(arg1))
        function = arg2 if action == sqlite3.SQLITE_FUNCTION else None
        if action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in pragmas:
            return sqlite3.SQLITE_OK
        if action in allowed and str(function).lower() not in _FUNCTIONS_DENIED:
            return sqlite3.SQLITE_OK
        target = " ".join(str(a) for a in (arg1, arg2) if a)
        denied.append(f"{_NAMES.get(action, f'action {action}')} {target}".strip())
        return sqlite3.SQLITE_DENY

    return authorize


def bounded(connection: sqlite3.Connection, time_limit_s: float) -> Callable[[], bool]:
    """Interrupt whatever runs on ``connection`` after ``time_limit_s``; returns a function
    telling whether the limit was reached."""
    deadline = time.monotonic() + time_limit_s
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
    return lambda: time.monotonic() > deadline


def open_database(source: dict[str, str], time_limit_s: float) -> sqlite3.Connection | str:
    """An in-memory connection holding the job's database, ready for read-only queries, or
    why there is none."""
    connection = sqlite3.connect(":memory:")
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    try:
        if "image" in source:
            load_image(connection, source["image"])
        else:
            problem = build(connection, source["script"], time_limit_s)
            if problem:
                connection.close()
                return problem
        connection.execute("PRAGMA trusted_schema = OFF")  # views may not call risky functions
        connection.execute("PRAGMA query_only = ON")
        connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except (sqlite3.Error, ValueError, OSError) as exc:
        connection.close()
        return f"{type(exc).__name__}: {exc}"
    return connection


def load_image(connection: sqlite3.Connection, name: str) -> None:
    """Deserialize the image in file ``name`` (base64); a WAL-mode header is read as a
    rollback one, since an in-memory database has no WAL."""
    with open(name, "rb") as handle:
        data = bytearray(base64.b64decode(handle.read(), validate=True))
    if not data.startswith(_HEADER):
        raise ValueError("the file is not an SQLite database")
    if len(data) > 19 and data[18] == data[19] == 2:
        data[18] = data[19] = 1
    connection.deserialize(bytes(data))


def build(connection: sqlite3.Connection, name: str, time_limit_s: float) -> str | None:
    """Run the SQL text of file ``name`` into the empty database; why not, or None."""
    with open(name, encoding="utf-8") as handle:
        script = handle.read()
    denied: list[str] = []
    connection.set_authorizer(authorizer(_BUILD, _BUILD_PRAGMAS, denied))
    late = bounded(connection, time_limit_s)
    try:
        connection.executescript(script)
    except sqlite3.Error as exc:
        if denied:
            return f"building it was refused: {denied[0]} ({exc})"
        if late():
            return f"building it ran longer than {time_limit_s:g} s and was interrupted"
        return f"building it failed: {type(exc).__name__}: {exc}"
    finally:
        connection.set_authorizer(None)
        connection.set_progress_handler(None, 0)
    if connection.in_transaction:
        connection.commit()
    return None


def run(
    connection: sqlite3.Connection,
    query: str,
    time_limit_s: float,
    max_rows: int,
    max_bytes: int,
) -> dict[str, Any]:
    denied: list[str] = []
    read: set[str] = set()
    connection.set_authorizer(authorizer(_READ, set(), denied, read))
    late = bounded(connection, time_limit_s)
    rows: list[list[Any]] = []
    size = 0
    try:
        cursor = connection.execute(query)
        if cursor.description is None:  # comments only ("-- No changes required"), or no result
            return {"error": "the file holds no query that returns rows (a SELECT)"}
        for row in cursor:  # one row at a time: the caps hold as it grows
            rows.append([cell(v) for v in row])
            size += sum(size_of(v) for v in row) + 8
            if len(rows) > max_rows:
                return {"error": f"the query returned more than {max_rows} rows"}
            if size > max_bytes:
                return {"error": f"the query's result is larger than {max_bytes} bytes"}
    except sqlite3.Error as exc:
        if denied:
            return {"refused": f"{denied[0]} ({exc})"}
        if late():
            return {"error": f"the query ran longer than {time_limit_s:g} s and was interrupted"}
        return {"error": f"{type(exc).__name__}: {exc}"}
    except ValueError as exc:  # e.g. more than one statement
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        connection.set_authorizer(None)
        connection.set_progress_handler(None, 0)
    columns = [str(d[0]) for d in cursor.description]
    return {
        "rows": rows,
        "columns": columns,
        "tables": sorted(read),
        "scans": scans(connection, query),
    }


def scans(connection: sqlite3.Connection, query: str) -> list[str] | None:
    """The names the query's plan scans or searches (a table, or the alias it is read by):
    the authorizer misses a table joined ``USING`` whose columns are not otherwise read.
    None when there is no plan to read."""
    connection.set_authorizer(authorizer(_READ, set(), []))
    try:
        plan = connection.execute("EXPLAIN QUERY PLAN " + query).fetchall()
    except (sqlite3.Error, ValueError):
        return None
    finally:
        connection.set_authorizer(None)
    found = []
    for row in plan:
        words = str(row[-1]).split()
        if len(words) > 1 and words[0] in ("SCAN", "SEARCH"):
            found.append(words[1])
    return found


def main() -> None:
    config = json.loads(sys.argv[1])
    with open(config["queries"], encoding="utf-8") as handle:
        queries = json.load(handle)
    opened = open_database(config["database"], config["time_limit_s"])
    report: dict[str, Any] = {"finished": True}
    if isinstance(opened, str):
        report["database_error"] = opened
    else:
        limits = (config["time_limit_s"], config["max_rows"], config["max_result_bytes"])
        report["results"] = [run(opened, q, *limits) for q in queries]
        opened.close()
    with os.fdopen(int(os.environ["DEEPREFLECT_REPORT_FD"]), "w", encoding="utf-8") as out:
        json.dump(report, out)
    os._exit(0)


if __name__ == "__main__":
    main()
