"""Ollama's ``/api/chat``: whole runs through langchain-ollama against a local fake server.

``OLLAMA_HOST`` points ``ollama:`` models at ``tests/ollama_server.py``, which answers with
the scripted scenarios over real HTTP, so these runs exercise what langchain-ollama and the
ollama client put on the wire and make of the answers: tools and tool calls with object
arguments, ``role: "tool"`` results, ``format`` for structured output, streamed NDJSON (the
client's default), ``prompt_eval_count``/``eval_count`` usage, and failures (503 busy, 429,
500, a reset connection, 401).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("langchain_ollama")
pytest.importorskip("langchain.chat_models")

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from agent import Context, build_graph, run  # noqa: E402
from agent.errors import ErrorClass, classify  # noqa: E402
from agent.models import providers as agent_providers  # noqa: E402
from agent.models.factory import load_model  # noqa: E402
from agent.runs.runner import result_of, thread_config  # noqa: E402
from tests.fakes import prompt_values  # noqa: E402
from tests.ollama_server import (  # noqa: E402
    DROP,
    EVAL_COUNT,
    PROMPT_TOKENS_PER_MESSAGE,
    serve,
    to_langchain,
)
from tests.wire_runs import (  # noqa: F401
    FAST_RETRY,
    HAPPY_REQUESTS,
    decisions,
    first_drafts,
    sqlite_wire_graph,
)

MODEL = "ollama:llama-fake"
# the tool path over the wire (a step needing no tool is otherwise asked directly)
NATIVE = Context(model=MODEL, tool_calling="native")
GOAL = "Write a slugify helper with tests and a README"


@pytest.fixture
def server(monkeypatch):
    with serve("happy") as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.base_url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # never send localhost through a proxy
        monkeypatch.setattr(agent_providers, "_CACHE", {})  # a client per test server
        yield fake


def drafts(server) -> list[tuple[str, str, int]]:
    return first_drafts(server, to_langchain, opening=2)


def test_a_full_run_plans_calls_tools_revises_a_failing_check_reflects_and_ends(server, graph):
    server.scenario = "demo"  # S3's first slugify fails its pytest check, a patch fixes it
    result = run(graph, GOAL, context=NATIVE, thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert {p: a["status"] for p, a in result["artifacts"].items()} == {
        "notes/requirements.md": "done",
        "test_slugify.py": "done",
        "slugify.py": "done",
        "README.md": "done",
    }
    assert ("coder", "S3", 0) in drafts(server) and ("coder", "S3", 1) in drafts(server)
    revision = next(
        values
        for body in server.requests_by_role("coder")
        if (values := prompt_values("subagent_revision", body["messages"][1]["content"]))
        and values["step_id"] == "S3"
    )
    assert "pytest" in revision["done_when"] and "assert" in revision["issues"]
    calls = [
        c["function"]["name"]
        for a in server.answers
        if a["role"] == "coder"
        for c in a["message"].get("tool_calls", [])
    ]
    assert "write_file" in calls and "edit_file" in calls
    assert [d["decision"] for d in decisions(graph, "t")][-1] == "end"

    # usage metered per role, exactly as the server reported it
    assert result["usage"] == server.usage_by_role()
    planner = server.usage_by_role()["planner"]
    assert planner["input_tokens"] == planner["calls"] * PROMPT_TOKENS_PER_MESSAGE * 2
    assert planner["output_tokens"] == planner["calls"] * EVAL_COUNT

    # what langchain-ollama put on the wire: every request streams (its default)
    assert all(body["stream"] is True for body in server.requests)
    plan = server.requests_by_role("planner")[0]
    assert plan["model"] == "llama-fake"
    assert [m["role"] for m in plan["messages"]] == ["system", "user"]
    # Ollama constrains decoding to the plan's schema (format): no prose answer possible
    assert not plan.get("tools") and plan["format"]["title"] == "PlanDraft"
    assert "steps" in plan["format"]["properties"]
    assert server.requests_by_role("reflection")[0]["format"]["title"] == "ReflectionAnswer"
    first, second = server.requests_by_role("researcher")
    assert {t["function"]["name"] for t in first["tools"]} >= {"write_file", "edit_file"}
    call = second["messages"][-2]["tool_calls"][0]
    assert call["function"]["name"] == "write_file"
    assert isinstance(call["function"]["arguments"], dict)
    assert second["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("fault", [503, 429, 500, DROP], ids=str)
def test_a_passing_failure_is_retried_by_the_graph_and_the_run_succeeds(server, graph, fault):
    server.fail_next(fault)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert server.requests[0] == server.requests[1]  # the planner's request, sent again
    assert server.requests_per_role() == {**HAPPY_REQUESTS, "planner": 2}
    assert result["usage"] == server.usage_by_role()


def test_a_busy_server_that_outlasts_the_retries_is_not_a_success(server, graph):
    server.fail_next(503, times=FAST_RETRY.max_attempts)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "model_unavailable")
    assert len(server.requests) == FAST_RETRY.max_attempts


def test_an_unauthorized_request_fails_the_run_without_a_retry(server, graph):
    server.fail_next(401)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    assert len(server.requests) == 1
    assert "unauthorized" in decisions(graph, "t")[-1]["reason"]


@pytest.mark.parametrize(("method", "fmt"), [("json_schema", dict), ("json_mode", str)])
def test_format_structured_output_completes_a_run(server, graph, method, fmt):
    result = run(graph, GOAL, context=Context(model=MODEL, structured_output=method), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    for role in ("planner", "reflection"):
        for body in server.requests_by_role(role):
            assert isinstance(body["format"], fmt) and not body.get("tools")
    if method == "json_mode":
        assert server.requests_by_role("planner")[0]["format"] == "json"
    assert result["usage"] == server.usage_by_role()


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
def test_a_malformed_reflection_answer_is_retried_once(server, graph, method):
    server.malformed_next("reflection")
    result = run(graph, GOAL, context=Context(model=MODEL, structured_output=method), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert len(server.requests_by_role("reflection")) == 2
    assert result["usage"] == server.usage_by_role()


def test_a_run_streamed_in_messages_mode_meters_usage(server, graph):
    modes = []
    for mode, _chunk in graph.stream(
        {"messages": [HumanMessage(GOAL)]},
        thread_config("t"),
        context=Context(model=MODEL),
        stream_mode=["updates", "messages"],
    ):
        modes.append(mode)
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert "messages" in modes
    assert result["usage"] == server.usage_by_role()


def test_a_refused_connection_through_the_ollama_client_is_transient(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(agent_providers, "_CACHE", {})
    with pytest.raises(Exception) as err:
        load_model(MODEL).invoke("hello")
    assert classify(err.value) is ErrorClass.TRANSIENT


def test_a_run_under_ainvoke_retries_and_succeeds_through_the_async_client(server):
    """``await graph.ainvoke(...)``: the client's async HTTP path, a retry included."""
    graph = build_graph(checkpointer=InMemorySaver(), retry_policy=FAST_RETRY)
    server.scenario = "demo"
    server.fail_next(503)
    payload = {"messages": [HumanMessage(GOAL)]}
    asyncio.run(graph.ainvoke(payload, thread_config("t"), context=Context(model=MODEL)))
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert server.requests[0] == server.requests[1]
    assert result["usage"] == server.usage_by_role()
