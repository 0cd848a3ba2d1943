"""Whose memories a run reads and writes (``memory_namespace``): any owner name becomes a label
LangGraph's stores accept, and no two owners share one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from agent.store.memories import NAMESPACE_ROOT, memory_namespace, owner_label


def test_the_servers_user_wins_over_the_context_and_the_config():
    configurable = {"langgraph_auth_user_id": "mallory", "user_id": "carol"}
    assert memory_namespace("user", "alice", configurable) == (NAMESPACE_ROOT, "user", "mallory")
    assert memory_namespace("user", None, {"user_id": "carol"}) == (NAMESPACE_ROOT, "user", "carol")
    assert memory_namespace("user", " ", {}) is None
    assert memory_namespace("off", "alice", {}) is None
    assert memory_namespace("assistant", "alice", {}) is None  # no assistant to key them by


@given(st.text(min_size=1), st.text(min_size=1))
def test_different_owners_never_share_a_label(first, second):
    assert (owner_label(first) == owner_label(second)) == (first == second)


@given(st.text(min_size=1).filter(str.strip))
def test_every_owner_is_a_namespace_the_store_accepts(owner):
    namespace = memory_namespace("user", owner, {})
    assert namespace is not None
    try:
        InMemoryStore().put(namespace, "k", {"content": "x"})
    except InvalidNamespaceError as exc:  # pragma: no cover - the failure this test guards
        raise AssertionError(f"{owner!r}: {exc}") from exc
    assert "." not in namespace[-1]
