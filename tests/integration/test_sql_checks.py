"""A ``sql`` check opens only a database the user declared or a file of the thread.

The adversary writes the plan (its ``db``), the query, and the thread's files. The host
holds a secret in world-readable SQLite files beside the working directory (the thread
store among them); whatever the adversary names or queries, the secret never reaches the
evidence and no host file changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import Context, build_graph, run, sandbox
from agent.checks import run_check
from agent.checks import sql as sql_kind
from agent.errors import ConfigError
from agent.runs.runner import thread_config
from tests.fakes import END, ROOT, cli, ctx, models, sqlite_graph, step, writer

SECRET = "TOP-SECRET-goal-4711"
NEVER = "a check never opens a host path"
ITEMS = [(1, "apple", 0.5), (2, "bread", 2.0), (3, "cheese", 7.25)]


def make_db(path: Path, rows: list[tuple[Any, ...]] = ITEMS, **pragmas: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    for name, value in pragmas.items():
        connection.execute(f"PRAGMA {name} = {value}")
    connection.execute("CREATE TABLE items (id INTEGER, name TEXT, price REAL)")
    connection.executemany("INSERT INTO items VALUES (?, ?, ?)", rows)
    connection.commit()
    connection.close()
    path.chmod(0o644)
    return path


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory of the host: its thread store and another database hold the
    secret, readable by anyone, with a symlink to one of them."""
    folder = tmp_path / "host"
    folder.mkdir()
    folder.chmod(0o777)  # even a world-writable folder: nothing may be written into it
    secret_rows = [(9, SECRET, 1.0)]
    make_db(folder / ".deepreflect" / "threads.sqlite", secret_rows)
    make_db(folder / "secret.db", secret_rows)
    (folder / "link.db").symlink_to(folder / "secret.db")
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_db(tmp_path / "declared" / "shop.db")


