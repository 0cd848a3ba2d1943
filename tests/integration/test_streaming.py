"""What a chat front end receives while a run streams: progress as ``custom`` events, the
subagents' tokens told apart by step, and no planner or reflection JSON as chat."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from agent import Context, build_graph
from tests.fakes import END, models, step

PLAN = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
# a round per step: dispatch, check, then reflection's decision (a rule's, then the model's)
EVENTS = ["plan"] + ["step_started", "check", "decision"] * 2


def _graph() -> Any:
    return build_graph(models=models(PLAN, [END]), checkpointer=InMemorySaver())


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_custom_events_report_the_plan_each_step_its_check_and_the_decision():
    chunks = _graph().stream(
        {"messages": [("user", "two files")]},
        _config("c1"),
        context=Context(model="scripted:happy"),
        stream_mode="custom",
    )
    events = list(chunks)
    names = [e["event"] for e in events]
    assert names == EVENTS
    assert [e["step_id"] for e in events if e["event"] == "step_started"] == ["S1", "S2"]
    assert all(e["passed"] for e in events if e["event"] == "check")
    assert [(e["decision"], e["by"]) for e in events if e["event"] == "decision"] == [
        ("continue", "rule"),
        ("end", "model"),
    ]


def test_custom_events_stream_the_same_under_astream():
    async def collect() -> list[str]:
        stream = _graph().astream(
            {"messages": [("user", "two files")]},
            _config("c2"),
            context=Context(model="scripted:happy"),
            stream_mode="custom",
        )
        return [e["event"] async for e in stream]

    assert asyncio.run(collect()) == EVENTS


def test_only_subagent_calls_stream_as_chat_and_each_names_its_step_and_role():
    streamed = list(
        _graph().stream(
            {"messages": [("user", "two files")]},
            _config("m1"),
            context=Context(model="scripted:happy"),
            stream_mode="messages",
        )
    )
    roles = {meta.get("role") for _chunk, meta in streamed if meta.get("role")}
    assert "planner" not in roles and "reflection" not in roles
    subagent = [meta for _chunk, meta in streamed if meta.get("role") == "writer"]
    assert {meta["step_id"] for meta in subagent} == {"S1", "S2"}
