"""The ``sql`` kind: the artifact is a query, run read-only against a database named by ``db``.

``db`` is a name a plan gives, so it never reaches the host's filesystem: it is a database
the user declared (``build_graph(databases=...)``, ``Context.databases``, ``--database``;
``run_check(..., databases=...)``), whose snapshot the host takes, or a file of the thread
(an SQLite file stored byte for byte as latin-1 text, or SQL text such as a ``.dump``). The
database travels into the sandbox with the job (``agent/sandbox/sql_runner.py``), which
loads it into memory and runs the queries under an authorizer that allows only reads, with a
time limit and caps on values, rows and result size. With a ``reference`` query the results
must be equal, in order only when the reference itself orders them; numbers compare exactly.
"""

from __future__ import annotations

import base64
import errno
import json
import math
import os
import re
import sqlite3
import stat
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.checks.databases import SQLITE_HEADER, absolute, is_database_name
from agent.checks.registry import CheckScope, current_databases, register_check
from agent.checks.report import CheckReport, make_report, short
from agent.sandbox import Job, program, run_jobs
from agent.vfs.entries import PathError, validate_path

SQL_TIME_LIMIT_S = 2.0
SQL_MAX_ROWS = 10_000
SQL_MAX_RESULT_BYTES = 8_000_000
SQL_MAX_DB_BYTES = 32 * 1024 * 1024
"""The largest database a check copies into its sandbox (it is loaded into memory there)."""
Row = tuple[Any, ...]
_NEVER_A_PATH = "a check never opens a host path"
VALUES_FROM = "values_from"
"""``[{"column": "Name", "table": "genre", "distinct": true}]``: the result's column of that
name holds values of that column of the table (the goal's "the genre's Name"), each once with
``distinct`` (the goal's "for the 3 genres with the most tracks"). On the 1.5B a query returning
the *track's* Name for the genre's passed a check that only ran it (a false success). The
table is looked up as written and in the singular and plural; a pair the database has no
such table or column for, or whose column the result does not have, is not judged."""
READS = "reads"
"""``["tracks"]``: the query reads each of these tables (the goal's "its number of tracks"),
looked up as written, singular and plural; a word the database has no table for is not
judged. On the 1.5B a query counting Genre rows (``COUNT(*) FROM Genre GROUP BY Name``) for
"the genre's Name and its number of tracks" returned the right genre names with 1 each, and
passed (a false success)."""
_SOURCE = ("column", "table")
_TABLES_QUERY = "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Database:
    """The database a check runs against, as the job carries it into the sandbox."""

    form: str
    """``image`` (base64 of an SQLite file) or ``script`` (SQL text to build one from)."""
    text: str
    size: int
    """Bytes of the database (or its SQL text)."""


def _validate_sql(spec: dict[str, Any]) -> list[str]:
    errors = []
    db = spec.get("db")
    if not isinstance(db, str) or not db.strip():
        errors.append(
            "kind 'sql' needs 'db': the name of a declared database or the path of a thread "
            "file holding an SQLite database or SQL text"
        )
    elif problem := _not_a_name(db):
        errors.append(
            f"'db' {db[:60]!r} is {problem}: {_NEVER_A_PATH}; name a declared database or a "
            "thread file"
        )
    rows = spec.get("expect_rows")
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 0):
        errors.append("'expect_rows' must be a non-negative integer")
    reference = spec.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        errors.append("'reference' must be an SQL query")
    sources = spec.get(VALUES_FROM)
    if sources is not None and (
        not isinstance(sources, list)
        or not all(
            isinstance(s, dict) and all(_IDENTIFIER.fullmatch(str(s.get(k, ""))) for k in _SOURCE)
            for s in sources
        )
    ):
        errors.append(
            f'\'{VALUES_FROM}\' must be a list of {{"column": name, "table": name}} '
            "(plain SQL names)"
        )
    reads = spec.get(READS)
    if reads is not None and (
        not isinstance(reads, list) or not all(_IDENTIFIER.fullmatch(str(w)) for w in reads)
    ):
        errors.append(f"'{READS}' must be a list of table names (plain SQL names)")
    return errors


