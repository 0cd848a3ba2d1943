"""What the wire tests (OpenAI, Anthropic, Ollama protocols) share: fast retries, the requests
a happy run makes, the graph fixture, and what the server saw."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.types import RetryPolicy

from agent.errors import is_transient
from agent.runs.runner import thread_config
from tests.fakes import sqlite_graph
from tests.wire_server import call_metadata, role_of

# jitter=False: LangGraph's jitter adds up to a second to every retry
FAST_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)
# happy: planner, S1 (researcher: write, then stop; the judge reads its prose), rule-0
# continue, S2 (writer; the judge again), reflection
HAPPY_REQUESTS = {"planner": 1, "researcher": 2, "writer": 2, "judge": 2, "reflection": 1}


@pytest.fixture(name="graph")
def sqlite_wire_graph(tmp_path) -> Iterator[Any]:
    """The graph on SQLite with fast retries; models come from the run's Context."""
    graph, conn = sqlite_graph(tmp_path, {}, retry_policy=FAST_RETRY)
    yield graph
    conn.close()


def decisions(graph: Any, thread_id: str) -> list[dict]:
    return graph.get_state(thread_config(thread_id)).values["decisions"]


def first_drafts(
    server: Any,
    to_langchain: Callable[[dict[str, Any]], list[BaseMessage]],
    opening: int,
) -> list[tuple[str, str, int]]:
    """(role, step_id, revision) of every subagent request a fake ``server`` received that
    starts a draft: the ones whose body holds only the ``opening`` messages (the system
    prompt may travel apart)."""
    found = []
    for body in server.requests:
        messages = to_langchain(body)
        meta = call_metadata(role_of(messages), messages, server.planned)
        if "step_id" in meta and len(body["messages"]) == opening:
            found.append((meta["role"], meta["step_id"], meta["revision"]))
    return found