@pytest.fixture(params=["kernel", "process"])
def level(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both sandbox isolation levels (kernel skipped where bubblewrap cannot run)."""
    if request.param == "kernel" and sandbox.isolation.bwrap_path() is None:
        pytest.skip(f"no usable bubblewrap: {sandbox.isolation._probe_error()}")
    monkeypatch.setenv("DEEPREFLECT_SANDBOX", request.param)
    return request.param


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (symlinks as their target) with its hash."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "-> " + str(path.readlink())
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def check(db: str, query: str, files: dict[str, str] | None = None, **spec: Any):
    declared = {"shop": str(Path.cwd().parent / "declared" / "shop.db")}
    all_files = {"q.sql": query, **(files or {})}
    return run_check({"kind": "sql", "db": db, **spec}, all_files, "q.sql", databases=declared)


def assert_held(report: dict[str, Any], host: Path, before: dict[str, str]) -> None:
    assert not report["passed"], report
    assert SECRET not in json.dumps(report)
    assert snapshot(host) == before


# -- a declared database --------------------------------------------------------------------


def test_a_query_against_a_declared_database_passes_on_the_right_rows(host, shop, level):
    report = check("shop", "SELECT name FROM items WHERE price > 1", expect_rows=2)

    assert report["passed"] and report["evidence"] == "query returned 2 rows"


def test_a_query_against_a_declared_database_fails_on_the_wrong_rows(host, shop, level):
    report = check("shop", "SELECT name FROM items", reference="SELECT name FROM items LIMIT 2")

    assert not report["passed"]
    assert report["evidence"] == "got 3 rows, reference 2; first unexpected row ('cheese',)"


SHOP = (
    "CREATE TABLE genre (GenreId INTEGER, Name TEXT);\n"
    "CREATE TABLE tracks (TrackId INTEGER, Name TEXT, GenreId INTEGER);\n"
    "INSERT INTO genre VALUES (1, 'Rock'), (2, 'Jazz');\n"
    "INSERT INTO tracks VALUES (1, 'Song A', 1), (2, 'Song B', 1), (3, 'Song C', 2);\n"
)
COUNTS = "SELECT {name}, COUNT(*) AS n FROM genre g JOIN tracks t USING (GenreId) GROUP BY {name}"


@pytest.mark.parametrize(
    ("name", "passed"),
    [("g.Name", True), ("t.Name", False), ("g.Name AS genre_name", True)],
    ids=["the-genre-s-name", "the-track-s-name", "renamed-not-judged"],
)
def test_a_column_the_goal_says_comes_from_a_table_holds_that_table_s_values(
    host, level, name, passed
):
    # on the 1.5B a query returning the track's Name for "the genre's Name" ran and passed
    sources = [
        {"column": "Name", "table": "genre"},
        {"column": "Name", "table": "track"},  # found as "tracks": the plural is tried
        {"column": "request", "table": "user"},  # no such table: not judged
    ]
    query = COUNTS.format(name=name).replace("GROUP BY g.Name AS genre_name", "GROUP BY 1")
    report = check("shop.sql", query, {"shop.sql": SHOP}, values_from=sources[:1] + sources[2:])
    assert report["passed"] is passed, report
    if not passed:
        assert "'Song A'" in report["evidence"] and "genre's Name" in report["evidence"]
    tracks = check("shop.sql", "SELECT Name FROM tracks", {"shop.sql": SHOP}, values_from=sources)
    assert tracks["passed"]  # the genre's and the track's Name: which is which is not told
    only = check("shop.sql", "SELECT Name FROM tracks", {"shop.sql": SHOP}, values_from=sources[:1])
    assert not only["passed"] and "genre" in only["evidence"]


def test_one_row_per_table_row_where_the_goal_asks_for_it(host, level):
    # on the 1.5B a query grouped by genre and track returned Rock three times, one each
    per_track = (
        "SELECT g.Name, COUNT(*) AS n FROM genre g JOIN tracks t USING (GenreId) "
        "GROUP BY g.Name, t.TrackId"
    )
    once = [{"column": "Name", "table": "genre", "distinct": True}]
    report = check("shop.sql", per_track, {"shop.sql": SHOP}, values_from=once)
    assert not report["passed"] and "'Rock' on 2 rows" in report["evidence"]
    per_genre = per_track.replace(", t.TrackId", "")
    assert check("shop.sql", per_genre, {"shop.sql": SHOP}, values_from=once)["passed"]
    many = [{"column": "Name", "table": "genre"}]  # no one-row-per-genre asked: not judged
    assert check("shop.sql", per_track, {"shop.sql": SHOP}, values_from=many)["passed"]


@pytest.mark.parametrize(
    ("query", "passed"),
    [
        ("SELECT Name, COUNT(*) AS track_count FROM genre GROUP BY Name", False),
        (
            "SELECT g.Name, COUNT(*) AS track_count FROM genre g JOIN tracks USING (GenreId) "
            "GROUP BY g.Name",
            True,
        ),
        (
            "SELECT Name, (SELECT count(*) FROM tracks t WHERE t.GenreId = g.GenreId) FROM genre g",
            True,
        ),
    ],
    ids=["counts-genre-rows", "joins-the-tracks", "counts-in-a-subquery"],
)
def test_a_table_the_goal_counts_must_be_read_by_the_query(host, level, query, passed):
    # d12 (2026-12-06): "its number of tracks" counted Genre rows (1 each) and passed
    report = check("shop.sql", query, {"shop.sql": SHOP}, reads=["tracks", "users"])
    assert report["passed"] is passed, report  # "users": no such table, not judged
    if not passed:
        assert "never reads table tracks" in report["evidence"]


def test_reads_takes_plain_names_only(host):
    report = check("shop.sql", "SELECT 1", {"shop.sql": SHOP}, reads=["a b"])
    assert not report["passed"] and "reads" in report["evidence"]


@pytest.mark.parametrize(
    "bad", [[{"column": "Na me", "table": "genre"}], [{"column": "Name"}], "x"]
)
def test_values_from_takes_plain_names_only(host, bad):
    report = check("shop.sql", "SELECT 1", {"shop.sql": SHOP}, values_from=bad)
    assert not report["passed"] and "values_from" in report["evidence"]


@pytest.mark.parametrize(
    "query", ["-- No changes required", "/* the query */ ;", "-- SELECT name FROM items"]
)
def test_a_file_of_comments_holds_no_query_and_fails(host, shop, level, query):
    """On the 1.5B a replan rewrote a finished ``top_genres.sql`` as "-- No changes
    required": it ran, returned nothing, and passed (a false success)."""
    report = check("shop", query)

    assert not report["passed"] and "holds no query that returns rows" in report["evidence"]


def test_a_declared_wal_database_is_read_with_its_latest_writes(tmp_path, host):
    path = make_db(tmp_path / "wal.db", journal_mode="wal")
    writer_connection = sqlite3.connect(path)  # held open: the WAL is not checkpointed
    writer_connection.execute("PRAGMA wal_autocheckpoint = 0")
    writer_connection.execute("INSERT INTO items VALUES (4, 'dates', 3.0)")
    writer_connection.commit()
    try:
        report = run_check(
            {"kind": "sql", "db": "wal", "expect_rows": 4},
            {"q.sql": "SELECT * FROM items"},
            "q.sql",
            databases={"wal": path},
        )
    finally:
        writer_connection.close()

    assert report["passed"], report


def test_a_declared_name_is_not_found_without_its_declaration(host, shop):
    report = run_check({"kind": "sql", "db": "shop"}, {"q.sql": "SELECT 1"}, "q.sql")

    assert not report["passed"]
    assert report["evidence"] == (
        f"database 'shop' is neither a declared database (declared: none) nor a file of the "
        f"thread; {NEVER}"
    )


def test_a_thread_file_named_like_a_declared_database_cannot_stand_in_for_it(host, shop, level):
    forged = "CREATE TABLE items (name TEXT); INSERT INTO items VALUES ('forged');"

    report = check("shop", "SELECT name FROM items", {"shop": forged}, expect_rows=1)

    assert not report["passed"] and report["evidence"] == "got 3 rows; expected 1"


def test_a_reference_query_gets_no_more_than_the_query(host, shop, level):
    attach = f"ATTACH DATABASE '{host / 'secret.db'}' AS s"

    report = check("shop", "SELECT 1", reference=attach)

    assert report["evidence"].startswith("refused: ATTACH")


def test_a_declared_database_too_large_to_copy_is_refused_before_it_is_read(
    host, shop, monkeypatch
):
    monkeypatch.setattr(sql_kind, "SQL_MAX_DB_BYTES", 1024)

    report = check("shop", "SELECT 1")

    assert not report["passed"]
    assert report["evidence"].startswith("declared database 'shop' has ")
    assert str(shop) not in report["evidence"]  # the model is never shown a declared path


# -- a plan naming what it may not ----------------------------------------------------------


HOST_NAMES = [
    ".deepreflect/threads.sqlite",
    "secret.db",
    "link.db",
    "../host/secret.db",
    "declared/../secret.db",
    "./secret.db",
    "file:secret.db",
    "file:secret.db?mode=ro",
    "file:///{host}/secret.db",
    "{host}/secret.db",
    "{host}/.deepreflect/threads.sqlite",
    ":memory:",
    "",
    "shop\x00",
]


@pytest.mark.parametrize("name", HOST_NAMES)
def test_a_plan_naming_a_host_file_never_reads_it(host, shop, name):
    before = snapshot(host)

    report = check(name.format(host=host), "SELECT * FROM items")

    assert_held(report, host, before)
    assert NEVER in report["evidence"] or "needs 'db'" in report["evidence"]


def test_a_thread_file_shadowing_a_host_file_is_read_from_the_thread(host, shop, level):
    files = {"secret.db": "CREATE TABLE items (name TEXT); INSERT INTO items VALUES ('vfs');"}

    report = check("secret.db", "SELECT name FROM items", files, reference="SELECT 'vfs'")

    assert report["passed"], report
    assert SECRET not in json.dumps(report)


# -- a query doing what it may not ----------------------------------------------------------


QUERIES = [
    "ATTACH DATABASE '{host}/secret.db' AS s",
    "ATTACH DATABASE 'file:{host}/secret.db?mode=ro' AS s",
    "ATTACH DATABASE '{host}/new.db' AS s",
    "VACUUM INTO '{host}/copy.db'",
    "VACUUM",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "SELECT * FROM pragma_database_list",
    "SELECT load_extension('{host}/evil')",
    "SELECT fts3_tokenizer('simple')",
    "DELETE FROM items",
    "INSERT INTO items VALUES (9, 'x', 0)",
    "UPDATE items SET name = 'x'",
    "CREATE TABLE z (x)",
    "CREATE TEMP TABLE z (x)",
    "DROP TABLE items",
    "WITH n AS (SELECT 1) INSERT INTO items SELECT 1, 'x', 0 FROM n",
    "SELECT 1; ATTACH DATABASE '{host}/secret.db' AS s",
    "REPLACE INTO items VALUES (1, 'x', 0)",
    "CREATE VIEW v AS SELECT 1",
]


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_that_writes_attaches_or_pragmas_is_refused(host, shop, level, query):
    before, declared_before = snapshot(host), snapshot(shop.parent)

    report = check("shop", query.format(host=host))

    assert_held(report, host, before)
    assert snapshot(shop.parent) == declared_before
    evidence = report["evidence"]
    assert evidence.startswith("refused: ") or "one statement at a time" in evidence, evidence


def test_a_query_that_runs_forever_is_interrupted(host, shop, level, monkeypatch):
    monkeypatch.setattr(sql_kind, "SQL_TIME_LIMIT_S", 0.3)
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n"
    started = time.monotonic()

    report = check("shop", endless)

    assert not report["passed"] and "longer than 0.3 s" in report["evidence"]
    assert time.monotonic() - started < 15


def test_a_query_with_a_huge_result_is_bounded_in_rows(host, shop, level, monkeypatch):
    monkeypatch.setattr(sql_kind, "SQL_MAX_ROWS", 50)
    many = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n"

    report = check("shop", many)

    assert report["evidence"] == "query failed: the query returned more than 50 rows"


def test_a_query_with_huge_values_is_bounded_in_size(host, shop, level, monkeypatch):
    monkeypatch.setattr(sql_kind, "SQL_MAX_RESULT_BYTES", 100_000)
    wide = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100) "
        "SELECT randomblob(10000) FROM n"
    )

    report = check("shop", wide)

    assert report["evidence"] == "query failed: the query's result is larger than 100000 bytes"