def _not_a_name(db: str) -> str | None:
    """Why ``db`` is neither a database name nor a thread file path (None when it is one)."""
    if is_database_name(db):
        return None
    if ":" in db:  # file: URIs, :memory:, drive letters
        return "a URI or a special name"
    if db.startswith("/"):
        return "an absolute path"
    if ".." in db.split("/"):
        return "a path climbing out with '..'"
    try:
        normal = validate_path(db)
    except PathError as exc:
        return f"not a thread file path ({str(exc).removeprefix(f'path {db!r} ')})"
    if normal != db:
        return f"not a thread file path as written (it would be {normal!r})"
    return None


def _validate_sql_in_scope(spec: dict[str, Any], scope: CheckScope) -> list[str]:
    """A plan's ``db`` must be declared or be what a step it depends on writes (never the
    step's own writing: then the artifact would choose the rows it is checked against);
    otherwise the plan is refused with the names it may use."""
    db = spec["db"]
    if db in scope.databases or db in scope.files:
        return []
    if db in scope.thread_files and db != scope.artifact:
        return []  # a database already among the thread's files (the user's, say)
    declared = ", ".join(sorted(scope.databases)) or "none is declared"
    files = ", ".join(sorted(scope.files)) or "its step depends on none"
    return [
        f"sql check names database {db!r}, which its step cannot open: use a declared database "
        f"({declared}) or a file a step it depends on writes ({files}); {_NEVER_A_PATH}"
    ]


