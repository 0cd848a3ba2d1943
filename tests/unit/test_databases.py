"""Declared databases: names a plan may give to a sql check, paths only the user may give."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from agent import Context
from agent.checks import CheckScope, validate_check_spec
from agent.checks.databases import (
    DatabaseError,
    declare_databases,
    format_databases,
    is_database_name,
    parse_databases,
)
from agent.plan.planner import describe_databases
from agent.plan.validation import parse_plan as _parse_plan
from agent.prompts import render

ACTIONS = {"writer", "coder"}
NEVER = "a check never opens a host path"


def parse_plan(*args, **kwargs):
    """The repairs a small model's profile turns on are under test here."""
    return _parse_plan(*args, repairs=True, **kwargs)


def sqlite_file(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (x)")
    connection.close()
    return path


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return sqlite_file(tmp_path / "shop.db")


# -- names and the text form --------------------------------------------------------------


@pytest.mark.parametrize("name", ["chinook", "_x", "Shop_2", "a-b", "x" * 64])
def test_identifier_like_names_are_database_names(name):
    assert is_database_name(name)


@pytest.mark.parametrize(
    "name", ["", "1db", "a.b", "a/b", "../x", "x y", "x" * 65, ":memory:", "file:x", "é", None, 3]
)
def test_names_that_could_be_paths_or_uris_are_not_database_names(name):
    assert not is_database_name(name)


def test_the_text_form_reads_pairs_and_keeps_commas_inside_paths():
    assert parse_databases(" a=/d/a.db , b = /d/x,y.db ") == {"a": "/d/a.db", "b": "/d/x,y.db"}
    assert parse_databases("") == {}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("chinook", "is not NAME=PATH"),
        ("chinook=", "is not NAME=PATH"),
        ("1x=/a.db", "database name '1x'"),
        ("a.b=/a.db", "database name 'a.b'"),
        ("a=/x.db,a=/y.db", "declared twice"),
    ],
)
def test_a_malformed_text_form_is_refused_naming_the_entry(text, problem):
    with pytest.raises(DatabaseError, match=problem):
        parse_databases(text)


def test_a_path_the_text_form_cannot_carry_is_refused_when_written():
    assert parse_databases(format_databases({"a": "/d/a.db", "b": "/d/b.db"})) == {
        "a": "/d/a.db",
        "b": "/d/b.db",
    }
    with pytest.raises(DatabaseError, match="cannot be written"):
        format_databases({"a": "/d/x,b=/y.db"})


# -- declaring ----------------------------------------------------------------------------


def test_a_declaration_resolves_a_relative_path_now(shop, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    declared = declare_databases({"shop": "shop.db"})
    monkeypatch.chdir("/")

    assert declared == {"shop": str(shop.resolve())}
    assert declare_databases(declared) == declared  # a re-declaration from elsewhere: unchanged


def test_a_declared_symlink_is_resolved_to_its_target_when_declared(shop, tmp_path):
    link = tmp_path / "link.db"
    link.symlink_to(shop)

    assert declare_databases({"shop": link}) == {"shop": str(shop.resolve())}


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: d / "missing.db", "cannot be read"),
        (lambda d: d, "is not a file"),
        (lambda d: (d / "notes.txt", (d / "notes.txt").write_text("hi"))[0], "not an SQLite"),
        (lambda d: (d / "empty.db", (d / "empty.db").write_bytes(b""))[0], "not an SQLite"),
    ],
)
def test_a_declaration_of_something_not_an_sqlite_file_is_refused(tmp_path, make, problem):
    with pytest.raises(DatabaseError, match=f"database 'shop': .*{problem}"):
        declare_databases({"shop": make(tmp_path)})


@pytest.mark.parametrize("name", ["a.db", "../x", "/abs", ""])
def test_a_declaration_with_a_path_like_name_is_refused(shop, name):
    with pytest.raises(DatabaseError, match="database name"):
        declare_databases({name: shop})


# -- Context ------------------------------------------------------------------------------


def test_the_context_field_is_described_for_studio():
    from dataclasses import fields

    field = next(f for f in fields(Context) if f.name == "databases")
    assert "name=path" in field.metadata["description"]


