"""Memories across threads in LangGraph's SQLite store: what a thread writes under
``memories/`` is read by the next thread of the same user (its planner sees it, its steps
read it) and by no other user's, whatever the other's Context claims."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.sqlite import SqliteStore

from agent import build_graph
from agent.store.memories import NAMESPACE_ROOT
from tests.fakes import END, ctx, models, step
from tests.served_graphs import CONVENTIONS, NOTE, reading, remembering

pytest_plugins = ["tests.postgres"]


def store(tmp_path) -> SqliteStore:
    path = str(tmp_path / "memory.sqlite")
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    memory = SqliteStore(conn)
    memory.setup()
    return memory


PLAN = [step("S1", "report.md", check={"kind": "contains", "all": ["Report"]})]


def thread(memory, subagent, thread_id, **configurable):
    roles = models(PLAN, [END], subagent)
    graph = build_graph(models=roles, checkpointer=InMemorySaver(), store=memory, retry_policy=None)
    config = {"configurable": {"thread_id": thread_id, **configurable}}
    user = configurable.pop("user", None)
    state = graph.invoke(
        {"messages": [("user", "Write the report")]}, config, context=ctx(user_id=user)
    )
    return state, roles


def test_a_memory_written_in_one_thread_is_read_by_the_next_thread_of_the_same_user(tmp_path):
    memory = store(tmp_path)
    first, _ = thread(memory, remembering, "t1", user="alice")
    assert first["status"] == "success"
    (item,) = memory.search((NAMESPACE_ROOT, "user", "alice"))
    assert (item.key, item.value["content"], item.value["thread_id"]) == (
        "conventions.md",
        CONVENTIONS,
        "t1",
    )

    second, roles = thread(memory, reading, "t2", user="alice")
    assert second["status"] == "success"
    assert "British spelling" in second["files"]["report.md"]["content"]
    planner_prompt = str(roles["planner"].calls[0][-1].content)
    assert NOTE in planner_prompt and "# Conventions" in planner_prompt  # its summary


def test_another_user_sees_none_of_it(tmp_path):
    memory = store(tmp_path)
    thread(memory, remembering, "t1", user="alice")
    other, roles = thread(memory, reading, "t2", user="bob")
    assert NOTE not in other["files"]
    assert NOTE not in str(roles["planner"].calls[0][-1].content)
    report = other["files"]["report.md"]["content"]
    assert "not found" in report and "British" not in report


def test_a_context_cannot_claim_another_users_memories_on_an_authenticated_server(tmp_path):
    memory = store(tmp_path)
    thread(memory, remembering, "t1", user="alice")
    # the server says the caller is mallory; the Context claims alice
    claimed, _ = thread(memory, reading, "t2", user="alice", langgraph_auth_user_id="mallory")
    assert NOTE not in claimed["files"]
    assert memory.search((NAMESPACE_ROOT, "user", "mallory")) == []


def test_without_a_user_or_with_memory_off_a_thread_has_no_memories(tmp_path):
    memory = store(tmp_path)
    thread(memory, remembering, "t1", user="alice")
    anonymous, _ = thread(memory, reading, "t2")
    assert NOTE not in anonymous["files"]
    roles = models(PLAN, [END], remembering)
    graph = build_graph(models=roles, checkpointer=InMemorySaver(), store=memory)
    config = {"configurable": {"thread_id": "t3"}}
    graph.invoke({"messages": [("user", "go")]}, config, context=ctx(user_id="carol", memory="off"))
    assert memory.search((NAMESPACE_ROOT, "user", "carol")) == []


def test_the_assistant_scope_is_shared_by_every_thread_of_the_assistant(tmp_path):
    memory = store(tmp_path)
    roles = models(PLAN, [END], remembering)
    graph = build_graph(models=roles, checkpointer=InMemorySaver(), store=memory)
    config = {"configurable": {"thread_id": "t1", "assistant_id": "reports"}}
    graph.invoke({"messages": [("user", "go")]}, config, context=ctx(memory="assistant"))
    (item,) = memory.search((NAMESPACE_ROOT, "assistant", "reports"))
    assert item.key == "conventions.md"


def as_user(user: str) -> dict[str, str]:
    """The environment of a CLI run by ``user`` (whatever the login name of the test)."""
    return {"DEEPREFLECT_USER_ID": user}


def test_the_cli_lists_shows_and_deletes_a_users_memories(tmp_path):
    from agent.store.memories import open_memory_store
    from tests.fakes import cli

    db = tmp_path / "threads.sqlite"
    with open_memory_store(str(db)) as memory:
        memory.put((NAMESPACE_ROOT, "user", "alice"), "conventions.md", {"content": CONVENTIONS})
    alice, bob = as_user("alice"), as_user("bob")
    listed = cli("memory", "ls", db=db, env_extra=alice)
    assert listed.returncode == 0 and "memories/conventions.md" in listed.stdout
    assert "no memories for user bob" in cli("memory", "ls", db=db, env_extra=bob).stdout
    shown = cli("memory", "show", NOTE, "--user", "alice", db=db, env_extra=alice)
    assert shown.stdout == CONVENTIONS
    assert cli("memory", "rm", "other.md", db=db, env_extra=alice).returncode == 2
    assert cli("memory", "rm", NOTE, db=db, env_extra=alice).returncode == 0
    assert "no memories" in cli("memory", "ls", db=db, env_extra=alice).stdout


def test_the_cli_refuses_another_users_memories_unless_told_and_loses_nothing(tmp_path):
    from agent.store.memories import open_memory_store
    from tests.fakes import cli

    db = tmp_path / "threads.sqlite"
    with open_memory_store(str(db)) as memory:
        memory.put((NAMESPACE_ROOT, "user", "alice"), "conventions.md", {"content": CONVENTIONS})
        memory.put((NAMESPACE_ROOT, "assistant", "reports"), "house.md", {"content": "# House"})
    bob = as_user("bob")
    for action in (("ls",), ("show", NOTE), ("rm", NOTE)):
        refused = cli("memory", *action, "--user", "alice", db=db, env_extra=bob)
        assert refused.returncode == 2, refused
        assert "permission denied: the memories of user alice are not yours" in refused.stdout
        assert "acts for user bob" in refused.stdout and CONVENTIONS not in refused.stdout
    assert cli("memory", "ls", "--assistant", "reports", db=db, env_extra=bob).returncode == 2
    with open_memory_store(str(db)) as memory:  # nothing was deleted
        assert memory.get((NAMESPACE_ROOT, "user", "alice"), "conventions.md") is not None

    every = cli("memory", "ls", "--all-namespaces", db=db, env_extra=bob)
    assert every.returncode == 0
    assert "user alice  memories/conventions.md" in every.stdout
    assert "assistant reports  memories/house.md" in every.stdout
    told = cli("memory", "rm", NOTE, "--user", "alice", "--other-owner", db=db, env_extra=bob)
    assert told.returncode == 0 and "deleted memories/conventions.md of user alice" in told.stdout
    alone = cli("memory", "ls", "--other-owner", db=db, env_extra=bob)
    assert alone.returncode == 2 and "--other-owner needs the namespace" in alone.stdout


def test_memories_in_a_postgres_store_reach_the_next_thread_of_the_same_user(postgres_url):
    pytest.importorskip("langgraph.store.postgres")
    from agent.store.memories import open_memory_store

    user = f"dana-{uuid.uuid4().hex[:8]}"
    with open_memory_store(postgres_url) as memory:
        thread(memory, remembering, "pg1", user=user)
        second, _ = thread(memory, reading, "pg2", user=user)
        other, _ = thread(memory, reading, "pg3", user=f"{user}-other")
    assert "British spelling" in second["files"]["report.md"]["content"]
    assert NOTE not in other["files"]


def writing(path: str):
    """A subagent that writes ``path`` as a memory besides its report."""

    def subagent(messages):
        if isinstance(messages[-1], ToolMessage):
            return "written"
        report = {"path": "report.md", "content": "# Report\n"}
        calls = [
            {"name": "write_file", "args": {"path": path, "content": "# mine\n"}, "id": "m1"},
            {"name": "write_file", "args": report, "id": "r"},
        ]
        return AIMessage("", tool_calls=calls)

    return subagent


def test_a_memory_path_that_climbs_out_is_a_tool_error_and_reaches_no_other_namespace(tmp_path):
    memory = store(tmp_path)
    climbing = f"memories/../../{NAMESPACE_ROOT}/user/bob/conventions.md"
    state, _ = thread(memory, writing(climbing), "t1", user="alice")
    assert state["status"] == "success"  # the step went on and wrote its report
    (event,) = [e for e in state["trajectory"] if (e.get("params") or {}).get("path") == climbing]
    assert event["observation"].startswith("invalid_input:") and "'..'" in event["observation"]
    assert memory.search((NAMESPACE_ROOT,)) == []


def test_another_users_name_inside_a_memory_path_stays_in_the_writers_namespace(tmp_path):
    memory = store(tmp_path)
    thread(memory, writing("memories/user/bob/conventions.md"), "t1", user="alice")
    assert [i.key for i in memory.search((NAMESPACE_ROOT, "user", "alice"))] == [
        "user/bob/conventions.md"
    ]
    assert memory.search((NAMESPACE_ROOT, "user", "bob")) == []
    bobs, _ = thread(memory, reading, "t2", user="bob")
    assert not any(path.startswith("memories/") for path in bobs["files"])


@pytest.mark.parametrize("other", ["../alice", "alice/..", ".alice", "alice%2E"])
def test_a_user_id_with_periods_keeps_its_own_memories_and_reaches_no_one_elses(tmp_path, other):
    memory = store(tmp_path)
    email = "alice@example.com"  # LangGraph's stores refuse a period in a namespace label
    first, _ = thread(memory, remembering, "t1", user=email)
    assert first["status"] == "success"
    second, _ = thread(memory, reading, "t2", user=email)
    assert "British spelling" in second["files"]["report.md"]["content"]
    thread(memory, remembering, "t3", user="alice")
    tricked, _ = thread(memory, reading, "t4", user=other)
    assert tricked["status"] == "success" and NOTE not in tricked["files"]


def test_the_cli_finds_the_memories_of_a_user_named_by_an_email_address(tmp_path):
    from agent.store.memories import memory_namespace, open_memory_store
    from tests.fakes import cli

    db = tmp_path / "threads.sqlite"
    namespace = memory_namespace("user", "alice@example.com", {})
    assert namespace is not None
    with open_memory_store(str(db)) as memory:
        memory.put(namespace, "conventions.md", {"content": CONVENTIONS})
    listed = cli("memory", "ls", db=db, env_extra=as_user("alice@example.com"))
    assert listed.returncode == 0 and "memories/conventions.md" in listed.stdout
    assert "no memories for user alice@example.org" in (
        cli("memory", "ls", db=db, env_extra=as_user("alice@example.org")).stdout
    )
    every = cli("memory", "ls", "--all-namespaces", db=db, env_extra=as_user("bob"))
    assert "user alice@example.com  memories/conventions.md" in every.stdout
    blank = cli("memory", "ls", "--user", " ", db=db)
    assert blank.returncode == 2 and "name a user or an assistant" in blank.stdout