# -- a thread file as the database ----------------------------------------------------------


def test_a_thread_file_of_sql_text_is_the_database(host, shop, level):
    dump = "\n".join(sqlite3.connect(shop).iterdump())  # BEGIN; CREATE ...; INSERT ...; COMMIT;

    report = check("data/shop.sql", "SELECT * FROM items", {"data/shop.sql": dump}, expect_rows=3)

    assert report["passed"], report


def test_a_thread_file_holding_an_sqlite_file_byte_for_byte_is_the_database(host, shop, level):
    image = shop.read_bytes().decode("latin-1")

    report = check("data/shop.db", "SELECT * FROM items", {"data/shop.db": image}, expect_rows=3)

    assert report["passed"], report


def test_a_thread_file_that_only_looks_like_an_sqlite_file_is_refused(host, shop):
    mangled = shop.read_bytes().decode("latin-1") + "\u20ac"

    report = check("data/shop.db", "SELECT 1", {"data/shop.db": mangled})

    assert not report["passed"] and "latin-1" in report["evidence"]


SCRIPTS = [
    "ATTACH DATABASE '{host}/secret.db' AS s; CREATE TABLE items AS SELECT * FROM s.items;",
    "ATTACH DATABASE 'file:{host}/.deepreflect/threads.sqlite?mode=ro' AS s;",
    "CREATE TABLE items (x); VACUUM INTO '{host}/copy.db';",
    "PRAGMA writable_schema = ON; CREATE TABLE items (x);",
    "PRAGMA journal_mode = WAL; CREATE TABLE items (x);",
    "CREATE VIRTUAL TABLE items USING fts4(x);",
    "CREATE TABLE items (x); INSERT INTO items VALUES (load_extension('{host}/evil'));",
    "CREATE TABLE items (x); WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
    "INSERT INTO items SELECT x FROM r;",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_thread_file_of_sql_that_reaches_outside_is_refused(
    host, shop, level, script, monkeypatch
):
    monkeypatch.setattr(sql_kind, "SQL_TIME_LIMIT_S", 0.5)
    before = snapshot(host)
    files = {"data/db.sql": script.format(host=host)}

    report = check("data/db.sql", "SELECT * FROM items", files)

    assert_held(report, host, before)
    assert report["evidence"].startswith("database 'data/db.sql' cannot be opened: "), report


# -- the graph, the Context and the command line --------------------------------------------


def sql_plan(db: str, *, deps: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    check = {"kind": "sql", "db": db, "reference": "SELECT name FROM items WHERE price > 1"}
    return [step("S2", "q.sql", action="coder", deps=deps, check=check)]


QUERY = {"S2": "SELECT name FROM items WHERE price > 1"}


def test_a_graph_built_with_databases_runs_a_sql_check_on_them(tmp_path, host, shop):
    roles = models(sql_plan("shop"), [END], writer(QUERY))
    graph, _ = sqlite_graph(tmp_path / "g", roles, databases={"shop": shop})

    result = run(graph, "query the shop", context=ctx(), thread_id="t")

    assert result["status"] == "success", result
    assert result["artifacts"]["q.sql"]["status"] == "done"
    system = str(roles["planner"].calls[0][0].content)
    assert "shop" in system and str(shop) not in system


def test_a_context_declaration_serves_a_graph_built_without_one(tmp_path, host, shop):
    roles = models(sql_plan("shop"), [END], writer(QUERY))
    graph, _ = sqlite_graph(tmp_path / "g", roles)

    result = run(graph, "query the shop", context=ctx(databases=f"shop={shop}"), thread_id="t")

    assert result["status"] == "success", result


def test_a_graph_run_on_a_database_a_dependency_wrote(tmp_path, host, shop):
    dump = "\n".join(sqlite3.connect(shop).iterdump())
    plan = [step("S1", "data/shop.sql", action="coder"), *sql_plan("data/shop.sql", deps=("S1",))]
    roles = models(plan, [END], writer({"S1": dump, **QUERY}))
    graph, _ = sqlite_graph(tmp_path / "g", roles)

    result = run(graph, "query the shop", context=ctx(), thread_id="t")

    assert result["status"] == "success", result


def test_a_plan_naming_the_thread_store_is_refused_and_retried_with_the_declared_names(
    tmp_path, host, shop
):
    bad = {"steps": sql_plan(".deepreflect/threads.sqlite")}
    roles = models([bad, {"steps": sql_plan("shop")}], [END], writer(QUERY))
    graph, _ = sqlite_graph(tmp_path / "g", roles, databases={"shop": shop})

    result = run(graph, "query the shop", context=ctx(), thread_id="t")

    assert result["status"] == "success", result
    retry = str(roles["planner"].calls[1][-1].content)
    assert "'.deepreflect/threads.sqlite'" in retry and "declared database (shop)" in retry
    assert SECRET not in json.dumps(graph.get_state(thread_config("t")).values, default=str)


def test_a_plan_naming_host_paths_twice_stops_before_any_check_runs(tmp_path, host, shop):
    bad = {"steps": sql_plan(str(host / "secret.db"))}
    roles = models([bad] * 3, [], writer(QUERY))
    graph, _ = sqlite_graph(tmp_path / "g", roles, databases={"shop": shop})

    result = run(graph, "query the shop", context=ctx(), thread_id="t")

    assert result["status"] == "awaiting_input" and result["stop_reason"] == "invalid_plan"
    assert NEVER in result["escalation"]["question"]
    assert SECRET not in json.dumps(result, default=str)


def test_a_plan_naming_the_store_of_the_running_graph_never_quotes_another_thread(host, shop):
    store = host / ".deepreflect"
    other = models([step("S1", "a.md")], [END])
    graph, connection = sqlite_graph(store, other)
    assert run(graph, SECRET, context=ctx(), thread_id="other")["status"] == "success"
    connection.close()
    bad = {"steps": sql_plan(".deepreflect/threads.sqlite")}
    roles = models([bad] * 3, [], writer(QUERY))
    graph, _ = sqlite_graph(store, roles, databases={"shop": shop})

    result = run(graph, "query the shop", context=ctx(), thread_id="t")

    assert result["status"] == "awaiting_input" and result["stop_reason"] == "invalid_plan"
    assert "declared database (shop)" in result["escalation"]["question"]
    values = graph.get_state(thread_config("t")).values
    assert SECRET not in json.dumps(values, default=str)


@pytest.mark.parametrize(
    ("databases", "problem"),
    [
        ({"1shop": "x.db"}, "database name '1shop'"),
        ({"shop": "missing.db"}, "cannot be read"),
        ({"shop": "."}, "is not a file"),
    ],
)
def test_build_graph_refuses_a_bad_declaration(tmp_path, host, databases, problem):
    with pytest.raises(ConfigError, match=f"build_graph\\(databases=...\\): .*{problem}"):
        sqlite_graph(tmp_path / "g", models([]), databases=databases)


def test_the_cli_refuses_a_bad_database_flag_naming_it(tmp_path):
    done = cli("demo", "--database", f"shop={tmp_path / 'missing.db'}", db=tmp_path / "t.sqlite")

    assert done.returncode == 2, done.stderr
    assert "--database: database 'shop'" in done.stderr and "missing.db" in done.stderr


def test_the_cli_declares_a_database_with_its_absolute_path(tmp_path, shop):
    threads = tmp_path / "t.sqlite"
    relative = os.path.relpath(shop, ROOT)  # the CLI runs in the repository

    done = cli("demo", "--database", f"shop={relative}", "--json", db=threads)

    assert done.returncode == 0, done.stderr
    thread_id = json.loads(done.stdout)["thread_id"]
    assert stored_context(threads, thread_id)["databases"] == f"shop={shop.resolve()}"


def stored_context(threads: Path, thread_id: str) -> dict[str, Any]:
    """The Context a thread stored, read through a graph on its database."""
    connection = sqlite3.connect(threads, check_same_thread=False)
    try:
        graph = build_graph(checkpointer=SqliteSaver(connection))
        return dict(graph.get_state(thread_config(thread_id)).values["context"])
    finally:
        connection.close()


@pytest.fixture(autouse=True)
def _no_host_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No declaration leaks in from the environment of the test run."""
    monkeypatch.delenv("DEEPREFLECT_DATABASES", raising=False)
    yield


def test_the_context_rejects_a_declaration_naming_a_directory(tmp_path):
    assert any("is not a file" in p for p in Context(databases=f"x={tmp_path}").validate())


@pytest.mark.parametrize("swapped", ["the file", "a folder above it"])
def test_a_symlink_swapped_in_after_declaration_is_never_followed(tmp_path, host, swapped):
    from agent.checks.databases import declare_databases

    make_db(tmp_path / "data" / "shop.db")
    declared = declare_databases({"shop": str(tmp_path / "data" / "shop.db")})
    before = snapshot(host)
    if swapped == "the file":
        (tmp_path / "data" / "shop.db").rename(tmp_path / "data" / "old.db")
        (tmp_path / "data" / "shop.db").symlink_to(host / "secret.db")
    else:
        (tmp_path / "data").rename(tmp_path / "elsewhere")
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "shop.db").symlink_to(host / "secret.db")
        (tmp_path / "data").symlink_to(tmp_path / "other")

    report = run_check(
        {"kind": "sql", "db": "shop", "expect_rows": 1},
        {"q.sql": "SELECT name FROM items"},
        "q.sql",
        databases=declared,
    )

    assert_held(report, host, before)
    assert "changed since it was declared" in report["evidence"], report["evidence"]
