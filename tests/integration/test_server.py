"""`langgraph dev` with the real SDK: configuration schema, pause, resume, streaming."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.langgraph_server import dev_server as langgraph_dev
from tests.langgraph_server import langgraph_missing

pytest.importorskip("langgraph_sdk")
if reason := langgraph_missing():
    pytest.skip(reason, allow_module_level=True)


@contextmanager
def dev_server(log: Path, config: str = "langgraph.json", env_extra: dict | None = None):
    """`langgraph dev` (tests/langgraph_server.py) with a Python SDK client."""
    from langgraph_sdk import get_sync_client

    with langgraph_dev(log, config, env_extra) as url:
        yield get_sync_client(url=url)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with dev_server(tmp_path_factory.mktemp("server") / "langgraph-dev.log") as sdk:
        yield sdk


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def test_studio_shows_every_context_field_with_its_description(client):
    from agent.context import context_fields

    assistant = client.assistants.search(graph_id="deep_agent")[0]
    schema = client.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
    properties = schema["properties"]
    assert set(context_fields()) <= set(properties)
    assert all(properties[name].get("description") for name in context_fields())


def test_escalation_interrupts_the_thread_and_a_new_message_resumes_it(client):
    thread = client.threads.create()
    context = {"model": "scripted:escalation"}
    client.runs.wait(
        thread["thread_id"], "deep_agent", input=_user("Write a report"), context=context
    )
    assert client.threads.get(thread["thread_id"])["status"] == "interrupted"
    state = client.threads.get_state(thread["thread_id"])
    escalation = state["values"]["escalation"]
    assert escalation["question"].startswith("Who is the report for")
    assert [c["label"] for c in escalation["suggested_responses"]] == ["engineers", "executives"]
    interrupts = client.threads.get(thread["thread_id"])["interrupts"]
    assert [i["value"] for values in interrupts.values() for i in values] == [escalation]
    assert state["values"]["plan"]["version"] == 1
    summaries = state["values"]["file_summaries"]
    assert summaries["report.md"]["status"] == "done" and "content" not in summaries["report.md"]
    assert state["values"]["decisions"][-1]["decision"] == "escalate"

    final = client.runs.wait(
        thread["thread_id"], "deep_agent", input=_user("engineers"), context=context
    )
    assert final["status"] == "success" and final["stop_reason"] == "end"
    assert client.threads.get(thread["thread_id"])["status"] == "idle"


def test_command_resume_through_the_sdk_acts_on_the_answer(client):
    context = {"model": "scripted:escalation"}
    for resume, expected in (
        ("engineers", ("success", "end")),
        ({"action": "stop"}, ("failed", "stopped_by_human")),
    ):
        thread = client.threads.create()
        client.runs.wait(
            thread["thread_id"], "deep_agent", input=_user("Write a report"), context=context
        )
        final = client.runs.wait(
            thread["thread_id"], "deep_agent", command={"resume": resume}, context=context
        )
        assert (final["status"], final["stop_reason"]) == expected


def test_streamed_updates_show_planner_subagent_and_reflection(client):
    thread = client.threads.create()
    nodes = []
    for part in client.runs.stream(
        thread["thread_id"],
        "deep_agent",
        input=_user("x"),
        context={"model": "scripted:happy"},
        stream_mode="updates",
    ):
        if part.event == "updates":
            nodes.extend(part.data)
    assert nodes[:3] == ["planner", "subagent", "reflection"]
    assert nodes[-1] == "finalize"


def test_langgraph_sqlite_json_keeps_the_servers_threads_in_sqlite(tmp_path):
    db = tmp_path / "server.sqlite"
    env = {"DEEPREFLECT_SERVER_DB": str(db)}
    with dev_server(tmp_path / "dev.log", "langgraph.sqlite.json", env) as sdk:
        thread = sdk.threads.create()
        context = {"model": "scripted:escalation"}
        sdk.runs.wait(thread["thread_id"], "deep_agent", input=_user("Write"), context=context)
        assert sdk.threads.get(thread["thread_id"])["status"] == "interrupted"
        with sqlite3.connect(db) as conn:
            stored = conn.execute(
                "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread["thread_id"],)
            ).fetchone()[0]
        assert stored > 0
        final = sdk.runs.wait(
            thread["thread_id"], "deep_agent", input=_user("engineers"), context=context
        )
        assert final["status"] == "success"
