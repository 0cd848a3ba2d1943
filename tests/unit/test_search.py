"""Search tools: the offline corpus search, and Tavily web search only when configured.

Nothing here reaches the network: Tavily's API wrapper is replaced where a search runs."""

from __future__ import annotations

import asyncio
import builtins
import json

import pytest
from langchain_core.tools import BaseTool

from agent.checks.citations import cited_urls
from agent.errors import ConfigError
from agent.tools import search

CORPUS = {
    "https://a.com/mercury": "Mercury is the closest planet to the Sun.",
    "https://b.org/venus": "Venus is the hottest planet.",
    "https://c.net/mars": "Mars has two small moons.",
}


# -- local_search_tool --------------------------------------------------------------------


def test_local_search_returns_matching_documents_with_their_urls():
    tool = search.local_search_tool(CORPUS)
    found = tool.invoke({"query": "closest planet"})

    assert isinstance(tool, BaseTool) and tool.name == "search"
    assert found.startswith("[1] https://a.com/mercury\nMercury is the closest planet")
    assert "[2] https://b.org/venus" in found  # "planet" matches it too, ranked below
    assert "mars" not in found


def test_local_search_ranks_by_the_number_of_query_words_found():
    tool = search.local_search_tool(CORPUS)

    assert tool.invoke({"query": "HOTTEST planet"}).startswith("[1] https://b.org/venus")


def test_local_search_matches_words_of_the_url_too():
    assert "https://b.org/venus" in search.local_search_tool(CORPUS).invoke({"query": "venus"})


def test_local_search_without_a_match_says_so_without_repeating_the_query():
    found = search.local_search_tool(CORPUS).invoke({"query": "https://invented.example/x"})

    assert found == "no documents matched; try other words"
    assert cited_urls(found) == {}


def test_local_search_never_echoes_the_query():
    query = "planet https://invented.example/paper"
    found = search.local_search_tool(CORPUS).invoke({"query": query})

    assert set(cited_urls(found)) == {"https://a.com/mercury", "https://b.org/venus"}


def test_local_search_caps_results_and_snippets():
    corpus = {f"https://d.com/{i}": "word " * 1000 for i in range(9)}
    found = search.local_search_tool(corpus, max_results=3, name="docs").invoke({"query": "word"})

    assert [line for line in found.splitlines() if line.startswith("[")] == [
        "[1] https://d.com/0",
        "[2] https://d.com/1",
        "[3] https://d.com/2",
    ]
    assert all(len(block) < search.SNIPPET_CHARS + 40 for block in found.split("\n\n"))


def test_local_search_copies_its_corpus():
    corpus = dict(CORPUS)
    tool = search.local_search_tool(corpus)
    corpus["https://e.com/late"] = "planet"

    assert "e.com" not in tool.invoke({"query": "planet"})


def test_local_search_works_under_ainvoke():
    found = asyncio.run(search.local_search_tool(CORPUS).ainvoke({"query": "Mars"}))

    assert found.startswith("[1] https://c.net/mars")


@pytest.mark.parametrize(("corpus", "kwargs"), [({}, {}), (CORPUS, {"max_results": 0})])
def test_local_search_refuses_an_empty_corpus_or_no_results(corpus, kwargs):
    with pytest.raises(ValueError, match="local_search_tool needs"):
        search.local_search_tool(corpus, **kwargs)


# -- search_tools / default_role_tools ----------------------------------------------------


@pytest.fixture
def no_tavily(monkeypatch):
    """``langchain_tavily`` cannot be imported, installed or not."""
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "langchain_tavily" or name.startswith("langchain_tavily."):
            raise ModuleNotFoundError("No module named 'langchain_tavily'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "langchain_tavily", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_without_a_key_there_is_no_search_tool(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    else:
        monkeypatch.setenv("TAVILY_API_KEY", value)

    assert search.search_tools() == []
    assert search.default_role_tools() == {}


def test_without_a_key_the_package_is_not_needed(monkeypatch, no_tavily):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)

    assert search.search_tools() == []


def test_a_key_without_the_package_is_a_config_error_naming_the_extra(monkeypatch, no_tavily):
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")

    with pytest.raises(ConfigError, match=r"`search` extra.*deepreflect\[search\]"):
        search.search_tools()
    with pytest.raises(ConfigError, match="langchain-tavily"):
        search.default_role_tools()


@pytest.fixture
def tavily(monkeypatch):
    """The real ``langchain_tavily`` with a key set and its HTTP calls replaced."""
    pytest.importorskip("langchain_tavily", reason="the `search` extra is not installed")
    from langchain_tavily._utilities import TavilySearchAPIWrapper

    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    answers: list[object] = []
    queries: list[dict] = []

    def raw_results(self, **params):
        queries.append(params)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def raw_results_async(self, **params):
        return raw_results(self, **params)

    monkeypatch.setattr(TavilySearchAPIWrapper, "raw_results", raw_results)
    monkeypatch.setattr(TavilySearchAPIWrapper, "raw_results_async", raw_results_async)
    return answers, queries


RAW = {
    "query": "https://invented.example/paper",
    "results": [
        {"url": "https://a.com/mercury", "title": "Mercury", "content": "Closest.", "score": 0.9}
    ],
    "response_time": 0.5,
}


def test_with_a_key_the_researcher_gets_tavily_web_search(tavily):
    from langchain_tavily import TavilySearch

    (tool,) = search.search_tools()

    assert isinstance(tool, TavilySearch)
    assert tool.max_results == search.SEARCH_MAX_RESULTS
    assert [t.name for t in search.default_role_tools()["researcher"]] == [tool.name]


def test_web_search_answers_json_without_the_query_echo(tavily):
    answers, queries = tavily
    answers.extend([RAW, RAW])
    (tool,) = search.search_tools()

    found = tool.invoke({"query": "https://invented.example/paper"})
    found_async = asyncio.run(tool.ainvoke({"query": "https://invented.example/paper"}))

    assert found == found_async
    assert json.loads(found) == {k: v for k, v in RAW.items() if k != "query"}
    assert set(cited_urls(found)) == {"https://a.com/mercury"}
    assert queries[0]["query"] == "https://invented.example/paper"
    assert queries[0]["max_results"] == search.SEARCH_MAX_RESULTS


def test_web_search_with_no_results_does_not_quote_the_query(tavily):
    answers, _ = tavily
    answers.append({"query": "https://invented.example/paper", "results": []})
    (tool,) = search.search_tools()

    found = tool.invoke({"query": "https://invented.example/paper"})

    assert "no search results" in found
    assert cited_urls(found) == {}


def test_a_failed_web_search_raises_instead_of_answering_an_error_dict(tavily):
    answers, _ = tavily
    answers.append(ValueError("Error 401: Unauthorized"))
    (tool,) = search.search_tools()

    with pytest.raises(ValueError, match="401"):
        tool.invoke({"query": "mercury"})
