"""Opening threads databases (sync and async) and reading threads without the graph: the
view the read-only commands print must be the graph's own."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import pytest
from langchain_core.messages import HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from agent import Context, build_graph, open_checkpointer, resume, run
from agent.errors import ConfigError
from agent.reducers import append_all
from agent.runs.runner import thread_config
from agent.store.checkpointers import open_async_checkpointer
from agent.store.database_errors import NoThreads
from agent.store.threads import (
    DELTA_KEYS,
    checkpoint_time,
    parse_duration,
    plain_serde,
    stale_threads,
    thread_rows,
    thread_spans,
    thread_values,
)

pytest_plugins = ["tests.postgres"]


def _demo(db: str, scenario: str, thread_id: str) -> None:
    with open_checkpointer(db) as saver:
        run(
            build_graph(checkpointer=saver),
            "a goal",
            thread_id=thread_id,
            context=Context(model=f"scripted:{scenario}"),
        )


# ------------------------------------------------------------------ reading without the graph


def test_the_delta_keys_read_without_the_graph_are_the_states_with_the_same_reducers():
    from langgraph.channels.delta import DeltaChannel

    from agent.state import State

    hints = get_type_hints(State, include_extras=True)
    channels = {
        key: meta
        for key, hint in hints.items()
        for meta in getattr(hint, "__metadata__", ())
        if isinstance(meta, DeltaChannel)
    }
    assert set(channels) == set(DELTA_KEYS)
    samples = {
        list: ([{"a": 1}], [[{"b": 2}], [], [{"c": 3}]]),
        dict: ({"x": {"v": 1}}, [{"y": {"v": 2}}, {"x": None}, {"z": {"v": 3}}]),
        str: ("a goal", ["a new goal", "the goal, answered"]),
    }
    for key, (reducer, kind) in DELTA_KEYS.items():
        if key == "messages":  # LangChain's objects there, their fields here: the test below
            continue
        base, writes = samples[kind]
        assert reducer(base, writes) == channels[key].reducer(base, writes), key


@pytest.mark.slow  # runs checks in sandboxed processes
@pytest.mark.parametrize("scenario", ["demo", "escalation", "depth-cap", "replan"])
def test_a_thread_read_without_the_graph_has_the_graphs_values(scenario, tmp_path):
    db = str(tmp_path / "t.sqlite")
    _demo(db, scenario, "t")
    with open_checkpointer(db, write=False) as saver:
        expected = build_graph(checkpointer=saver).get_state(thread_config("t")).values
        assert thread_values(saver, "t") == expected
        assert thread_values(saver, "no-such-thread") is None


@pytest.mark.slow  # runs checks in sandboxed processes
def test_the_plain_serializer_leaves_messages_as_their_fields_and_the_rest_as_is(tmp_path):
    db = str(tmp_path / "t.sqlite")
    _demo(db, "demo", "t")
    with open_checkpointer(db, write=False) as saver:
        full = thread_values(saver, "t")
    with open_checkpointer(db, write=False, serde=plain_serde()) as saver:
        plain = thread_values(saver, "t")
    assert full is not None and plain is not None
    assert {k: v for k, v in plain.items() if k != "messages"} == {
        k: v for k, v in full.items() if k != "messages"
    }
    assert isinstance(full["messages"][0], HumanMessage)
    assert plain["messages"][0]["content"] == "a goal"


def test_checkpoint_ids_give_the_time_each_checkpoint_was_written(tmp_path):
    db = str(tmp_path / "t.sqlite")
    _demo(db, "happy", "t")
    with open_checkpointer(db, write=False) as saver:
        saved = saver.get_tuple(thread_config("t"))
        [(thread_id, first, last)] = thread_spans(saver)
        assert saved is not None and thread_id == "t"
        assert last == saved.config["configurable"]["checkpoint_id"]
        from datetime import datetime

        written = datetime.fromisoformat(saved.checkpoint["ts"]).timestamp()
        assert abs(checkpoint_time(last) - written) < 1
        assert checkpoint_time(first) <= checkpoint_time(last) <= time.time()
        [row] = thread_rows(saver)
        assert (row.thread_id, row.status, row.goal) == ("t", "success", "a goal")
        assert stale_threads(saver, 3600) == [] and stale_threads(saver, 0) == ["t"]
    assert checkpoint_time("not-a-uuid") is None
    assert checkpoint_time("00000000-0000-4000-8000-000000000000") is None  # uuid4


@pytest.mark.parametrize(
    ("text", "seconds"), [("7d", 7 * 86400), ("12h", 43200), ("30m", 1800), ("1d12h", 129600)]
)
def test_durations_read_as_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "seven days", "7y", "-1d", "1d x"])
def test_a_duration_that_does_not_parse_is_a_usage_error(text):
    with pytest.raises(ConfigError, match="--older-than wants a duration"):
        parse_duration(text)


# ------------------------------------------------------------------ readers create nothing


def test_a_reader_never_creates_a_database_or_its_folder(tmp_path):
    db = tmp_path / "missing" / "threads.sqlite"
    with pytest.raises(NoThreads, match="there is no threads database at"):
        with open_checkpointer(str(db), write=False):
            pass
    assert not db.parent.exists()


def test_a_reader_opens_an_existing_file_read_only_without_changing_it(tmp_path):
    db = tmp_path / "t.sqlite"
    _demo(str(db), "happy", "t")
    for sidecar in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        sidecar.unlink(missing_ok=True)
    before = db.read_bytes()
    with open_checkpointer(str(db), write=False) as saver:
        assert thread_values(saver, "t")["status"] == "success"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            saver.conn.execute("CREATE TABLE x (y)")
    assert db.read_bytes() == before


def test_an_empty_file_holds_no_threads_for_a_reader(tmp_path):
    db = tmp_path / "empty.sqlite"
    db.touch()
    with pytest.raises(NoThreads, match="holds no deepreflect threads"):
        with open_checkpointer(str(db), write=False):
            pass
    assert db.stat().st_size == 0


# ------------------------------------------------------------------ async checkpointers


async def _ainvoke(db: str, thread_id: str) -> dict[str, Any]:
    async with open_async_checkpointer(db) as saver:
        graph = build_graph(checkpointer=saver)
        return await graph.ainvoke(
            {"messages": [HumanMessage("a goal")]},
            thread_config(thread_id),
            context=Context(model="scripted:demo"),
        )


@pytest.mark.slow  # runs checks in sandboxed processes
def test_an_async_sqlite_checkpointer_runs_the_demo_on_a_real_file(tmp_path):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = str(tmp_path / ".deepreflect" / "t.sqlite")  # the one folder a threads path makes
    values = asyncio.run(_ainvoke(db, "t"))
    assert values["status"] == "success"
    with open_checkpointer(db, write=False) as saver:  # and it is a real, shared file
        assert thread_values(saver, "t")["status"] == "success"

    async def read() -> tuple[type, Any]:
        async with open_async_checkpointer(db, write=False) as saver:
            saved = await saver.aget_tuple(thread_config("t"))
            return type(saver), saved.checkpoint["channel_values"]["status"]

    assert asyncio.run(read()) == (AsyncSqliteSaver, "success")


def _damaged(kind: str, tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "bad.sqlite"
    if kind == "garbage":
        db.write_bytes(random.Random(2).randbytes(10_000))
        return db, "it is not a SQLite database"
    if kind == "truncated":
        good = tmp_path / "good.sqlite"
        _demo(str(good), "happy", "t")
        db.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return db, "it is truncated"
    db.mkdir()
    return db, "is a directory, not a file"


@pytest.mark.parametrize("kind", ["garbage", "truncated", "directory"])
def test_an_async_checkpointer_refuses_a_bad_file_as_the_sync_one_does(kind, tmp_path):
    db, words = _damaged(kind, tmp_path)
    with pytest.raises(ConfigError, match=words) as sync_error:
        with open_checkpointer(str(db)):
            pass

    async def open_it() -> None:
        async with open_async_checkpointer(str(db)):
            pass

    with pytest.raises(ConfigError, match=words) as async_error:
        asyncio.run(open_it())
    assert str(async_error.value) == str(sync_error.value)


def test_an_async_reader_creates_nothing_either(tmp_path):
    db = tmp_path / "missing" / "t.sqlite"

    async def open_it() -> None:
        async with open_async_checkpointer(str(db), write=False):
            pass

    with pytest.raises(NoThreads):
        asyncio.run(open_it())
    assert not db.parent.exists()


def test_an_async_postgres_checkpointer_runs_the_demo(postgres_url):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    assert asyncio.run(_ainvoke(url, "t"))["status"] == "success"

    async def kind() -> type:
        async with open_async_checkpointer(url) as saver:
            return type(saver)

    assert asyncio.run(kind()) is AsyncPostgresSaver
    with open_checkpointer(url) as saver:
        assert thread_values(saver, "t")["status"] == "success"


def test_an_unreachable_async_postgres_is_a_usage_error_without_the_password():
    pytest.importorskip("langgraph.checkpoint.postgres")

    async def open_it() -> None:
        async with open_async_checkpointer("postgresql://bob:s3cret@127.0.0.1:1/db"):
            pass

    with pytest.raises(ConfigError, match=r"cannot use PostgreSQL at postgresql://bob:\*\*\*@"):
        asyncio.run(open_it())


def test_a_database_opened_for_writing_keeps_its_wal_small(tmp_path):
    from agent.store.checkpointers import open_checkpointer

    with open_checkpointer(str(tmp_path / "t.sqlite")) as saver:
        pragma = saver.conn.execute
        assert pragma("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert pragma("PRAGMA wal_autocheckpoint").fetchone()[0] == 256
        assert pragma("PRAGMA journal_size_limit").fetchone()[0] == 1_048_576


# ------------------------------------------------------------------ lease tokens


def _leased_saver(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


def test_every_lease_acquisition_gets_a_larger_token_than_any_before_it(tmp_path):
    from agent.store.lease import hold

    saver = _leased_saver(tmp_path / "threads.sqlite")
    tokens = []
    for thread_id in ["t", "t", "u", "t", "u", "u"]:
        with hold(saver, thread_id) as lease:
            tokens.append(lease.token)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    # another saver on the same file, and the lease row deleted with the thread: still larger
    with open_checkpointer(str(tmp_path / "threads.sqlite")) as other:
        from agent.store.threads import delete_thread

        delete_thread(other, "t")
        with hold(other, "t") as lease:
            assert lease.token > max(tokens)


def test_a_lease_table_from_before_tokens_is_migrated(tmp_path):
    from agent.store.fencing import LEASE_TABLE
    from agent.store.lease import hold

    path = tmp_path / "threads.sqlite"
    with sqlite3.connect(str(path)) as conn:
        conn.execute(
            f"CREATE TABLE {LEASE_TABLE} (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "host TEXT NOT NULL, pid INTEGER NOT NULL, expires_at REAL NOT NULL)"
        )
        conn.execute(f"INSERT INTO {LEASE_TABLE} VALUES ('old', 'gone', 'h', 1, 0)")
    with hold(_leased_saver(path), "t") as lease:
        assert lease.token >= 1
    with sqlite3.connect(str(path)) as conn:
        assert conn.execute(
            f"SELECT token FROM {LEASE_TABLE} WHERE thread_id = 'old'"
        ).fetchone() == (0,)


@pytest.mark.parametrize("text", ["abc", "0", "-1", "nan", "1e9"])
def test_a_bad_lease_ttl_is_a_clear_error(monkeypatch, text):
    from agent.store.lease import TTL_ENV, lease_ttl_s

    monkeypatch.setenv(TTL_ENV, text)
    with pytest.raises(ConfigError, match=f"{TTL_ENV} wants a number of seconds"):
        lease_ttl_s()


def test_the_lease_ttl_comes_from_the_environment_else_30_seconds(monkeypatch):
    from agent.store.lease import DEFAULT_TTL_S, TTL_ENV, lease_ttl_s

    monkeypatch.delenv(TTL_ENV, raising=False)
    assert lease_ttl_s() == DEFAULT_TTL_S == 30.0
    monkeypatch.setenv(TTL_ENV, "2.5")
    assert lease_ttl_s() == 2.5


def test_a_saver_of_a_leased_thread_is_fenced_in_place_and_others_are_left_alone(tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agent.store.fencing import FencedSqliteSaver
    from agent.store.lease import hold

    class Mine(SqliteSaver):
        pass

    plain, mine, memory = _leased_saver(tmp_path / "a.sqlite"), None, InMemorySaver()
    mine = Mine(sqlite3.connect(str(tmp_path / "b.sqlite"), check_same_thread=False))
    for saver in (plain, mine, memory):
        with hold(saver, "t"):
            pass
    assert type(plain) is FencedSqliteSaver
    assert isinstance(mine, FencedSqliteSaver) and isinstance(mine, Mine)
    assert type(memory) is InMemorySaver


def test_a_threads_path_makes_only_deepreflects_own_folder(tmp_path):
    from agent.store.sqlite_files import checked_sqlite_path

    with pytest.raises(ConfigError, match="does not exist"):
        checked_sqlite_path(tmp_path / "nope" / "dir" / "threads.sqlite", write=True)
    assert not (tmp_path / "nope").exists()
    checked_sqlite_path(tmp_path / ".deepreflect" / "threads.sqlite", write=True)
    assert (tmp_path / ".deepreflect").is_dir()


def test_messages_replayed_in_any_batches_keep_the_same_ids():
    from langchain_core.messages import AIMessage, HumanMessage

    from agent.state import messages_delta

    writes = [[HumanMessage("goal")], [AIMessage("plan", id="p")], [AIMessage("done")]]
    one_by_one: list = []
    for write in writes:
        one_by_one = messages_delta(one_by_one, [write])
    together = messages_delta([], writes)
    assert [m.id for m in one_by_one] == [m.id for m in together] == ["message-0", "p", "message-2"]
    assert [m.content for m in together] == ["goal", "plan", "done"]


def test_a_delta_channel_snapshot_reads_back_the_same_with_either_serializer(tmp_path):
    class Steps(TypedDict, total=False):
        trajectory: Annotated[list, DeltaChannel(append_all, snapshot_frequency=2)]

    def step(state: Steps) -> dict[str, Any]:
        return {"trajectory": [{"n": len(state.get("trajectory") or [])}]}

    builder = StateGraph(Steps)
    for name in ("a", "b", "c"):
        builder.add_node(name, step)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    db = str(tmp_path / "t.sqlite")
    config = {"configurable": {"thread_id": "t"}}
    with open_checkpointer(db) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({}, config)
        expected = graph.get_state(config).values["trajectory"]
        stored = [c.checkpoint["channel_values"].get("trajectory") for c in saver.list(config)]
        full = thread_values(saver, "t")
    assert any(value is not None for value in stored)  # a snapshot was written
    with open_checkpointer(db, write=False, serde=plain_serde()) as saver:
        plain = thread_values(saver, "t")
    assert expected == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert full is not None and plain is not None
    assert full["trajectory"] == plain["trajectory"] == expected


# ------------------------------------------------------------------ channel versions


def _versions(db: str, thread: str) -> list[Any]:
    with open_checkpointer(db, write=False) as saver:
        saved = saver.get_tuple(thread_config(thread))
        assert saved is not None
        return list(saved.checkpoint["channel_versions"].values())


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_new_threads_file_writes_integer_versions_and_resumes_on_them(tmp_path):
    db = str(tmp_path / "t.sqlite")
    with open_checkpointer(db) as saver:
        paused = run(build_graph(checkpointer=saver), "a goal", thread_id="t",
                     context=Context(model="scripted:escalation"))  # fmt: skip
    assert paused["status"] == "awaiting_input"
    versions = _versions(db, "t")
    assert versions and all(isinstance(v, int) for v in versions)
    with open_checkpointer(db) as saver:  # opened again: the file says its kind
        done = resume(build_graph(checkpointer=saver), "t", "accept the artifacts as they are",
                      context=Context(model="scripted:escalation"))  # fmt: skip
    assert (done["status"], done["stop_reason"]) == ("success", "accepted_by_human")
    after = _versions(db, "t")
    assert all(isinstance(v, int) for v in after) and max(after) > max(versions)
    _demo(db, "happy", "u")  # another thread of the same file
    assert all(isinstance(v, int) for v in _versions(db, "u"))


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_file_written_before_integer_versions_keeps_its_strings(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(str(db), check_same_thread=False)
    old = SqliteSaver(conn)
    old.setup()
    run(build_graph(checkpointer=old), "a goal", thread_id="t",
        context=Context(model="scripted:happy"))  # fmt: skip
    conn.close()
    assert all(isinstance(v, str) for v in _versions(str(db), "t"))
    _demo(str(db), "happy", "t2")  # a new thread of an old file: strings, never a mix
    assert all(isinstance(v, str) for v in _versions(str(db), "t2"))
    names = {r[0] for r in sqlite3.connect(str(db)).execute("SELECT name FROM sqlite_master")}
    assert "deepreflect_int_versions" not in names


@pytest.mark.slow  # runs checks in sandboxed processes
def test_the_async_saver_writes_integer_versions_in_a_new_file_too(tmp_path):
    db = str(tmp_path / "a.sqlite")

    async def go() -> dict[str, Any]:
        async with open_async_checkpointer(db) as saver:
            graph = build_graph(checkpointer=saver)
            config = thread_config("t")
            await graph.ainvoke({"messages": [HumanMessage("a goal")]}, config,
                                context=Context(model="scripted:happy"))  # fmt: skip
            return (await graph.aget_state(config)).values

    assert asyncio.run(go())["status"] == "success"
    assert all(isinstance(v, int) for v in _versions(db, "t"))


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_stock_sqlite_saver_on_a_file_the_cli_made_writes_integers_too(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "t.sqlite"
    with open_checkpointer(str(db)) as saver:
        paused = run(build_graph(checkpointer=saver), "a goal", thread_id="t",
                     context=Context(model="scripted:escalation"))  # fmt: skip
    assert paused["status"] == "awaiting_input"
    conn = sqlite3.connect(str(db), check_same_thread=False)
    stock = SqliteSaver(conn)  # as a user may open the CLI's file
    graph = build_graph(checkpointer=stock)
    config = thread_config("t")
    graph.invoke(Command(resume="accept the artifacts as they are"), config,
                 context=Context(model="scripted:escalation"))  # fmt: skip  # raw, no runner
    assert graph.get_state(config).values["status"] == "success"
    conn.close()
    assert all(isinstance(v, int) for v in _versions(str(db), "t"))