def test_the_context_takes_databases_from_the_environment_as_absolute_paths(
    shop, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPREFLECT_DATABASES", "shop=shop.db")

    ctx = Context()

    assert ctx.databases == f"shop={shop.resolve()}"
    assert ctx.declared_databases() == {"shop": str(shop.resolve())}
    assert ctx.validate() == []


def test_a_bad_context_declaration_is_named_with_its_field_and_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_DATABASES", f"shop={tmp_path / 'missing.db'}")

    problems = Context().validate()

    assert len(problems) == 1
    assert problems[0].startswith("databases: database 'shop'")
    assert problems[0].endswith("(from $DEEPREFLECT_DATABASES)")


def test_the_context_takes_a_mapping_as_the_same_text(shop, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    ctx = Context(databases={"shop": Path("shop.db")})  # type: ignore[arg-type]

    assert ctx.databases == f"shop={shop.resolve()}" and ctx.validate() == []


@pytest.mark.parametrize("text", ["shop", "1x=/a.db", "a=/x,a=/y"])
def test_a_malformed_context_declaration_declares_nothing_and_is_named(text):
    ctx = Context(databases=text)

    assert ctx.declared_databases() == {}
    assert any(p.startswith("databases: ") for p in ctx.validate())


# -- what a plan's sql check may name -----------------------------------------------------


@pytest.mark.parametrize(
    "db",
    [
        ".deepreflect/../x.db",
        "/root/.deepreflect/threads.sqlite",
        "../threads.sqlite",
        "a/../../x.db",
        "./shop.db",
        "a//b.db",
        "file:shop.db",
        "file:/etc/x.db?mode=ro",
        "file:///etc/x.db",
        ":memory:",
        "C:\\x.db",
        "x\\..\\y.db",
        "x\x00.db",
        "x\n.db",
    ],
)
def test_a_sql_check_naming_a_host_path_uri_or_special_name_is_invalid(db):
    errors = validate_check_spec({"kind": "sql", "db": db})

    assert len(errors) == 1 and NEVER in errors[0], errors


@pytest.mark.parametrize("db", ["chinook", "data/shop.sql", "shop.sqlite", "work/S2/x.sql"])
def test_a_sql_check_naming_a_name_or_a_thread_file_is_well_formed(db):
    assert validate_check_spec({"kind": "sql", "db": db}) == []


SCOPE = CheckScope(frozenset({"chinook", "shop"}), frozenset({"data/rows.sql"}))


@pytest.mark.parametrize("db", ["chinook", "shop", "data/rows.sql"])
def test_a_sql_check_may_name_what_its_step_will_reach(db):
    assert validate_check_spec({"kind": "sql", "db": db}, SCOPE) == []


@pytest.mark.parametrize(
    "db",
    [".deepreflect/threads.sqlite", "threads", "data/other.sql", "work/S2/x.sql", "q.sql", "Shop"],
)
def test_a_sql_check_naming_what_its_step_cannot_reach_is_refused_with_the_names(db):
    errors = validate_check_spec({"kind": "sql", "db": db}, SCOPE)

    assert len(errors) == 1
    assert "declared database (chinook, shop)" in errors[0]
    assert "data/rows.sql" in errors[0] and NEVER in errors[0]


def plan_with_sql(db: str, *, deps: tuple[str, ...] = ("S1",)) -> dict:
    check = {"kind": "sql", "db": db, "expect_rows": 1}
    return {
        "steps": [
            {
                "step_id": "S1",
                "depends_on": [],
                "action": "coder",
                "instructions": "Write the rows as SQL.",
                "expected_output": "data/rows.sql",
                "done_when": {"kind": "non_empty"},
            },
            {
                "step_id": "S2",
                "depends_on": list(deps),
                "action": "coder",
                "instructions": "Write the query.",
                "expected_output": "q.sql",
                "done_when": check,
            },
        ]
    }


def test_a_plan_naming_the_thread_store_is_refused_listing_the_declared_names():
    steps, errors = parse_plan(
        plan_with_sql(".deepreflect/threads.sqlite"),
        actions=ACTIONS,
        max_steps=5,
        databases=["chinook"],
    )

    assert steps is None
    assert len(errors) == 1 and errors[0].startswith("step S2: done_when sql check names")
    assert "(chinook)" in errors[0]


def test_a_plan_may_name_a_declared_database_or_a_dependency_output():
    for db in ("chinook", "data/rows.sql"):
        steps, errors = parse_plan(
            plan_with_sql(db), actions=ACTIONS, max_steps=5, databases=["chinook"]
        )
        assert errors == [] and steps is not None


def test_a_plan_naming_an_output_its_step_does_not_depend_on_gets_the_dependency():
    steps, errors = parse_plan(
        plan_with_sql("data/rows.sql", deps=()), actions=ACTIONS, max_steps=5
    )
    assert errors == [] and steps is not None
    assert steps[1].depends_on == [steps[0].step_id]


def test_a_plan_naming_a_database_nothing_writes_or_declares_is_refused():
    steps, errors = parse_plan(
        plan_with_sql("data/other.sql", deps=()), actions=ACTIONS, max_steps=5
    )
    assert steps is None and "none is declared" in errors[0]


def test_without_declarations_a_plan_naming_a_declared_looking_name_is_refused():
    steps, errors = parse_plan(plan_with_sql("chinook"), actions=ACTIONS, max_steps=5)

    assert steps is None and "chinook" in errors[0]


# -- what the planner sees ----------------------------------------------------------------


def test_the_planner_prompt_names_the_declared_databases_and_no_path(shop):
    system = render(
        "planner",
        actions="  - coder",
        check_kinds="  - sql",
        databases=describe_databases(["shop", "chinook"]),
        max_plan_steps=5,
        planning="",
    )

    assert "chinook, shop" in system
    assert str(shop) not in system and os.sep + "shop.db" not in system


def test_the_planner_prompt_says_when_no_database_is_declared():
    assert describe_databases([]) == render("planner_no_databases").rstrip()
    assert describe_databases([]) != describe_databases(["shop"])
