"""The ``sql`` check's program: run queries read-only against one SQLite file, in the sandbox.

Each statement runs with an authorizer that allows only reads (writes, ATTACH, PRAGMA and DDL
are refused before anything executes), a progress handler that interrupts it at the time
limit, a cap on the length of any value and on the rows fetched. The sandbox around it bounds
memory and wall time for what those cannot (a single huge sort) and runs it as a throw-away
user, so it can open only databases any user may read. Results go to the report descriptor.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from typing import Any
from urllib.parse import quote

_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_ALLOWED.add(sqlite3.SQLITE_RECURSIVE)  # WITH RECURSIVE only reads; the time limit bounds it
_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name
    for name in (
        "INSERT UPDATE DELETE ATTACH DETACH PRAGMA TRANSACTION SAVEPOINT ALTER_TABLE REINDEX "
        "ANALYZE CREATE_INDEX CREATE_TABLE CREATE_TEMP_INDEX CREATE_TEMP_TABLE "
        "CREATE_TEMP_TRIGGER CREATE_TEMP_VIEW CREATE_TRIGGER CREATE_VIEW CREATE_VTABLE "
        "DROP_INDEX DROP_TABLE DROP_TEMP_INDEX DROP_TEMP_TABLE DROP_TEMP_TRIGGER "
        "DROP_TEMP_VIEW DROP_TRIGGER DROP_VIEW DROP_VTABLE"
    ).split()
}
_MAX_VALUE_BYTES = 1_000_000


def cell(value: Any) -> Any:
    return {"b": bytes(value).hex()} if isinstance(value, bytes | memoryview) else value


def run(db: str, query: str, time_limit_s: float, max_rows: int) -> dict[str, Any]:
    denied: list[str] = []

    def authorize(action: int, arg1: Any, arg2: Any, _db: Any, _source: Any) -> int:
        if action in _ALLOWED:
            return sqlite3.SQLITE_OK
        target = " ".join(str(a) for a in (arg1, arg2) if a)
        denied.append(f"{_NAMES.get(action, f'action {action}')} {target}".strip())
        return sqlite3.SQLITE_DENY

    deadline = time.monotonic() + time_limit_s
    try:
        connection = sqlite3.connect(f"file:{quote(db)}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return {"error": f"cannot open the database: {exc}"}
    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.set_authorizer(authorize)
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
        rows = connection.execute(query).fetchmany(max_rows + 1)
    except sqlite3.Error as exc:
        if denied:
            return {"refused": f"{denied[0]} ({exc})"}
        if time.monotonic() > deadline:
            return {"error": f"the query ran longer than {time_limit_s:g} s and was interrupted"}
        return {"error": f"{type(exc).__name__}: {exc}"}
    except ValueError as exc:  # e.g. more than one statement
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        connection.close()
    if len(rows) > max_rows:
        return {"error": f"the query returned more than {max_rows} rows"}
    return {"rows": [[cell(v) for v in row] for row in rows]}


def main() -> None:
    config = json.loads(sys.argv[1])
    with open(config["queries"], encoding="utf-8") as handle:
        queries = json.load(handle)
    results = [run(config["db"], q, config["time_limit_s"], config["max_rows"]) for q in queries]
    with os.fdopen(int(os.environ["DEEPREFLECT_REPORT_FD"]), "w", encoding="utf-8") as out:
        json.dump({"results": results, "finished": True}, out)
    os._exit(0)


if __name__ == "__main__":
    main()
