"""agent.store.effects and agent.store.journal: tool policies, keys and the stores."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Annotated

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from langchain_core.tools import InjectedToolArg, tool

from agent.controller.records import defect_signature
from agent.store.effects import ToolPolicy, declare_tool, policy_of
from agent.store.journal import (
    MemoryJournal,
    SqliteJournal,
    args_digest,
    call_key,
    journal_for,
    key_material,
)
from agent.tools.approvals import approval_id
from agent.tools.execute import takes_idempotency_key


@tool
def send(to: str) -> str:
    """Send."""
    return to


@tool
def keyed(to: str, idempotency_key: Annotated[str, InjectedToolArg]) -> str:
    """Send once per key."""
    return to


def test_undeclared_tools_are_side_effects_and_the_filesystem_tools_are_local():
    assert policy_of(send) == ToolPolicy()
    assert policy_of(send).journaled
    from agent.tools.filesystem import vfs_tools
    from agent.vfs.entries import Workspace

    assert all(not policy_of(t).journaled for t in vfs_tools(Workspace({}, writable=["a"])))


def test_declarations_and_mcp_annotations_set_the_policy():
    def receipt(key):
        return None

    assert policy_of(declare_tool(keyed, idempotent=True, receipt=receipt)) == ToolPolicy(
        idempotent=True, receipt=receipt
    )
    annotated = send.model_copy(update={"metadata": {"readOnlyHint": True}})
    assert policy_of(annotated).read_only
    assert policy_of(send.model_copy(update={"metadata": {"idempotentHint": True}})).idempotent
    with pytest.raises(ValueError):
        declare_tool(send.model_copy(), read_only=True, idempotent=True)


def test_only_a_hidden_idempotency_key_parameter_receives_the_key():
    assert takes_idempotency_key(keyed)
    assert not takes_idempotency_key(send)

    @tool
    def visible(idempotency_key: str) -> str:
        """The model sees this one."""
        return idempotency_key

    assert not takes_idempotency_key(visible)


def test_keys_ignore_argument_order_and_differ_by_thread_turn_step_and_position():
    digest = args_digest("send", {"a": 1, "b": [1, 2]})
    assert digest == args_digest("send", {"b": [1, 2], "a": 1})
    assert digest != args_digest("send", {"a": 1, "b": [2, 1]})
    assert digest != args_digest("other", {"a": 1, "b": [1, 2]})
    key = call_key("t", "turn", "S1", 0, digest)
    variants = [
        ("u", "turn", "S1", 0),
        ("t", "turn2", "S1", 0),
        ("t", "turn", "S2", 0),
        ("t", "turn", "S1", 1),
    ]
    assert all(call_key(*v, digest) != key for v in variants)
    assert key == call_key("t", "turn", "S1", 0, digest)


def test_the_sqlite_journal_is_durable_across_connections(tmp_path):
    path = str(tmp_path / "threads.sqlite")
    first = SqliteJournal(path)
    asyncio.run(first.put("t", "k", {"status": "started"}))
    second = SqliteJournal(path)
    assert asyncio.run(second.get("t", "k")) == {"status": "started"}
    assert asyncio.run(second.get("other", "k")) is None


def test_a_damaged_row_reads_as_no_entry(tmp_path):
    path = str(tmp_path / "threads.sqlite")
    journal = SqliteJournal(path)
    asyncio.run(journal.put("t", "k", {"status": "done"}))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE deepreflect_tool_journal SET entry = 'not json'")
    conn.commit()
    assert asyncio.run(SqliteJournal(path).get("t", "k")) is None


def test_journal_for_finds_the_sqlite_file_else_the_store_else_memory(tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.memory import InMemoryStore

    conn = sqlite3.connect(str(tmp_path / "a.sqlite"), check_same_thread=False)
    assert isinstance(journal_for(SqliteSaver(conn)), SqliteJournal)
    memory = InMemorySaver()
    assert isinstance(journal_for(memory), MemoryJournal)
    assert journal_for(memory) is journal_for(memory)  # one per checkpointer
    store = InMemoryStore()
    journal = journal_for(memory, store)
    asyncio.run(journal.put("t", "k", {"status": "done"}))
    assert asyncio.run(journal.get("t", "k")) == {"status": "done"}


def test_the_built_in_search_tools_are_read_only():
    from agent.tools.search import local_search_tool

    assert policy_of(local_search_tool({"https://a.example/x": "text"})).read_only


# ------------------------------------------------------------------ unambiguous keys

_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # NULs, quotes, surrogates
_PARTS = st.lists(_TEXT, min_size=1, max_size=5).map(tuple)


@given(_PARTS, _PARTS)
def test_distinct_parts_give_distinct_key_material(a, b):
    assert (key_material(*a) == key_material(*b)) == (a == b)


@given(_TEXT, _TEXT, _TEXT, _TEXT)
def test_a_separator_inside_a_part_cannot_move_the_boundary_between_parts(a, b, c, d):
    assume((a, b) != (c, d))
    assert call_key(a, b, "S1", 0, "d") != call_key(c, d, "S1", 0, "d")
    assert args_digest(a, {"x": b}) != args_digest(c, {"x": d}) or (a, b) == (c, d)


def test_the_nul_example_and_its_neighbours_get_different_keys():
    assert call_key("a\0b", "c", "S1", 0, "d") != call_key("a", "b\0c", "S1", 0, "d")
    assert call_key("a:b", "c", "S1", 0, "d") != call_key("a", "b:c", "S1", 0, "d")
    assert call_key("a", "b", 'S1","0', 0, "d") != call_key("a", "b", "S1", 0, "d")
    assert args_digest("send\0{}", {}) != args_digest("send", {})
    step = {"step_id": "S1", "action": "a", "instructions": "i", "expected_output": "o.md"}
    assert approval_id(step, 1, 0, "a\0b", {}) != approval_id(step, 1, 0, "a", {"\0b": 1})


def test_a_crafted_evidence_line_cannot_pass_for_two_defects():
    one = [{"severity": "blocking", "id": "x", "evidence": "a|y:b"}]
    two = [
        {"severity": "blocking", "id": "x", "evidence": "a"},
        {"severity": "blocking", "id": "y", "evidence": "b"},
    ]
    assert defect_signature("S1", one) != defect_signature("S1", two)
    assert defect_signature("S1|x", [{"severity": "blocking", "id": "y", "evidence": "e"}]) != (
        defect_signature("S1", [{"severity": "blocking", "id": "x|y", "evidence": "e"}])
    )


# ------------------------------------------------------------------ fenced journal


def test_a_leased_threads_journal_entry_is_fenced_by_the_lease_token(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agent.store.fencing import LEASE_TABLE as LEASES
    from agent.store.fencing import LeaseLost
    from agent.store.lease import hold

    path = str(tmp_path / "threads.sqlite")
    journal = SqliteJournal(path)
    asyncio.run(journal.put("other", "k", {"status": "done"}))  # no lease, no lease table yet
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    with hold(saver, "t"):
        asyncio.run(journal.put("t", "k1", {"status": "started"}))
        with sqlite3.connect(path) as conn:  # another writer takes the thread over
            conn.execute(f"UPDATE {LEASES} SET token = token + 1 WHERE thread_id = 't'")
        with pytest.raises(LeaseLost, match="thread t: another writer took over"):
            asyncio.run(journal.put("t", "k2", {"status": "started"}))
        with pytest.raises(LeaseLost):
            asyncio.run(journal.put("t", "k1", {"status": "done"}))
        asyncio.run(journal.put("other", "k", {"status": "again"}))  # not leased: written
    assert asyncio.run(journal.get("t", "k1")) == {"status": "started"}
    assert asyncio.run(journal.get("t", "k2")) is None
    assert asyncio.run(journal.get("other", "k")) == {"status": "again"}
