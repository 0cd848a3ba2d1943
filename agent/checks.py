"""``done_when`` checks: turn "done" into evidence a program produced (seeds 001, 003).

``run_check(spec, files, path)`` is the one check runner. Each kind is a function in one
dispatch table; custom kinds join it through ``register_check``. A check never raises: a
malformed spec, a missing artifact or a crashing check all become a failed ``CheckReport``
whose evidence says why. Generated code only ever runs in ``agent.sandbox``.
"""

from __future__ import annotations

import contextvars
import json
import re
import stat
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import jsonschema
import jsonschema.exceptions
import regex

from agent.code_checks import pytest_check, python_check
from agent.errors import ErrorClass, classify
from agent.sandbox import Job, run_jobs

if TYPE_CHECKING:
    from agent.critic import ChatModelLike

__all__ = [
    "CheckFn",
    "CheckReport",
    "register_check",
    "run_check",
    "validate_check_spec",
]

# errors of the rubric judge's model that run_check re-raises instead of failing the artifact
_MODEL_ERRORS = (ErrorClass.TRANSIENT, ErrorClass.PERMISSION_DENIED, ErrorClass.POLICY_REJECTED)
EVIDENCE_CHARS = 600
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 120.0
SQL_TIME_LIMIT_S = 2.0
REGEX_TIME_LIMIT_S = 1.0
SQL_MAX_ROWS = 10_000


class CheckReport(TypedDict):
    """The outcome of one check, as stored in a ``FileEntry`` and quoted by critiques."""

    kind: str
    """The check kind that ran (``"invalid"`` for a spec without a usable kind)."""
    passed: bool
    """Whether the artifact meets the spec."""
    score: float
    """0..1: 1/0 for binary kinds, the pass rate for pytest, the share found for contains."""
    evidence: str
    """A short quote of the tool result: the failing assertion, validation error, row count."""


CheckFn = Callable[[dict[str, Any], Mapping[str, str], str], CheckReport]
"""A check kind: ``(spec, files, path) -> CheckReport``; the artifact is ``files[path]``."""

_CHECKS: dict[str, CheckFn] = {}
_VALIDATORS: dict[str, Callable[[dict[str, Any]], list[str]]] = {}
_BUILTIN_KINDS = frozenset(
    {"exists", "non_empty", "contains", "regex", "json_schema", "python", "pytest", "sql", "rubric"}
)
# The rubric kind needs the judge and the task; the table's signature has no room for them,
# so run_check lends them for the duration of the call (thread- and task-safe).
_JUDGE: contextvars.ContextVar[tuple[ChatModelLike | None, str]] = contextvars.ContextVar(
    "deepreflect_check_judge", default=(None, "")
)


# -- public API -----------------------------------------------------------------------------


def register_check(kind: str, fn: CheckFn) -> None:
    """Add a custom check kind; built-in kind names cannot be replaced."""
    if not isinstance(kind, str) or not kind.strip() or not callable(fn):
        msg = "register_check needs a non-empty kind name and a callable"
        raise ValueError(msg)
    if kind in _BUILTIN_KINDS:
        msg = f"check kind {kind!r} is built in and cannot be re-registered"
        raise ValueError(msg)
    _CHECKS[kind] = fn


def validate_check_spec(spec: Any) -> list[str]:
    """Everything wrong with a ``done_when`` spec (empty when usable); the planner calls it too."""
    if spec is None:
        return []
    if isinstance(spec, str):
        return [] if spec.strip() else ["a rubric given as a string must not be blank"]
    if not isinstance(spec, Mapping):
        return [f"must be an object, a rubric string or null, not {type(spec).__name__}"]
    kind = spec.get("kind")
    known = ", ".join(sorted(_CHECKS))
    if kind is None:
        return [f"needs a 'kind', one of: {known}"]
    if not isinstance(kind, str) or kind not in _CHECKS:
        return [f"unknown check kind {kind!r}; known kinds: {known}"]
    validate = _VALIDATORS.get(kind)
    return validate(dict(spec)) if validate else []


