"""``done_when`` checks: every kind passes and fails with evidence quoting the real tool result."""

from __future__ import annotations

import re
import sqlite3
import string
import sys
import time
import types
import uuid
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent import Context, ScriptedChatModel, build_graph, run, sandbox
from agent.checks import CheckScope, describe_kinds, register_check, validate_check_spec
from agent.checks import registry as check_registry
from agent.checks import run_check as _run_check
from agent.checks import sql as sql_kind
from agent.checks.report import EVIDENCE_CHARS
from agent.prompts import load_prompt, render

SLUG = "def slugify(text):\n    return text.lower()\n"
SLUG_FIXED = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"
SLUG_TESTS = (
    "from slug import slugify\n"
    "\n"
    "def test_spaces_become_dashes():\n"
    "    assert slugify('A B') == 'a-b'\n"
    "\n"
    "def test_lowercase():\n"
    "    assert slugify('AB') == 'ab'\n"
)

WEAKER = " [weaker isolation: process sandbox; install bubblewrap for kernel isolation]"


def run_check(*args, **kwargs):
    """``run_check`` with the process sandbox's one-line warning taken off the evidence, so
    the exact evidence below holds under either isolation level (test_forgery tests it)."""
    report = _run_check(*args, **kwargs)
    return {**report, "evidence": report["evidence"].removesuffix(WEAKER)}


def check(spec, content: str | None, path: str = "out.txt", **kwargs):
    files = {} if content is None else {path: content}
    return run_check(spec, files, path, **kwargs)


# -- exists, non_empty, contains, regex ---------------------------------------------------


def test_exists_check_passes_for_a_produced_artifact_even_if_empty():
    report = check({"kind": "exists"}, "")

    assert report == {
        "kind": "exists",
        "passed": True,
        "score": 1.0,
        "evidence": report["evidence"],
    }
    assert "out.txt exists" in report["evidence"]


def test_exists_check_fails_for_a_missing_artifact():
    report = check({"kind": "exists"}, None)

    assert not report["passed"] and report["score"] == 0.0
    assert report["evidence"] == "artifact out.txt was not produced"


def test_non_empty_check_fails_for_blank_content():
    report = check({"kind": "non_empty"}, "  \n\t")

    assert not report["passed"]
    assert "blank" in report["evidence"]


def test_missing_spec_means_non_empty():
    assert check(None, "text")["passed"]
    assert check(None, "") == {
        "kind": "non_empty",
        "passed": False,
        "score": 0.0,
        "evidence": "out.txt is blank (0 characters)",
    }


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "non_empty"},
        {"kind": "contains", "all": ["x"]},
        {"kind": "regex", "pattern": "x"},
        {"kind": "json_schema", "schema": {}},
        {"kind": "python", "code": "pass"},
        {"kind": "pytest", "tests": ["test_x.py"]},
        {"kind": "sql", "db": "any.sqlite"},
        {"kind": "citations"},
        {"kind": "rubric", "criteria": ["clear"]},
    ],
    ids=lambda spec: spec["kind"],
)
def test_every_kind_but_exists_fails_when_the_artifact_was_not_produced(spec):
    report = run_check(spec, {"other.txt": "x", "test_x.py": "def test(): pass"}, "out.txt")

    assert report == {
        "kind": spec["kind"],
        "passed": False,
        "score": 0.0,
        "evidence": "artifact out.txt was not produced",
    }


def test_contains_check_passes_when_every_string_occurs():
    report = check({"kind": "contains", "all": ["## Summary", "## Risks"]}, "## Summary\n## Risks")

    assert report["passed"] and report["score"] == 1.0


def test_contains_check_names_the_missing_strings_and_scores_the_share_found():
    report = check({"kind": "contains", "all": ["alpha", "beta", "gamma"]}, "alpha only")

    assert not report["passed"]
    assert report["score"] == pytest.approx(1 / 3)
    assert "'beta'" in report["evidence"] and "'gamma'" in report["evidence"]
    assert "'alpha'" not in report["evidence"]


def test_regex_check_matches_across_lines():
    report = check({"kind": "regex", "pattern": r"^## Risks$"}, "# Title\n\n## Risks\n- none")

    assert report["passed"]
    assert "line 3" in report["evidence"]