def _check_sql(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    query = files[path].strip()
    if not query:
        return make_report("sql", False, 0.0, f"{path} holds no query")
    database = _database(spec["db"], files, path)
    if isinstance(database, str):
        return make_report("sql", False, 0.0, database)
    queries = [query] + ([spec["reference"]] if spec.get("reference") else [])
    sources = _sources(spec)
    lookups = [q for source in sources for q in _lookups(source)]
    reads = [str(w) for w in spec.get(READS) or []]
    outcomes = _run_queries(database, queries + lookups + [_TABLES_QUERY] * bool(reads), spec["db"])
    if isinstance(outcomes, str):
        return make_report("sql", False, 0.0, outcomes)
    outcomes, looked_up = outcomes[: len(queries)], outcomes[len(queries) :]
    schema = looked_up.pop() if reads and looked_up else {}
    for outcome in outcomes:
        if "refused" in outcome:
            return make_report("sql", False, 0.0, f"refused: {outcome['refused']}")
        if "error" in outcome:
            return make_report("sql", False, 0.0, f"query failed: {outcome['error']}")
    rows = [_row(r) for r in outcomes[0]["rows"]]
    expected = spec.get("expect_rows")
    if expected is not None and len(rows) != expected:
        return make_report("sql", False, 0.0, f"got {len(rows)} rows; expected {expected}")
    columns = [str(c) for c in outcomes[0].get("columns") or []]
    if wrong := _foreign_values(rows, columns, sources, looked_up, _distinct(spec)):
        return make_report("sql", False, 0.0, wrong)
    if unread := _unread(reads, outcomes[0], schema.get("rows") or []):
        return make_report("sql", False, 0.0, unread)
    if len(outcomes) == 2:
        return _against_reference(rows, [_row(r) for r in outcomes[1]["rows"]], spec["reference"])
    return make_report("sql", True, 1.0, f"query returned {len(rows)} rows")


def _sources(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``values_from`` pairs as (column, table)."""
    return [(str(s["column"]), str(s["table"])) for s in spec.get(VALUES_FROM) or []]


def _distinct(spec: Mapping[str, Any]) -> dict[tuple[str, str], bool]:
    """Which ``values_from`` pairs ask for one row per row of their table."""
    return {
        (str(s["column"]), str(s["table"])): s.get("distinct") is True
        for s in spec.get(VALUES_FROM) or []
    }


def _tables(word: str) -> list[str]:
    """The table names a goal's word may stand for: as written, singular and plural."""
    singular = word[:-1] if word.lower().endswith("s") else word
    return list(dict.fromkeys([word, singular, singular + "s"]))


def _lookups(source: tuple[str, str]) -> list[str]:
    """For one pair, a query per candidate table: that column's distinct values (bracketed
    names: SQLite reads a double-quoted name it cannot resolve as a string, never these)."""
    column, word = source
    return [f"SELECT DISTINCT [{column}] FROM [{table}]" for table in _tables(word)]


def _unread(words: list[str], outcome: Mapping[str, Any], schema: list[Any]) -> str | None:
    """Why the query reads none of the tables a word of the goal stands for; None when it
    reads one for every word, the database has no table for the word, or the query's plan
    scans a name that is no table (an alias: what it stands for is not told, not judged)."""
    tables = [str(r[0]) for r in schema if r]
    known = {t.lower() for t in tables}
    scanned = outcome.get("scans")
    if scanned is None or any(str(n).lower() not in known for n in scanned):
        return None
    read = [str(t) for t in outcome.get("tables") or []] + [str(n) for n in scanned]
    done = {t.lower() for t in read}
    for word in words:
        wanted = {t.lower() for t in _tables(word)}
        have = [t for t in tables if t.lower() in wanted]
        if have and not done & {t.lower() for t in have}:
            return (
                f"the query never reads table {have[0]}: the goal asks for its {word}, which "
                f"only the rows of {have[0]} can give (it read "
                f"{', '.join(sorted(set(read))) or 'no table'})"
            )
    return None


def _foreign_values(
    rows: list[Row],
    columns: list[str],
    sources: list[tuple[str, str]],
    looked_up: list[Any],
    distinct: Mapping[tuple[str, str], bool],
) -> str | None:
    """Why a result column holds a value its table's column lacks, or the same value twice
    where the goal asks for one row per row of the table; None when neither."""
    answers = iter(looked_up)
    names = [c.lower() for c in columns]
    shared = Counter(column.lower() for column, _ in sources)
    for column, word in sources:
        found: list[dict[str, Any]] = [next(answers, {}) for _ in _tables(word)]
        values = next((a["rows"] for a in found if "rows" in a), None)
        if values is None or names.count(column.lower()) != 1 or shared[column.lower()] > 1:
            # no such table or column, the result names it otherwise, or two columns (or two
            # of the goal's tables) share the name: which is which cannot be told, not judged
            continue
        index = names.index(column.lower())
        known = {_row_key(_row(v))[0] for v in values if v}
        for row in rows:
            if row[index] is not None and _row_key((row[index],))[0] not in known:
                return (
                    f"column {columns[index]} holds {short(row[index])}, which is no {column} "
                    f"of table {word}: the goal asks for the {word}'s {column}"
                )
        seen = Counter(_row_key((row[index],))[0] for row in rows)
        if distinct.get((column, word)) and (twice := [k for k, n in seen.items() if n > 1]):
            value = next(row[index] for row in rows if _row_key((row[index],))[0] == twice[0])
            return (
                f"column {columns[index]} holds {short(value)} on {seen[twice[0]]} rows: the "
                f"goal asks for one row per {word}"
            )
    return None


def _database(name: str, files: Mapping[str, str], path: str) -> _Database | str:
    """The database ``name`` stands for: a declared one, else a file of the thread; never
    a host path (evidence saying which names there are otherwise)."""
    declared = current_databases()
    if name in declared:
        return _declared(name, declared[name])
    if name in files and name != path:
        return _thread_file(name, files[name])
    names = ", ".join(sorted(declared)) or "none"
    return (
        f"database {name[:80]!r} is neither a declared database (declared: {names}) nor a "
        f"file of the thread; {_NEVER_A_PATH}"
    )


def _declared(name: str, path: str) -> _Database | str:
    """A snapshot of the declared file, taken by the host (with its WAL, so a WAL database's
    recent writes are in it); evidence names the database, never its path, which the model
    is not shown. ``path`` was resolved once, when it was declared: it is opened here
    component by component without following any symbolic link, so a link swapped in since
    (for the file or a folder above it) is refused, never followed."""
    if not os.path.isabs(path):  # not declared through ``declare_databases``: resolved now
        path = absolute(path)
    try:
        image = _snapshot(path)
    except _Moved as exc:
        return f"declared database {name!r} {exc}"
    except (sqlite3.Error, OSError) as exc:
        return f"declared database {name!r} cannot be read: {type(exc).__name__}: {exc}"
    if isinstance(image, str):
        return f"declared database {name!r} {image}"
    if len(image) > SQL_MAX_DB_BYTES:
        return f"declared database {name!r} {_too_big(len(image))}"
    return _Database("image", base64.b64encode(image).decode("ascii"), len(image))


def _too_big(size: int) -> str:
    return f"has {size} bytes; a check copies at most {SQL_MAX_DB_BYTES} into its sandbox"


class _Moved(OSError):
    """A symbolic link now stands on the path declared (resolved) earlier."""


def _open_declared(path: str) -> tuple[int, str]:
    """The folder of ``path`` opened component by component with ``O_NOFOLLOW``, and the
    file's name in it: no symbolic link anywhere on the path is followed."""
    parts = [p for p in path.split(os.sep) if p]
    folder = os.open(os.sep, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    why = "changed since it was declared: a folder on its path is now a link"
                    raise _Moved(why) from exc
                raise
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder, parts[-1] if parts else ""


def _read_at(folder: int, name: str, limit: int) -> bytes | None:
    """The regular file ``name`` in ``folder`` (never through a link); None when absent."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Moved("changed since it was declared: a symbolic link now stands there") from exc
        raise
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _Moved("is not a file any more")
        return handle.read(limit + 1)


def _snapshot(path: str) -> bytes | str:
    """The database's bytes as a reader sees them: the file and its WAL, read without
    following links, copied to a private folder and read back by SQLite there; a phrase
    saying why not (too big, not SQLite) instead."""
    folder, name = _open_declared(path)
    try:
        main = _read_at(folder, name, SQL_MAX_DB_BYTES)
        if main is None:
            return "cannot be read (No such file or directory)"
        if len(main) > SQL_MAX_DB_BYTES:
            return _too_big(len(main))
        if not main.startswith(SQLITE_HEADER):
            return "is not an SQLite database (its first bytes are not 'SQLite format 3')"
        wal = _read_at(folder, f"{name}-wal", SQL_MAX_DB_BYTES)
    finally:
        os.close(folder)
    if not wal:
        return main
    with tempfile.TemporaryDirectory(prefix="deepreflect-db-") as private:
        copy = os.path.join(private, "db")
        Path(copy).write_bytes(main)
        Path(f"{copy}-wal").write_bytes(wal)
        connection = sqlite3.connect(copy)
        try:
            return connection.serialize()
        finally:
            connection.close()


def _thread_file(name: str, content: str) -> _Database | str:
    """A thread file as a database: an SQLite file stored byte for byte (latin-1 text,
    the one lossless mapping of bytes to text), or SQL text to build one from."""
    if not content.startswith(SQLITE_HEADER.decode("latin-1")):
        if len(content) > SQL_MAX_DB_BYTES:
            return f"thread file {name} {_too_big(len(content))}"
        return _Database("script", content, len(content.encode("utf-8", "surrogatepass")))
    try:
        image = content.encode("latin-1")
    except UnicodeEncodeError:
        return (
            f"thread file {name} starts like an SQLite database but holds characters above "
            "U+00FF: store a database's bytes as latin-1 text"
        )
    if len(image) > SQL_MAX_DB_BYTES:
        return f"thread file {name} {_too_big(len(image))}"
    return _Database("image", base64.b64encode(image).decode("ascii"), len(image))


def _run_queries(database: _Database, queries: list[str], name: str) -> list[dict[str, Any]] | str:
    """Run the queries in the sandbox, bounded in time, memory and rows (evidence on failure)."""
    carried = "database.b64" if database.form == "image" else "database.sql"
    config = {
        "database": {database.form: carried},
        "queries": "queries.json",
        "time_limit_s": SQL_TIME_LIMIT_S,
        "max_rows": SQL_MAX_ROWS,
        "max_result_bytes": SQL_MAX_RESULT_BYTES,
    }
    job = Job(
        files={
            "sql_runner.py": program("sql_runner.py"),
            "queries.json": json.dumps(queries),
            carried: database.text,
        },
        argv=["sql_runner.py", json.dumps(config)],
        report=True,
    )
    # start-up, the build of a script, then each query; each is interrupted at its limit
    timeout = SQL_TIME_LIMIT_S * (len(queries) + 1) + 5.0
    memory_mb = 256 + 4 * math.ceil(database.size / 2**20)  # the image is decoded in memory
    result = run_jobs([job], timeout_s=timeout, memory_mb=memory_mb)[0]
    try:
        report = json.loads(result.report)
        finished = report["finished"] is True
    except (ValueError, KeyError, TypeError):
        finished = False
    if not finished or result.killed_reason or result.returncode != 0:
        reason = result.killed_reason or f"exit code {result.returncode}"
        tail = " | ".join(result.stderr.strip().splitlines()[-2:])
        return f"query failed: the query was stopped ({reason}) {tail}".strip()
    if "database_error" in report:
        return f"database {name[:80]!r} cannot be opened: {report['database_error']}"
    return list(report["results"])


def _row(cells: list[Any]) -> Row:
    return tuple(bytes.fromhex(c["b"]) if isinstance(c, dict) else c for c in cells)


def _against_reference(rows: list[Row], reference: list[Row], query: str) -> CheckReport:
    """Equal to the reference's rows; the reference says whether order matters, never the
    query under check."""
    ordered = _has_top_level_order_by(query)
    difference = _first_difference(rows, reference, ordered=ordered)
    if difference:
        return make_report("sql", False, 0.0, difference)
    how = "in order" if ordered else "as a multiset"
    return make_report("sql", True, 1.0, f"{len(rows)} rows, equal to the reference ({how})")


def _has_top_level_order_by(query: str) -> bool:
    """True when the statement itself (not a subquery or window) ends with ORDER BY."""
    text = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", " ", query, flags=re.S)
    depth = 0
    flat = []
    for char in text:
        depth += char == "("
        flat.append(char if depth == 0 else " ")
        depth -= char == ")"
    return re.search(r"\border\s+by\b", "".join(flat), re.IGNORECASE) is not None


def _first_difference(rows: list[Row], reference: list[Row], *, ordered: bool) -> str | None:
    """Name the first row where the result differs from the reference, or None when equal."""
    got, want = [_row_key(r) for r in rows], [_row_key(r) for r in reference]
    counts = f"got {len(rows)} rows, reference {len(reference)}"
    if ordered:
        for index, (a, b) in enumerate(zip(got, want, strict=False)):
            if a != b:
                shown = f"got {short(rows[index])}, want {short(reference[index])}"
                return f"{counts}; row {index + 1} differs: {shown}"
        return counts if len(got) != len(want) else None
    original = {**dict(zip(want, reference, strict=True)), **dict(zip(got, rows, strict=True))}
    extra = sorted((Counter(got) - Counter(want)).elements())
    lacking = sorted((Counter(want) - Counter(got)).elements())
    parts = [counts] if extra or lacking else []
    if extra:
        parts.append(f"first unexpected row {short(original[extra[0]])}")
    if lacking:
        parts.append(f"first missing row {short(original[lacking[0]])}")
    return "; ".join(parts) or None


def _row_key(row: Row) -> tuple[tuple[int, Any], ...]:
    """A sortable, hashable key: SQLite mixes types in a column; numbers compare exactly."""

    def cell(value: Any) -> tuple[int, Any]:
        if value is None:
            return (0, 0)
        if isinstance(value, int | float):
            return (1, value)
        if isinstance(value, str):
            return (2, value)
        return (3, bytes(value))

    return tuple(cell(v) for v in row)


def register() -> None:
    """Register the ``sql`` kind; ``agent.checks`` calls this once."""
    register_check(
        "sql",
        _check_sql,
        validate=_validate_sql,
        validate_in_scope=_validate_sql_in_scope,
        describe=(
            '{"kind": "sql", "db": "<a declared database, or a file a step it depends on '
            'writes>", "reference": "SELECT ..."}'
        ),
    )