def run_check(
    spec: dict[str, Any] | str | None,
    files: Mapping[str, Any],
    path: str,
    *,
    judge: ChatModelLike | None = None,
    task: str = "",
) -> CheckReport:
    """Check the artifact ``files[path]`` against ``spec``; never raises.

    ``None`` means ``{"kind": "non_empty"}``; a string is a rubric with that one criterion.
    ``files`` maps paths to contents (a ``FileEntry``'s ``content`` is accepted too).
    """
    errors = validate_check_spec(spec)
    normal = _normalise(spec) if not errors else {}
    kind = str(normal.get("kind") or _kind_of(spec))
    if errors:
        return _report(kind, False, 0.0, "invalid check spec: " + "; ".join(errors))
    contents = _contents(files)
    if kind != "exists" and path not in contents:
        return _report(kind, False, 0.0, f"artifact {path} was not produced")
    token = _JUDGE.set((judge, task))
    try:
        report = _CHECKS[kind](normal, contents, path)
    except Exception as exc:  # a check must fail with evidence, never crash the graph
        if kind == "rubric" and classify(exc) in _MODEL_ERRORS:
            raise  # the judge model failed, not the artifact: the worker handles its class
        report = _report(kind, False, 0.0, f"check crashed: {type(exc).__name__}: {exc}")
    finally:
        _JUDGE.reset(token)
    return _tidy(report, kind)


# -- plumbing -------------------------------------------------------------------------------


def _register_builtin(
    kind: str, fn: CheckFn, validate: Callable[[dict[str, Any]], list[str]] | None = None
) -> None:
    _CHECKS[kind] = fn
    if validate is not None:
        _VALIDATORS[kind] = validate


def _normalise(spec: Any) -> dict[str, Any]:
    if spec is None:
        return {"kind": "non_empty"}
    if isinstance(spec, str):
        return {"kind": "rubric", "criteria": [spec]}
    return dict(spec)


def _kind_of(spec: Any) -> str:
    if isinstance(spec, Mapping) and isinstance(spec.get("kind"), str):
        return spec["kind"]
    return "rubric" if isinstance(spec, str) else "invalid"


def _contents(files: Mapping[str, Any]) -> dict[str, str]:
    """Plain contents; deleted entries (None) count as absent."""
    out: dict[str, str] = {}
    for name, value in files.items():
        if isinstance(value, Mapping):
            value = value.get("content")
        if value is not None:
            out[name] = str(value)
    return out


def _report(kind: str, passed: bool, score: float, evidence: str) -> CheckReport:
    return {"kind": kind, "passed": passed, "score": score, "evidence": _clip(evidence)}


def _tidy(report: Any, kind: str) -> CheckReport:
    """Hold every report, custom ones included, to the CheckReport shape."""
    if not isinstance(report, Mapping) or "passed" not in report:
        return _report(kind, False, 0.0, f"check returned {type(report).__name__}, not a report")
    passed = bool(report["passed"])
    try:
        score = min(1.0, max(0.0, float(report.get("score", 1.0 if passed else 0.0))))
    except (TypeError, ValueError):
        score = 1.0 if passed else 0.0
    return _report(str(report.get("kind") or kind), passed, score, str(report.get("evidence", "")))


