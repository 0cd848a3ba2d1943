"""Whose memories a run reads and writes (``memory_namespace``): any owner name becomes a label
LangGraph's stores accept, and no two owners share one; the memory CLI acts for the user runs
use and refuses another's namespace unless told."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from agent.cli.memory import Owner, chosen_owner, own_owner
from agent.store.memories import NAMESPACE_ROOT, memory_namespace, owner_label, owner_of


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


@given(st.text(min_size=1).filter(str.strip))
def test_a_namespace_names_its_owner_back(owner):
    namespace = memory_namespace("user", owner, {})
    assert namespace is not None
    assert owner_of(namespace) == ("user", owner.strip())
    assert owner_of(("elsewhere", "user", "alice")) is None


def test_the_cli_acts_for_the_user_runs_use_and_refuses_another_unless_told(monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_USER_ID", "alice")
    assert str(chosen_owner(None, None, other_owner=False)) == "user alice"
    assert str(chosen_owner(" alice ", None, other_owner=False)) == "user alice"
    refused = chosen_owner("bob", None, other_owner=False)
    assert isinstance(refused, str) and refused.startswith("the memories of user bob are not yours")
    assert "acts for user alice" in refused and "--other-owner" in refused
    assert isinstance(chosen_owner(None, "reports", other_owner=False), str)
    bob = chosen_owner("bob", None, other_owner=True)
    assert isinstance(bob, Owner) and bob.namespace == (NAMESPACE_ROOT, "user", "bob")
    assert chosen_owner(" ", None, other_owner=True) == "name a user or an assistant"


def test_without_a_configured_user_the_cli_acts_for_the_login_name(monkeypatch):
    monkeypatch.delenv("DEEPREFLECT_USER_ID", raising=False)
    monkeypatch.setattr("agent.cli.memory.login_name", lambda: "carol")
    assert own_owner().namespace == (NAMESPACE_ROOT, "user", "carol")
    monkeypatch.setenv("DEEPREFLECT_USER_ID", "  ")  # blank: unset, for runs too
    assert own_owner().namespace == (NAMESPACE_ROOT, "user", "carol")