def test_regex_check_with_catastrophic_backtracking_fails_within_its_bound():
    started = time.monotonic()

    report = run_check({"kind": "regex", "pattern": r"^(\w+\s?)*$"}, {"a": "a" * 40 + "!"}, "a")

    assert not report["passed"]  # no match, or "took longer than": never a hung host
    assert time.monotonic() - started < 10


def test_regex_check_fails_when_the_pattern_is_absent():
    report = check({"kind": "regex", "pattern": r"\d{4}-\d{2}-\d{2}"}, "no date here")

    assert not report["passed"]
    assert "not found in out.txt" in report["evidence"]


def test_regex_check_with_a_bad_pattern_fails_with_the_re_error():
    report = check({"kind": "regex", "pattern": "(unclosed"}, "text")

    assert not report["passed"]
    assert "missing ), unterminated subpattern at position 0" in report["evidence"]


# -- json_schema ----------------------------------------------------------------------------

ORDER_SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"price": {"type": "number"}}},
        }
    },
}


def test_json_schema_check_passes_for_valid_json():
    report = check({"kind": "json_schema", "schema": ORDER_SCHEMA}, '{"items": [{"price": 2.5}]}')

    assert report["passed"] and report["score"] == 1.0


def test_json_schema_check_names_the_json_path_of_the_violation():
    report = check({"kind": "json_schema", "schema": ORDER_SCHEMA}, '{"items": [{"price": "2"}]}')

    assert not report["passed"]
    assert report["evidence"].startswith("$.items[0].price: '2' is not of type 'number'")


def test_json_schema_check_quotes_the_parse_error_with_line_and_column():
    report = check({"kind": "json_schema", "schema": ORDER_SCHEMA}, '{\n  "items": [\n}')

    assert not report["passed"]
    assert "not valid JSON" in report["evidence"]
    assert "line 3 column 1" in report["evidence"]


def test_json_schema_check_with_an_invalid_schema_fails_with_the_schema_error():
    report = check({"kind": "json_schema", "schema": {"type": "integr"}}, "1")

    assert not report["passed"]
    assert "schema itself is invalid" in report["evidence"]
    assert "'integr'" in report["evidence"]


# -- python ---------------------------------------------------------------------------------


def python_check(code: str, artifact: str = SLUG, **spec):
    return run_check({"kind": "python", "code": code, **spec}, {"slug.py": artifact}, "slug.py")


def test_python_check_passes_when_the_check_code_runs_cleanly():
    report = python_check("assert slugify('AB') == 'ab'")

    assert report == {
        "kind": "python",
        "passed": True,
        "score": 1.0,
        "evidence": "slug.py ran and the check code passed",
    }


def test_python_check_quotes_the_failing_assertion_and_its_line():
    report = python_check("x = 1\n\nassert slugify('A B') == 'a-b'")

    assert not report["passed"]
    assert report["evidence"] == "AssertionError at line 3: assert slugify('A B') == 'a-b'"


def test_python_check_names_where_in_the_artifact_an_exception_was_raised():
    report = python_check("slugify(None)")

    assert report["evidence"] == (
        "AttributeError: 'NoneType' object has no attribute 'lower' at line 1: slugify(None) "
        "(raised in slug.py line 2: return text.lower())"
    )


def test_python_check_fails_when_the_artifact_itself_does_not_run():
    report = python_check("pass", artifact="import missing_module_xyz\n")

    assert not report["passed"]
    assert report["evidence"] == (
        "running slug.py raised ModuleNotFoundError: No module named 'missing_module_xyz' "
        "at line 1: import missing_module_xyz"
    )


def test_python_check_reports_a_syntax_error_with_its_line():
    report = python_check("pass", artifact="def broken(:\n    pass\n")

    assert "SyntaxError" in report["evidence"] and "def broken(:" in report["evidence"]


def test_python_check_treats_an_early_exit_as_unfinished():
    report = python_check("import os\nos._exit(0)\nassert False")

    assert not report["passed"]
    assert "exited before the tests finished" in report["evidence"]


# Hostile check code: each must end as a failed check with clear evidence within timeout + 1 s.
HOSTILE_TIMEOUT_S = 2