def _clip(text: str, limit: int = EVIDENCE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(value: Any, limit: int = 120) -> str:
    return _clip(repr(value), limit)


# -- spec validation ------------------------------------------------------------------------


def _needs_strings(spec: dict[str, Any], key: str) -> list[str]:
    value = spec.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return [f"kind {spec['kind']!r} needs {key!r}: a non-empty list of strings"]
    return []


def _valid_timeout(spec: dict[str, Any]) -> list[str]:
    value = spec.get("timeout_s", DEFAULT_TIMEOUT_S)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not 0 < value <= MAX_TIMEOUT_S:
        return [f"'timeout_s' must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]"]
    return []


def _validate_contains(spec: dict[str, Any]) -> list[str]:
    return _needs_strings(spec, "all")


def _validate_regex(spec: dict[str, Any]) -> list[str]:
    pattern = spec.get("pattern")
    if not isinstance(pattern, str):
        return ["kind 'regex' needs 'pattern': a string"]
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        return [f"regex pattern {pattern!r} does not compile: {exc}"]
    return []


def _validate_json_schema(spec: dict[str, Any]) -> list[str]:
    schema = spec.get("schema")
    if not isinstance(schema, dict | bool):
        return ["kind 'json_schema' needs 'schema': a JSON Schema object"]
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the schema itself is invalid: {exc.message}"]
    return []


def _validate_python(spec: dict[str, Any]) -> list[str]:
    errors = [] if isinstance(spec.get("code"), str) else ["kind 'python' needs 'code': a string"]
    return errors + _valid_timeout(spec)


def _validate_pytest(spec: dict[str, Any]) -> list[str]:
    return _needs_strings(spec, "tests") + _valid_timeout(spec)


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


def _validate_rubric(spec: dict[str, Any]) -> list[str]:
    errors = _needs_strings(spec, "criteria")
    if not errors and not all(c.strip() for c in spec["criteria"]):
        errors.append("rubric criteria must not be blank")
    return errors


# -- text kinds -----------------------------------------------------------------------------


def _check_exists(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    if path not in files:
        return _report("exists", False, 0.0, f"artifact {path} was not produced")
    return _report("exists", True, 1.0, f"{path} exists ({len(files[path].encode())} bytes)")


def _check_non_empty(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    content = files[path]
    if not content.strip():
        return _report("non_empty", False, 0.0, f"{path} is blank ({len(content)} characters)")
    return _report("non_empty", True, 1.0, f"{path} has {len(content.encode())} bytes of content")


def _check_contains(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    wanted = spec["all"]
    missing = [s for s in wanted if s not in files[path]]
    score = (len(wanted) - len(missing)) / len(wanted)
    if missing:
        quoted = ", ".join(_short(s, 80) for s in missing)
        evidence = f"{path} lacks {len(missing)} of {len(wanted)} required strings: {quoted}"
        return _report("contains", False, score, evidence)
    return _report("contains", True, 1.0, f"all {len(wanted)} required strings occur in {path}")


def _check_regex(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    # A pathological pattern can backtrack for ever and Python's re cannot be interrupted;
    # the regex package (same syntax) can: a time-out fails the check instead of the host.
    content = files[path]
    try:
        match = regex.search(spec["pattern"], content, regex.MULTILINE, timeout=REGEX_TIME_LIMIT_S)
    except TimeoutError:
        evidence = (
            f"pattern {spec['pattern']!r} took longer than {REGEX_TIME_LIMIT_S:g} s on {path}"
        )
        return _report("regex", False, 0.0, evidence)
    if match is None:
        return _report("regex", False, 0.0, f"pattern {spec['pattern']!r} not found in {path}")
    line = content.count("\n", 0, match.start()) + 1
    evidence = f"pattern matched at line {line} of {path}: {_short(match.group(0))}"
    return _report("regex", True, 1.0, evidence)


def _check_json_schema(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    try:
        instance = json.loads(files[path])
    except json.JSONDecodeError as exc:
        return _report("json_schema", False, 0.0, f"{path} is not valid JSON: {exc}")
    schema = spec["schema"]
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = list(validator.iter_errors(instance))
    if not errors:
        return _report("json_schema", True, 1.0, f"{path} is valid JSON matching the schema")
    best = jsonschema.exceptions.best_match(errors)
    more = f" ({len(errors)} errors; most relevant shown)" if len(errors) > 1 else ""
    return _report("json_schema", False, 0.0, f"{best.json_path}: {best.message}{more}")


# -- code kinds (sandboxed; agent.code_checks) ----------------------------------------------


def _timeout(spec: dict[str, Any]) -> float:
    return float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))


def _check_python(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    passed, score, evidence = python_check(files, path, spec["code"], _timeout(spec))
    return _report("python", passed, score, evidence)


def _check_pytest(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    passed, score, evidence = pytest_check(files, spec["tests"], _timeout(spec))
    return _report("pytest", passed, score, evidence)


# -- sql ------------------------------------------------------------------------------------


def _check_sql(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    query = files[path].strip()
    db = Path(spec["db"])
    if not query:
        return _report("sql", False, 0.0, f"{path} holds no query")
    if not db.is_file():
        return _report("sql", False, 0.0, f"database {spec['db']} not found")
    if problem := _unreadable_by_others(db):
        return _report("sql", False, 0.0, problem)
    queries = [query] + ([spec["reference"]] if spec.get("reference") else [])
    outcomes = _run_queries(db, queries)
    if isinstance(outcomes, str):
        return _report("sql", False, 0.0, outcomes)
    for outcome in outcomes:
        if "refused" in outcome:
            return _report("sql", False, 0.0, f"refused: {outcome['refused']}")
        if "error" in outcome:
            return _report("sql", False, 0.0, f"query failed: {outcome['error']}")
    rows = [_row(r) for r in outcomes[0]["rows"]]
    expected = spec.get("expect_rows")
    if expected is not None and len(rows) != expected:
        return _report("sql", False, 0.0, f"got {len(rows)} rows; expected {expected}")
    if len(outcomes) == 2:
        reference = [_row(r) for r in outcomes[1]["rows"]]
        # the reference says whether order matters, never the query under check
        ordered = _has_top_level_order_by(spec["reference"])
        difference = _first_difference(rows, reference, ordered=ordered)
        if difference:
            return _report("sql", False, 0.0, difference)
        how = "in order" if ordered else "as a multiset"
        return _report("sql", True, 1.0, f"{len(rows)} rows, equal to the reference ({how})")
    return _report("sql", True, 1.0, f"query returned {len(rows)} rows")


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
    program = (Path(__file__).parent / "sandbox" / "sql_runner.py").read_text(encoding="utf-8")
    config = {
        "db": str(db.resolve()),
        "queries": "queries.json",
        "time_limit_s": SQL_TIME_LIMIT_S,
        "max_rows": SQL_MAX_ROWS,
    }
    job = Job(
        files={"sql_runner.py": program, "queries.json": json.dumps(queries)},
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


def _row(cells: list[Any]) -> tuple[Any, ...]:
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


def _first_difference(
    rows: list[tuple[Any, ...]], reference: list[tuple[Any, ...]], *, ordered: bool
) -> str | None:
    """Name the first row where the result differs from the reference, or None when equal."""
    got, want = [_row_key(r) for r in rows], [_row_key(r) for r in reference]
    counts = f"got {len(rows)} rows, reference {len(reference)}"
    if ordered:
        for index, (a, b) in enumerate(zip(got, want, strict=False)):
            if a != b:
                shown = f"got {_short(rows[index])}, want {_short(reference[index])}"
                return f"{counts}; row {index + 1} differs: {shown}"
        return counts if len(got) != len(want) else None
    original = {**dict(zip(want, reference, strict=True)), **dict(zip(got, rows, strict=True))}
    extra = sorted((Counter(got) - Counter(want)).elements())
    lacking = sorted((Counter(want) - Counter(got)).elements())
    parts = [counts] if extra or lacking else []
    if extra:
        parts.append(f"first unexpected row {_short(original[extra[0]])}")
    if lacking:
        parts.append(f"first missing row {_short(original[lacking[0]])}")
    return "; ".join(parts) or None


def _row_key(row: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
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


# -- rubric ---------------------------------------------------------------------------------


def _check_rubric(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    judge, task = _JUDGE.get()
    if judge is None:
        return _report("rubric", False, 0.0, "no judge model configured for rubric check")
    from agent.critic import rubric_report  # lazy: the critic pulls in the model stack

    report = rubric_report(
        judge, task=task, path=path, content=files[path], criteria=list(spec["criteria"])
    )
    return _tidy(report, "rubric")


for _kind, _fn, _validate in (
    ("exists", _check_exists, None),
    ("non_empty", _check_non_empty, None),
    ("contains", _check_contains, _validate_contains),
    ("regex", _check_regex, _validate_regex),
    ("json_schema", _check_json_schema, _validate_json_schema),
    ("python", _check_python, _validate_python),
    ("pytest", _check_pytest, _validate_pytest),
    ("sql", _check_sql, _validate_sql),
    ("rubric", _check_rubric, _validate_rubric),
):
    _register_builtin(_kind, _fn, _validate)
del _kind, _fn, _validate
