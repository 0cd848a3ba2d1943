"""Search tools for the researcher: Tavily web search when configured, and an offline corpus.

* :func:`search_tools` — a Tavily web-search tool when ``TAVILY_API_KEY`` is set (the
  ``search`` extra installs ``langchain-tavily``), otherwise none.
* :func:`default_role_tools` — what ``build_graph`` gives the built-in roles by default:
  ``{"researcher": search_tools()}`` when there is a search tool, ``{}`` otherwise.
* :func:`local_search_tool` — a search over a ``{url: text}`` mapping, with no network: for
  tests, demos and users who want the researcher to search their own documents.

Every search result names its URL, so a step's ``citations`` check
(:mod:`agent.checks.citations`) can tell a source the search returned from an invented one.
None of these tools repeats the query in what it returns: a query is the model's own text,
and a URL it put there must not come back looking like a result.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from agent.errors import ConfigError
from agent.store.effects import declare_tool

__all__ = [
    "SEARCH_MAX_RESULTS",
    "TAVILY_KEY_ENV",
    "default_role_tools",
    "local_search_tool",
    "search_tools",
]

TAVILY_KEY_ENV = "TAVILY_API_KEY"
"""The environment variable that turns web search on."""
SEARCH_MAX_RESULTS = 5
"""Results per search: enough sources to cite, few enough to keep the context small."""
SNIPPET_CHARS = 800
_WORD = re.compile(r"\w+")
_URL_NOISE = frozenset({"http", "https", "www"})  # words every URL has: they match nothing


def search_tools() -> list[BaseTool]:
    """A Tavily web-search tool when ``TAVILY_API_KEY`` is set, else ``[]``.

    Raises ``ConfigError`` when the key is set but ``langchain-tavily`` is not installed
    (``pip install 'deepreflect[search]'``). Nothing is sent anywhere until the tool is used.
    """
    if not os.environ.get(TAVILY_KEY_ENV, "").strip():
        return []
    try:
        from langchain_tavily import TavilySearch
    except ImportError as exc:
        msg = (
            f"{TAVILY_KEY_ENV} is set but web search needs langchain-tavily: install the "
            "`search` extra (pip install 'deepreflect[search]'), or unset "
            f"{TAVILY_KEY_ENV} to run without web search"
        )
        raise ConfigError(msg) from exc
    web = _web_search_class(TavilySearch)(max_results=SEARCH_MAX_RESULTS)
    return [declare_tool(web, read_only=True)]  # a search changes nothing: re-run freely


def default_role_tools() -> dict[str, list[BaseTool]]:
    """The tools built-in roles get without being asked: ``{"researcher": [web search]}``
    when :func:`search_tools` has one, ``{}`` when it has none (no key)."""
    tools = search_tools()
    return {"researcher": tools} if tools else {}


_WEB_SEARCH: dict[type, type] = {}


def _web_search_class(base: type) -> type:
    """``TavilySearch`` answering in JSON without its echo of the query.

    Tavily's raw answer starts with ``"query": <the model's own text>`` and its no-results
    error quotes the query too: a URL the model searched for would then look like one the
    search returned. Its failures (returned as ``{"error": exc}``) are raised instead, so
    the worker classifies them like any tool's.
    """
    if base not in _WEB_SEARCH:

        class WebSearch(base):
            def _run(self, *args: Any, **kwargs: Any) -> str:
                try:
                    raw = super()._run(*args, **kwargs)
                except ToolException as exc:
                    raise ToolException(_NO_RESULTS) from exc
                return _without_echo(raw)

            async def _arun(self, *args: Any, **kwargs: Any) -> str:
                try:
                    raw = await super()._arun(*args, **kwargs)
                except ToolException as exc:
                    raise ToolException(_NO_RESULTS) from exc
                return _without_echo(raw)

        WebSearch.__name__ = WebSearch.__qualname__ = "WebSearch"
        _WEB_SEARCH[base] = WebSearch
    return _WEB_SEARCH[base]


_NO_RESULTS = "no search results; try other or fewer words, or a broader time range"


def _without_echo(raw: Any) -> str:
    if isinstance(raw, Mapping):
        error = raw.get("error")
        if isinstance(error, BaseException):
            raise error
        raw = {key: value for key, value in raw.items() if key != "query"}
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)


class _SearchArgs(BaseModel):
    query: str = Field(description="What to search for: a few keywords.")


def local_search_tool(
    corpus: Mapping[str, str],
    *,
    name: str = "search",
    max_results: int = SEARCH_MAX_RESULTS,
) -> BaseTool:
    """A search tool over ``corpus`` (URL -> document text) that needs no network.

    A document matches when its text or URL contains a word of the query (case-insensitive);
    the best ``max_results`` (most query words found, then corpus order) come back as text,
    each as a ``[n] <url>`` line followed by the document, cut to ``SNIPPET_CHARS``. The
    answer never repeats the query. The corpus is copied: later changes to the mapping do
    not change the tool. Give it to a role with ``build_graph(tools={"researcher":
    [local_search_tool({...})]})``.
    """
    documents = {str(url): str(text) for url, text in corpus.items()}
    if not documents:
        msg = "local_search_tool needs a non-empty corpus of {url: text}"
        raise ValueError(msg)
    if max_results < 1:
        msg = "local_search_tool needs max_results >= 1"
        raise ValueError(msg)
    indexed = [(url, text, _words(f"{url} {text}") - _URL_NOISE) for url, text in documents.items()]

    def search(query: str) -> str:
        wanted = _words(query)
        scored = [(len(wanted & words), i) for i, (_, _, words) in enumerate(indexed)]
        hits = sorted((-score, i) for score, i in scored if score)[:max_results]
        if not hits:
            return "no documents matched; try other words"
        blocks = []
        for n, (_, i) in enumerate(hits, 1):
            url, text, _ = indexed[i]
            body = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
            blocks.append(f"[{n}] {url}\n{body}")
        return "\n\n".join(blocks)

    tool = StructuredTool.from_function(
        func=search,
        name=name,
        description=(
            "Search the documents for a query; returns the matching ones, each with its "
            "source URL. Cite only those URLs."
        ),
        args_schema=_SearchArgs,
    )
    return declare_tool(tool, read_only=True)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}
