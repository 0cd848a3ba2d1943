"""Memories across threads in LangGraph's SQLite store: what a thread writes under
``memories/`` is read by the next thread of the same user (its planner sees it, its steps
read it) and by no other user's, whatever the other's Context claims."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.sqlite import SqliteStore

from agent import build_graph
from agent.models.scripted import tool_call
from agent.store.memories import NAMESPACE_ROOT
from tests.fakes import END, ctx, models, step

pytest_plugins = ["tests.postgres"]

CONVENTIONS = "# Conventions\nReports use British spelling.\n"
NOTE = "memories/conventions.md"


def store(tmp_path) -> SqliteStore:
    path = str(tmp_path / "memory.sqlite")
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    memory = SqliteStore(conn)
    memory.setup()
    return memory


def remembering(messages, metadata):
    """A subagent that notes a convention for later threads, then writes its report."""
    if isinstance(messages[-1], ToolMessage):
        return "written"
    calls = [
        {"name": "write_file", "args": {"path": NOTE, "content": CONVENTIONS}, "id": "m1"},
        {"name": "write_file", "args": {"path": "report.md", "content": "# Report\n"}, "id": "r"},
    ]
    from langchain_core.messages import AIMessage

    return AIMessage("", tool_calls=calls)  # both files in one answer


def reading(messages, metadata):
    """A subagent that reads the memory (if it can) into its report."""
    last = messages[-1]
    if isinstance(last, ToolMessage) and last.name == "read_file":
        return tool_call("write_file", path="report.md", content=f"# Report\n{last.content}")
    if isinstance(last, ToolMessage):
        return "written"
    return tool_call("read_file", path=NOTE)


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


def test_the_cli_lists_shows_and_deletes_a_users_memories(tmp_path):
    from agent.store.memories import open_memory_store
    from tests.fakes import cli

    db = tmp_path / "threads.sqlite"
    with open_memory_store(str(db)) as memory:
        memory.put((NAMESPACE_ROOT, "user", "alice"), "conventions.md", {"content": CONVENTIONS})
    listed = cli("memory", "ls", "--user", "alice", db=db)
    assert listed.returncode == 0 and "memories/conventions.md" in listed.stdout
    assert "no memories for user bob" in cli("memory", "ls", "--user", "bob", db=db).stdout
    shown = cli("memory", "show", NOTE, "--user", "alice", db=db)
    assert shown.stdout == CONVENTIONS
    assert cli("memory", "rm", "other.md", "--user", "alice", db=db).returncode == 2
    assert cli("memory", "rm", NOTE, "--user", "alice", db=db).returncode == 0
    assert "no memories" in cli("memory", "ls", "--user", "alice", db=db).stdout


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
