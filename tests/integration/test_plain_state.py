"""State holds plain strings: a status, stop reason or decision written as a ``StrEnum``
member would be checkpointed as an enum object (LangGraph's serializer keeps the class), which
other readers of the checkpoint refuse or warn about."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent import Context, resume, run
from agent.runs.runner import thread_config
from tests.fakes import sqlite_graph


def _enums(value: Any, where: str = "state") -> list[str]:
    """Where in ``value`` an enum member is kept (messages are LangChain's objects)."""
    if isinstance(value, Enum):
        return [f"{where}: {value!r}"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _enums(k, where) + _enums(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _enums(v, f"{where}[{i}]")]
    if isinstance(value, BaseMessage):
        return _enums(value.content, f"{where}.content")
    return []


@pytest.mark.parametrize("scenario", ["demo", "escalation"])
def test_a_run_and_its_resume_keep_no_enum_in_state(tmp_path, scenario):
    graph, conn = sqlite_graph(tmp_path, {})
    ctx = Context(model=f"scripted:{scenario}")
    first = run(graph, "write it", context=ctx, thread_id="t")
    assert _enums(graph.get_state(thread_config("t")).values) == []
    if first["status"] == "awaiting_input":
        resume(graph, "t", {"action": "accept"}, context=ctx)
        assert _enums(graph.get_state(thread_config("t")).values) == []
    conn.close()
