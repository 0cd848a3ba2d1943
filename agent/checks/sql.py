"""The ``sql`` kind: the artifact is a query, run read-only against an SQLite file on disk.

The query runs in the sandbox (``agent/sandbox/sql_runner.py``: an authorizer that allows only
reads, a time limit, a row cap) as a throw-away user, so a database the host alone may read
stays unread. With a ``reference`` query the results must be equal, in order only when the
reference itself orders them; numbers compare exactly.
"""

from __future__ import annotations

import json
import re
import stat
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.checks.registry import register_check
from agent.checks.report import CheckReport, make_report, short
from agent.sandbox import Job, program, run_jobs

SQL_TIME_LIMIT_S = 2.0
SQL_MAX_ROWS = 10_000
Row = tuple[Any, ...]


def _validate_sql(spec: dict[str, Any]) -> list[str]:
    errors = []
    if not isinstance(spec.get("db"), str) or not spec["db"].strip():
        errors.append("kind 'sql' needs 'db': the path of an SQLite database file")
    rows = spec.get("expect_rows")
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 0):
        errors.append("'expect_rows' must be a non-negative integer")
    reference = spec.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        errors.append("'reference' must be an SQL query")
    return errors


def _check_sql(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    query = files[path].strip()
    db = Path(spec["db"])
    if not query:
        return make_report("sql", False, 0.0, f"{path} holds no query")
    if not db.is_file():
        return make_report("sql", False, 0.0, f"database {spec['db']} not found")
    if problem := _unreadable_by_others(db):
        return make_report("sql", False, 0.0, problem)
    queries = [query] + ([spec["reference"]] if spec.get("reference") else [])
    outcomes = _run_queries(db, queries)
    if isinstance(outcomes, str):
        return make_report("sql", False, 0.0, outcomes)
    for outcome in outcomes:
        if "refused" in outcome:
            return make_report("sql", False, 0.0, f"refused: {outcome['refused']}")
        if "error" in outcome:
            return make_report("sql", False, 0.0, f"query failed: {outcome['error']}")
    rows = [_row(r) for r in outcomes[0]["rows"]]
    expected = spec.get("expect_rows")
    if expected is not None and len(rows) != expected:
        return make_report("sql", False, 0.0, f"got {len(rows)} rows; expected {expected}")
    if len(outcomes) == 2:
        return _against_reference(rows, [_row(r) for r in outcomes[1]["rows"]], spec["reference"])
    return make_report("sql", True, 1.0, f"query returned {len(rows)} rows")


def _against_reference(rows: list[Row], reference: list[Row], query: str) -> CheckReport:
    """Equal to the reference's rows; the reference says whether order matters, never the
    query under check."""
    ordered = _has_top_level_order_by(query)
    difference = _first_difference(rows, reference, ordered=ordered)
    if difference:
        return make_report("sql", False, 0.0, difference)
    how = "in order" if ordered else "as a multiset"
    return make_report("sql", True, 1.0, f"{len(rows)} rows, equal to the reference ({how})")


def _unreadable_by_others(db: Path) -> str | None:
    """The check reads as an unprivileged user: a database the host alone may read is not
    the check's to read, whatever the plan says (a 0600 file, a 0700 folder)."""
    full = db.resolve()
    if not full.stat().st_mode & stat.S_IROTH:
        return f"database {db} is not readable by other users (the check reads as one)"
    for folder in full.parents:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return f"database {db} is in {folder}, which other users cannot enter"
    return None


def _run_queries(db: Path, queries: list[str]) -> list[dict[str, Any]] | str:
    """Run the queries in the sandbox, bounded in time, memory and rows (evidence on failure)."""
    config = {
        "db": str(db.resolve()),
        "queries": "queries.json",
        "time_limit_s": SQL_TIME_LIMIT_S,
        "max_rows": SQL_MAX_ROWS,
    }
    job = Job(
        files={"sql_runner.py": program("sql_runner.py"), "queries.json": json.dumps(queries)},
        argv=["sql_runner.py", json.dumps(config)],
        readable=[str(db.resolve())],
        report=True,
    )
    timeout = SQL_TIME_LIMIT_S + 5.0  # interpreter start-up; the query itself is interrupted
    result = run_jobs([job], timeout_s=timeout, memory_mb=256, isolation="process")[0]
    try:
        outcomes = json.loads(result.report)["results"]
    except (ValueError, KeyError, TypeError):
        reason = result.killed_reason or f"exit code {result.returncode}"
        tail = " | ".join(result.stderr.strip().splitlines()[-2:])
        return f"query failed: the query was stopped ({reason}) {tail}".strip()
    return outcomes


def _row(cells: list[Any]) -> Row:
    return tuple(bytes.fromhex(c["b"]) if isinstance(c, dict) else c for c in cells)


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
        describe='{"kind": "sql", "db": "<path>", "reference": "SELECT ..."}',
    )