@pytest.mark.parametrize(
    ("code", "evidence"),
    [
        ("while True:\n    pass", "timed out after 2 s"),
        (
            "data = b'x' * 4_000_000_000",
            re.escape("MemoryError at line 1: data = b'x' * 4_000_000_000"),
        ),
        # the fork fails (RLIMIT_NPROC) or the run's summed memory is killed first
        ("import os\nwhile True: os.fork()", "Resource temporarily unavailable|memory limit"),
    ],
    ids=["infinite-loop", "4gb-allocation", "fork-bomb"],
)
def test_hostile_python_check_fails_within_its_time_bound(code, evidence):
    started = time.monotonic()

    report = python_check(code, timeout_s=HOSTILE_TIMEOUT_S)

    assert time.monotonic() - started < HOSTILE_TIMEOUT_S + 1
    assert not report["passed"] and report["score"] == 0.0
    assert re.search(evidence, report["evidence"]), report["evidence"]


def test_python_check_cannot_read_the_hosts_api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-4242")

    report = python_check("import os\nprint(os.environ['OPENAI_API_KEY'])", timeout_s=2)

    assert not report["passed"]
    assert report["evidence"].startswith("KeyError: 'OPENAI_API_KEY' at line 2")
    assert "sk-host-secret-4242" not in report["evidence"]


def test_python_check_cannot_write_outside_its_folder():
    target = Path(f"/tmp/deepreflect_escape_{uuid.uuid4().hex}")

    report = python_check(f"open({str(target)!r}, 'w').write('escaped')", timeout_s=2)

    assert not target.exists()  # kernel mode: a private /tmp; process mode: refused
    if sandbox.isolation_level() == "process":
        assert report["evidence"].startswith("PermissionError: sandbox: writing")


# -- pytest ---------------------------------------------------------------------------------

PYTEST_SPEC = {"kind": "pytest", "tests": ["tests/test_slug.py"]}


def test_pytest_check_passes_when_the_listed_tests_pass():
    files = {"slug.py": SLUG_FIXED, "tests/test_slug.py": SLUG_TESTS}

    report = run_check(PYTEST_SPEC, files, "slug.py")

    assert report["passed"] and report["score"] == 1.0
    assert report["evidence"] == "2 of 2 tests passed"


def test_pytest_check_scores_the_pass_rate_and_quotes_the_failing_assertion():
    files = {"slug.py": SLUG, "tests/test_slug.py": SLUG_TESTS}

    report = run_check(PYTEST_SPEC, files, "slug.py")

    assert not report["passed"]
    assert report["score"] == 0.5
    assert report["evidence"].startswith("1 failed of 2 tests (1 failed, 1 passed")
    assert "tests/test_slug.py:4: in test_spaces_become_dashes" in report["evidence"]
    assert "E   AssertionError: assert 'a b' == 'a-b'" in report["evidence"]


def test_pytest_check_quotes_a_collection_error():
    files = {"slug.py": "def other(): pass\n", "tests/test_slug.py": SLUG_TESTS}

    report = run_check(PYTEST_SPEC, files, "slug.py")

    assert not report["passed"] and report["score"] == 0.0
    assert "ImportError: cannot import name 'slugify' from 'slug'" in report["evidence"]


def test_pytest_check_ignores_a_project_ini_among_the_files():
    files = {
        "slug.py": SLUG_FIXED,
        "tests/test_slug.py": SLUG_TESTS,
        "pytest.ini": "[pytest]\naddopts = -qq\n",
    }

    report = run_check(PYTEST_SPEC, files, "slug.py")

    assert report == {
        "kind": "pytest",
        "passed": True,
        "score": 1.0,
        "evidence": "2 of 2 tests passed",
    }


def test_pytest_check_fails_naming_a_missing_test_file():
    report = run_check(PYTEST_SPEC, {"slug.py": SLUG}, "slug.py")

    assert not report["passed"]
    assert report["evidence"] == "test file not in files: tests/test_slug.py"


# -- sql ------------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (id INTEGER, name TEXT, price REAL)")
        connection.executemany(
            "INSERT INTO t VALUES (?, ?, ?)",
            [(1, "apple", 0.5), (2, "bread", 2.0), (3, "cheese", 7.25)],
        )
    connection.close()
    return path


def test_sql_check_reads_a_declared_database_the_host_alone_may_read(db):
    db.chmod(0o600)  # the user declared it: the host takes the snapshot the sandbox reads

    report = sql_check(db, "SELECT name FROM t WHERE price > 7")

    assert report["passed"] and report["evidence"] == "query returned 1 rows"


