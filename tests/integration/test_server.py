"""`langgraph dev` with the real SDK: configuration schema, pause, resume, streaming."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.events import is_progress
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
    from agent.context import Context

    names = [f.name for f in dataclasses.fields(Context)]
    assistant = client.assistants.search(graph_id="deep_agent")[0]
    schema = client.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
    properties = schema["properties"]
    assert set(names) <= set(properties)
    assert all(properties[name].get("description") for name in names)


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


# ---------------------------------------- what agent-chat-ui sends: its buttons, typed words


def _paused_thread(client, model: str = "scripted:escalation") -> tuple[str, dict]:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "deep_agent", input=_user("Write a report"), context={"model": model})
    assert client.threads.get(thread)["status"] == "interrupted"
    interrupts = client.threads.get(thread)["interrupts"]
    (value,) = [i["value"] for pending in interrupts.values() for i in pending]
    return thread, value


def test_the_escalation_interrupt_is_the_review_card_agent_chat_ui_draws(client):
    from tests.unit.test_answers import drawn_with_buttons

    thread, value = _paused_thread(client)
    assert drawn_with_buttons(value)
    (action,) = value["action_requests"]
    assert action["name"] == "escalation" and action["args"]["question"].startswith("Who is")
    assert (
        "- `engineers`" in action["args"]["reject"] and "- `stop here`" in action["args"]["reject"]
    )
    assert value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]


@pytest.mark.parametrize(
    ("resume", "expected"),
    [
        # agent-chat-ui's thread.submit({}, {command: {resume: {decisions: [decision]}}})
        ({"decisions": [{"type": "approve"}]}, ("success", "accepted_by_human")),
        (
            {"decisions": [{"type": "reject", "message": "Stop here"}]},
            ("failed", "stopped_by_human"),
        ),
        ({"decisions": [{"type": "reject", "message": "engineers"}]}, ("success", "end")),
        ([{"type": "ignore", "args": None}], ("failed", "stopped_by_human")),
    ],
)
def test_each_agent_chat_ui_button_value_ends_the_thread_as_labelled(client, resume, expected):
    thread, _ = _paused_thread(client)
    final = client.runs.wait(
        thread, "deep_agent", command={"resume": resume}, context={"model": "scripted:escalation"}
    )
    assert (final["status"], final["stop_reason"]) == expected
    assert client.threads.get(thread)["status"] == "idle"


def test_a_typed_label_in_the_chat_acts_and_a_repeat_pause_is_a_new_last_message(client):
    thread, _ = _paused_thread(client, "scripted:depth-cap")
    context = {"model": "scripted:depth-cap"}
    client.runs.wait(thread, "deep_agent", input=_user("try once more"), context=context)
    messages = client.threads.get_state(thread)["values"]["messages"]
    pauses = [m["id"] for m in messages if m["type"] == "ai" and not is_progress(m)]
    assert len(set(pauses)) == 2 and messages[-1]["id"] == pauses[-1]
    final = client.runs.wait(thread, "deep_agent", input=_user("  STOP here "), context=context)
    assert (final["status"], final["stop_reason"]) == ("failed", "stopped_by_human")


def test_a_model_that_cannot_be_made_leaves_its_error_and_the_fix_in_the_thread(client):
    thread = client.threads.create()["thread_id"]
    final = client.runs.wait(
        thread, "deep_agent", input=_user("Write"), context={"model": "openai:gpt-4.1-mini"}
    )
    assert (final["status"], final["stop_reason"]) == ("failed", "invalid_input")
    assert client.threads.get(thread)["status"] == "idle"
    last = client.threads.get_state(thread)["values"]["messages"][-1]
    assert last["type"] == "ai" and "OPENAI_API_KEY" in last["content"]
    assert "DEEPREFLECT_MODEL" in last["content"] and "assistant's context" in last["content"]
