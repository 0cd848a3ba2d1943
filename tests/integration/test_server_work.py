"""Issue 44's features through `langgraph dev` and the Python SDK: memories in the server's own
store reach the next thread of the same user and no other's; a coder's ``execute`` runs in
the sandbox and an approval rule on it pauses and resumes through the SDK; a compiled
``create_agent`` graph as a subagent asks its question through the SDK client."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent.models.scenarios import RUN_TESTS, SCENARIO_CONTEXT, SCENARIO_GOALS
from agent.sandbox import SandboxUnavailable, isolation_level
from agent.store.memories import NAMESPACE_ROOT
from agent.tools.command import EXECUTE
from tests.langgraph_server import dev_server, langgraph_missing
from tests.served_graphs import CONVENTIONS, NOTE, QUESTION

pytest.importorskip("langgraph_sdk")
if reason := langgraph_missing():
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from langgraph_sdk import get_sync_client

    folder = tmp_path_factory.mktemp("served")
    with dev_server(folder / "dev.log", "tests/served.langgraph.json") as url:
        yield get_sync_client(url=url)


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _run(client, graph: str, text: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    """A new thread's run to its end or pause: the thread id and its values."""
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, graph, input=_user(text), **kwargs)
    return thread, client.threads.get_state(thread)["values"]


def _interrupts(client, thread: str) -> list[Any]:
    pending = client.threads.get(thread)["interrupts"]
    return [i["value"] for values in pending.values() for i in values]


def test_memories_in_the_servers_store_reach_the_same_user_and_no_other(client):
    alice, bob = f"alice-{uuid.uuid4().hex[:8]}", f"bob-{uuid.uuid4().hex[:8]}"
    _, first = _run(client, "remember", "Write the report", context={"user_id": alice})
    assert first["status"] == "success"
    items = client.store.search_items([NAMESPACE_ROOT, "user", alice])["items"]
    assert [(i["key"], i["value"]["content"]) for i in items] == [("conventions.md", CONVENTIONS)]

    _, second = _run(client, "recall", "Write the report", context={"user_id": alice})
    assert second["status"] == "success"
    assert "British spelling" in second["files"]["report.md"]["content"]

    _, other = _run(client, "recall", "Write the report", context={"user_id": bob})
    assert NOTE not in other["files"]
    assert "British" not in other["files"]["report.md"]["content"]
    assert client.store.search_items([NAMESPACE_ROOT, "user", bob])["items"] == []


def _execute_context(**overrides: Any) -> dict[str, Any]:
    return {"model": "scripted:execute", **SCENARIO_CONTEXT["execute"], **overrides}


def _executed(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in values["trajectory"] if e.get("action") == EXECUTE]


def _sandbox_level() -> str:
    try:
        return isolation_level()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox: {exc}")


def test_a_coders_command_runs_in_the_sandbox_and_its_evidence_comes_back(client):
    level = _sandbox_level()
    goal = SCENARIO_GOALS["execute"]
    _, values = _run(client, "deep_agent", goal, context=_execute_context())
    assert values["status"] == "success"
    calls = _executed(values)
    assert [c["params"]["command"] for c in calls] == [RUN_TESTS, RUN_TESTS]
    assert calls[0]["observation"].startswith(f"exit code 1 [sandbox: {level}]")
    assert calls[1]["observation"].startswith(f"exit code 0 [sandbox: {level}]")
    assert "a + b" in values["files"]["calc.py"]["content"]


def test_an_approval_on_execute_pauses_and_resumes_through_the_sdk(client):
    _sandbox_level()
    goal = SCENARIO_GOALS["execute"]
    context = _execute_context(interrupt_on=EXECUTE)
    thread, values = _run(client, "deep_agent", goal, context=context)
    assert client.threads.get(thread)["status"] == "interrupted"
    (payload,) = _interrupts(client, thread)
    (request,) = payload["action_requests"]
    assert (request["name"], request["args"]) == (EXECUTE, {"command": RUN_TESTS})
    assert _executed(values) == []  # nothing ran before the decision

    approve = {"decisions": [{"type": "approve"}]}
    for _ in range(3):  # each run of the same line is its own call, approved on its own
        client.runs.wait(thread, "deep_agent", command={"resume": approve}, context=context)
        if client.threads.get(thread)["status"] != "interrupted":
            break
    values = client.threads.get_state(thread)["values"]
    assert values["status"] == "success"
    ran = [c["observation"][: len("exit code 0")] for c in _executed(values)]
    assert ran[-2:] == ["exit code 1", "exit code 0"]


def test_a_create_agent_subagents_interrupt_reaches_the_sdk_and_its_answer_resumes(client):
    thread, _ = _run(client, "graph_subagent", "Analyse the sales")
    assert client.threads.get(thread)["status"] == "interrupted"
    assert _interrupts(client, thread) == [QUESTION]

    client.runs.wait(thread, "graph_subagent", command={"resume": "north"})
    values = client.threads.get_state(thread)["values"]
    assert values["status"] == "success"
    assert "Region north rose 4%" in values["files"]["findings.md"]["content"]
    assert client.threads.get(thread)["status"] == "idle"
