"""Tools deepreflect adds by itself, merged before the user's."""

from __future__ import annotations

import pytest

from agent.graph.build import with_default_tools


def test_without_a_search_key_only_the_users_tools_are_given(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    mine = object()
    assert with_default_tools({"coder": [mine]}) == {"coder": [mine]}
    assert with_default_tools(None) == {}


def test_with_a_search_key_the_researcher_gets_web_search_before_the_users_tools(monkeypatch):
    pytest.importorskip("langchain_tavily")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    mine = object()
    merged = with_default_tools({"researcher": [mine]})
    assert len(merged["researcher"]) == 2 and merged["researcher"][-1] is mine
    assert "search" in merged["researcher"][0].name