def test_sql_check_judges_order_from_the_reference_not_the_query(db):
    report = sql_check(db, "SELECT name FROM t", reference="SELECT name FROM t ORDER BY price DESC")

    assert not report["passed"] and "row 1 differs" in report["evidence"]


def test_sql_check_compares_numbers_exactly(db):
    report = sql_check(db, "SELECT price + 1e-12 FROM t", reference="SELECT price FROM t")

    assert not report["passed"]


def test_sql_check_with_a_reference_does_not_accept_any_rows_of_the_right_count(db):
    report = sql_check(db, "SELECT 1, 2, 3", expect_rows=1, reference="SELECT id FROM t LIMIT 1")

    assert not report["passed"]


def test_sql_check_bounds_a_query_that_builds_huge_values(db):
    started = time.monotonic()

    report = sql_check(db, "SELECT length(randomblob(2000000000))")

    assert not report["passed"] and "query failed" in report["evidence"]
    assert time.monotonic() - started < 30


def sql_check(db: Path, query: str, **spec):
    """The query against ``db``, declared as ``shop``."""
    files = {"q.sql": query}
    return run_check({"kind": "sql", "db": "shop", **spec}, files, "q.sql", databases={"shop": db})


def row_count(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        count = connection.execute("SELECT count(*) FROM t").fetchone()[0]
    connection.close()
    return count


def test_sql_check_passes_when_the_row_count_matches(db):
    report = sql_check(db, "SELECT * FROM t WHERE price > 1;", expect_rows=2)

    assert report["passed"]
    assert "2 rows" in report["evidence"]


def test_sql_check_fails_quoting_both_row_counts(db):
    report = sql_check(db, "SELECT * FROM t", expect_rows=2)

    assert not report["passed"]
    assert report["evidence"] == "got 3 rows; expected 2"


def test_sql_check_ignores_order_when_the_reference_has_no_order_by(db):
    report = sql_check(
        db,
        "SELECT name FROM t WHERE id IN (3, 1) ORDER BY name DESC",
        reference="SELECT name FROM t WHERE name IN ('cheese', 'apple')",
    )

    assert report["passed"]
    assert "as a multiset" in report["evidence"]


def test_sql_check_names_the_first_differing_row_from_the_reference(db):
    report = sql_check(db, "SELECT id, name FROM t", reference="SELECT id, upper(name) FROM t")

    assert not report["passed"]
    assert report["evidence"] == (
        "got 3 rows, reference 3; first unexpected row (1, 'apple'); first missing row (1, 'APPLE')"
    )


def test_sql_check_compares_in_order_when_the_reference_has_a_top_level_order_by(db):
    report = sql_check(
        db,
        "SELECT name FROM (SELECT name FROM t ORDER BY id) ORDER BY name DESC",
        reference="SELECT name FROM t ORDER BY name",
    )

    assert not report["passed"]
    assert "row 1 differs: got ('cheese',), want ('apple',)" in report["evidence"]


def test_sql_check_refuses_delete(db):
    report = sql_check(db, "DELETE FROM t")

    assert not report["passed"]
    assert report["evidence"].startswith("refused: DELETE t")
    assert row_count(db) == 3


def test_sql_check_refuses_attach(db, tmp_path):
    report = sql_check(db, f"ATTACH DATABASE '{tmp_path / 'other.sqlite'}' AS other")

    assert report["evidence"].startswith("refused: ATTACH")
    assert not (tmp_path / "other.sqlite").exists()


def test_sql_check_refuses_pragma(db):
    report = sql_check(db, "PRAGMA journal_mode = DELETE")

    assert report["evidence"].startswith("refused: PRAGMA journal_mode")


def test_sql_check_refuses_writing_a_copy_with_vacuum_into(db, tmp_path):
    report = sql_check(db, f"VACUUM INTO '{tmp_path / 'copy.sqlite'}'")

    assert report["evidence"].startswith("refused:")
    assert not (tmp_path / "copy.sqlite").exists()


def test_sql_check_runs_only_one_statement(db):
    report = sql_check(db, "SELECT 1; DELETE FROM t")

    assert not report["passed"]
    assert "one statement at a time" in report["evidence"]
    assert row_count(db) == 3


def test_sql_check_interrupts_a_runaway_query(db, monkeypatch):
    monkeypatch.setattr(sql_kind, "SQL_TIME_LIMIT_S", 0.2)
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n"

    report = sql_check(db, endless)

    assert not report["passed"]
    assert "longer than 0.2 s" in report["evidence"]


def test_sql_check_bounds_the_rows_it_fetches(db, monkeypatch):
    monkeypatch.setattr(sql_kind, "SQL_MAX_ROWS", 2)

    report = sql_check(db, "SELECT * FROM t")

    assert report["evidence"] == "query failed: the query returned more than 2 rows"


def test_sql_check_fails_for_a_declared_database_gone_since(tmp_path):
    report = sql_check(tmp_path / "nope.sqlite", "SELECT 1")

    assert report["evidence"] == (
        "declared database 'shop' cannot be read (No such file or directory)"
    )


# -- rubric ---------------------------------------------------------------------------------


@pytest.fixture
def fake_critic(monkeypatch):
    """Stand in for agent.checks.critique: records the call, finds a blocking issue
    unless told not to."""
    calls: list[dict] = []
    module = types.ModuleType("agent.checks.critique")

    def rubric_report(judge, *, task, path, content, criteria):
        calls.append({"judge": judge, "task": task, "path": path, "content": content})
        calls[-1]["criteria"] = criteria
        blocking = "TODO" in content
        evidence = "B1: the summary still says TODO" if blocking else "no blocking issue"
        return {"kind": "rubric", "passed": not blocking, "score": 0.4, "evidence": evidence}

    module.rubric_report = rubric_report
    monkeypatch.setitem(sys.modules, "agent.checks.critique", module)
    return calls


def test_rubric_check_passes_when_the_judge_finds_no_blocking_issue(fake_critic):
    judge = object()

    report = check(
        {"kind": "rubric", "criteria": ["cites sources"]}, "Done.", judge=judge, task="t"
    )

    assert report["passed"]
    assert fake_critic == [
        {
            "judge": judge,
            "task": "t",
            "path": "out.txt",
            "content": "Done.",
            "criteria": ["cites sources"],
        }
    ]


def test_rubric_check_fails_with_the_judges_evidence(fake_critic):
    report = check({"kind": "rubric", "criteria": ["complete"]}, "TODO", judge=object())

    assert report == {
        "kind": "rubric",
        "passed": False,
        "score": 0.4,
        "evidence": "B1: the summary still says TODO",
    }


def test_a_plain_string_spec_is_a_rubric_with_one_criterion(fake_critic):
    check("the answer names a date", "It was 1969.", judge=object())

    assert fake_critic[0]["criteria"] == ["the answer names a date"]


def test_rubric_check_without_a_judge_fails(fake_critic):
    report = check("is clear", "text")

    assert report["evidence"] == "no judge model configured for rubric check"
    assert fake_critic == []


# -- spec validation, registry, robustness ---------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"kind": "regex"}, "needs 'pattern'"),
        ({"kind": "contains", "all": "alpha"}, "needs 'all'"),
        ({"kind": "json_schema"}, "needs 'schema'"),
        ({"kind": "python", "code": 42}, "needs 'code'"),
        ({"kind": "python", "code": "pass", "timeout_s": -1}, "'timeout_s'"),
        ({"kind": "pytest", "tests": []}, "needs 'tests'"),
        ({"kind": "sql", "expect_rows": "3"}, "needs 'db'"),
        ({"kind": "sql", "db": "x.sqlite", "expect_rows": True}, "'expect_rows'"),
        ({"kind": "rubric", "criteria": [" "]}, "must not be blank"),
        ({"kind": "citations", "min": -1}, "kind 'citations' takes 'min'"),
        ({"kind": "teleport"}, "unknown check kind 'teleport'"),
        ({"pattern": "x"}, "needs a 'kind', one of: citations, contains, exists"),
        (42, "not int"),
        ("  ", "must not be blank"),
    ],
)
def test_malformed_specs_fail_with_a_clear_message_instead_of_raising(spec, problem):
    errors = validate_check_spec(spec)
    report = check(spec, "content")

    assert any(problem in error for error in errors), errors
    assert not report["passed"]
    assert report["evidence"].startswith("invalid check spec: ")
    assert problem in report["evidence"]


