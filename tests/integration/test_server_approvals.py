"""Approvals through `langgraph dev` and the Python SDK (issue 15): a run pauses before the
tool with the call in the interrupt; approve runs it once, edit runs the edited arguments,
reject tells the model; nothing runs before a decision."""

from __future__ import annotations

import pytest

from tests.langgraph_server import dev_server, langgraph_missing
from tests.side_effects import REPORT, Outbox

pytest.importorskip("langgraph_sdk")
if reason := langgraph_missing():
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from langgraph_sdk import get_sync_client

    folder = tmp_path_factory.mktemp("approvals")
    outbox = folder / "outbox"
    env = {"APPROVAL_OUTBOX": str(outbox)}
    with dev_server(folder / "dev.log", "tests/approval.langgraph.json", env) as url:
        yield get_sync_client(url=url), Outbox(outbox)


def _paused(client):
    thread = client.threads.create()["thread_id"]
    user = {"messages": [{"role": "user", "content": "send the email and report"}]}
    client.runs.wait(thread, "approval", input=user)
    assert client.threads.get(thread)["status"] == "interrupted"
    interrupts = client.threads.get(thread)["interrupts"]
    values = [i["value"] for pending in interrupts.values() for i in pending]
    assert len(values) == 1
    return thread, values[0]


def _resumed(client, thread, resume):
    client.runs.wait(thread, "approval", command={"resume": resume})
    return client.threads.get_state(thread)["values"]


def test_the_interrupt_shows_the_call_and_approve_runs_it_once(served):
    client, outbox = served
    before = len(outbox.sent())
    thread, payload = _paused(client)
    request = payload["action_requests"][0]
    assert request["name"] == "send_email" and request["step_id"] == "S1"
    assert request["args"] == {"to": "ops@example.com", "body": "deploy done"}
    assert len(outbox.sent()) == before  # nothing ran before the decision
    values = _resumed(client, thread, {"decisions": [{"type": "approve"}]})
    assert values["status"] == "success"
    assert len(outbox.sent()) == before + 1
    assert values["files"][REPORT]["content"].startswith("sent email")


def test_edit_runs_the_edited_arguments_and_reject_tells_the_model(served):
    client, outbox = served
    thread, _ = _paused(client)
    edited = {"to": "team@example.com", "body": "edited"}
    decision = {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}
    assert _resumed(client, thread, {"decisions": [decision]})["status"] == "success"
    assert outbox.sent()[-1]["to"] == "team@example.com"

    count = len(outbox.sent())
    thread, _ = _paused(client)
    values = _resumed(client, thread, {"decisions": [{"type": "reject", "message": "not now"}]})
    assert len(outbox.sent()) == count
    assert values["files"][REPORT]["content"] == "rejected by a human: not now\n"