@pytest.mark.parametrize(
    "spec",
    [
        None,
        "reads well",
        {"kind": "exists"},
        {"kind": "regex", "pattern": "^x"},
        {"kind": "python", "code": "pass", "timeout_s": 2},
        {"kind": "sql", "db": "a.sqlite", "expect_rows": 0, "reference": "SELECT 1"},
        {"kind": "citations"},
        {"kind": "citations", "min": 3},
    ],
)
def test_valid_specs_have_no_validation_errors(spec):
    assert validate_check_spec(spec) == []


@pytest.fixture
def registry(monkeypatch):
    """Give each test its own copy of the registry: its kinds leave with it."""
    monkeypatch.setattr(check_registry, "_CHECKS", dict(check_registry._CHECKS))


def test_a_registered_custom_kind_is_dispatched_like_the_built_ins(registry):
    def word_count(spec, files, path):
        words = len(files[path].split())
        passed = words >= spec["min"]
        return {"kind": "word_count", "passed": passed, "score": 1.0, "evidence": f"{words} words"}

    register_check("word_count", word_count)

    assert validate_check_spec({"kind": "word_count", "min": 3}) == []
    assert check({"kind": "word_count", "min": 3}, "one two three")["passed"]
    assert check({"kind": "word_count", "min": 3}, "one")["evidence"] == "1 words"
    assert check({"kind": "word_count", "min": 3}, None)["evidence"] == (
        "artifact out.txt was not produced"
    )


def test_a_kind_may_validate_a_spec_against_what_its_plan_step_will_reach(registry):
    def needs_input(spec, scope):
        return [] if spec["input"] in scope.files else [f"{spec['input']} is not an input"]

    register_check("reads", always_passes, validate_in_scope=needs_input)
    spec = {"kind": "reads", "input": "a.md"}

    assert validate_check_spec(spec) == []  # outside a plan nothing is known of its step
    assert validate_check_spec(spec, CheckScope(files=frozenset({"a.md"}))) == []
    assert validate_check_spec(spec, CheckScope()) == ["a.md is not an input"]


def test_re_registering_a_built_in_kind_raises(registry):
    with pytest.raises(ValueError, match="built in"):
        register_check("regex", lambda spec, files, path: {"passed": True})


BUILT_IN_KINDS = (
    "exists",
    "non_empty",
    "contains",
    "regex",
    "json_schema",
    "syntax",
    "python",
    "pytest",
    "sql",
    "citations",
    "rubric",
)


def always_passes(spec, files, path):
    return {"passed": True, "evidence": "fine"}


def test_the_built_in_kinds_are_the_ten_of_the_design():
    # and those the evidence floor builds: ``all`` and the typed checks of what a goal
    # states (not offered to the planner, but sealed)
    built = {"all", "examples", "json_shape", "sections"}
    assert check_registry.builtin_kinds() == set(BUILT_IN_KINDS) | built
    offered = check_registry.describe_kinds()
    assert not [k for k in built if f'"kind": "{k}"' in offered]


@pytest.mark.parametrize("kind", BUILT_IN_KINDS)
def test_no_built_in_kind_can_be_replaced_by_a_registration(kind, registry):
    before = check_registry._CHECKS[kind]

    with pytest.raises(ValueError, match=f"check kind '{kind}' is built in"):
        register_check(kind, always_passes, describe=f'{{"kind": "{kind}"}} (always passes)')

    assert check_registry._CHECKS[kind] is before
    assert "always passes" not in describe_kinds()


def test_a_custom_kind_registered_again_is_replaced(registry):
    register_check("word_count", lambda spec, files, path: {"passed": False, "evidence": "old"})
    register_check("word_count", lambda spec, files, path: {"passed": True, "evidence": "new"})

    assert check({"kind": "word_count"}, "x")["evidence"] == "new"


def test_a_custom_kind_with_a_validator_refuses_a_bad_spec(registry):
    def needs_min(spec):
        return [] if isinstance(spec.get("min"), int) else ["kind 'word_count' needs 'min'"]

    register_check("word_count", always_passes, validate=needs_min)

    assert validate_check_spec({"kind": "word_count"}) == ["kind 'word_count' needs 'min'"]
    assert check({"kind": "word_count"}, "x")["evidence"] == (
        "invalid check spec: kind 'word_count' needs 'min'"
    )


def test_the_planner_is_offered_every_built_in_kind_in_family_order():
    lines = describe_kinds().splitlines()

    assert [line.split('"kind": "')[1].split('"')[0] for line in lines] == list(BUILT_IN_KINDS)
    assert any("another step's artifact" in line for line in lines if '"pytest"' in line)
    assert any("research steps" in line for line in lines if '"citations"' in line)


def test_a_kind_registered_without_describe_is_offered_by_its_name(registry):
    register_check("word_count", always_passes)

    assert describe_kinds().splitlines()[-1] == '  - {"kind": "word_count"}'


@pytest.mark.parametrize("describe", ["", "   ", "first line\nsecond line", 42])
def test_a_describe_that_is_not_one_line_of_text_is_refused(describe, registry):
    with pytest.raises(ValueError, match="one non-blank line"):
        register_check("word_count", always_passes, describe=describe)

    assert "word_count" not in describe_kinds()


def test_the_planner_prompt_has_a_place_for_the_kinds_and_no_hand_written_list():
    template = load_prompt("planner")
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    filled = render("planner", **{name: f"<{name}>" for name in fields})

    assert "check_kinds" in fields
    assert not any(f'"kind": "{kind}"' in filled for kind in BUILT_IN_KINDS)


def planner_prompt() -> str:
    """Every message the planner node sends on a real graph run. The planner answers with no
    plan, so the run pauses for a human right after planning twice; nothing else runs."""
    planner = ScriptedChatModel(responder=lambda messages: "no plan today")
    graph = build_graph(models={"planner": planner}, checkpointer=InMemorySaver())
    result = run(graph, "Count the words", context=Context(model="scripted:happy"))
    assert result["status"] == "awaiting_input", result
    return "\n".join(str(message.content) for message in planner.calls[0])


def test_a_kind_registered_with_describe_is_in_the_planner_prompt_only_once_registered(registry):
    line = '{"kind": "word_count", "min": 3} (the artifact has at least min words)'
    before = planner_prompt()

    register_check("word_count", always_passes, describe=line)
    after = planner_prompt()

    assert '"word_count"' not in before
    assert line in after
    assert describe_kinds() in after  # the built-in kinds are listed from the registry too


def test_a_crashing_custom_check_becomes_a_failed_report(registry):
    def broken(spec, files, path):
        raise RuntimeError("boom")

    register_check("broken", broken)

    assert check({"kind": "broken"}, "x") == {
        "kind": "broken",
        "passed": False,
        "score": 0.0,
        "evidence": "check crashed: RuntimeError: boom",
    }


def test_evidence_is_capped(registry):
    report = check({"kind": "contains", "all": [f"missing-{i}-" * 10 for i in range(50)]}, "x")

    assert len(report["evidence"]) <= EVIDENCE_CHARS


def test_file_entries_are_accepted_and_deleted_files_count_as_missing():
    entry = {"content": "hello", "status": "active"}

    assert run_check({"kind": "non_empty"}, {"a.txt": entry}, "a.txt")["passed"]
    assert run_check({"kind": "exists"}, {"a.txt": None}, "a.txt")["evidence"] == (
        "artifact a.txt was not produced"
    )


# -- what the step's tools returned, lent to the check ------------------------------------


def test_run_check_lends_the_tool_outputs_to_the_check_and_only_for_the_call(registry):
    from agent.checks import current_judge, current_tool_outputs

    seen = []

    def grounded(spec, files, path):
        seen.append((current_tool_outputs(), current_judge()))
        return {"passed": files[path] in "".join(current_tool_outputs()), "evidence": "seen"}

    register_check("grounded", grounded)
    judge = object()

    report = check({"kind": "grounded"}, "42", judge=judge, task="t", tool_outputs=["it is 42"])
    plain = check({"kind": "grounded"}, "42")

    assert report["passed"] and not plain["passed"]
    assert seen == [(("it is 42",), (judge, "t")), ((), (None, ""))]
    assert current_tool_outputs() == () and current_judge() == (None, "")


def test_tool_outputs_reach_the_citations_check_through_run_check():
    spec = {"kind": "citations"}
    artifact = "Mercury is closest [1](https://a.com/mercury)."

    grounded = check(spec, artifact, path="notes.md", tool_outputs=["[1] https://a.com/mercury"])
    ungrounded = check(spec, artifact, path="notes.md", tool_outputs=["[1] https://b.org/venus"])

    assert grounded["passed"], grounded
    assert not ungrounded["passed"]
    assert "https://a.com/mercury" in ungrounded["evidence"]
