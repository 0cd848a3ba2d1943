"""Anthropic's Messages API: whole runs through langchain-anthropic against a local fake.

``ANTHROPIC_BASE_URL`` points ``anthropic:`` models at ``tests/anthropic_server.py``, which
answers with the scripted scenarios over real HTTP, so these runs exercise what
langchain-anthropic and the anthropic SDK put on the wire and make of the answers: content
blocks, tool use and results, forced tools for structured output, server-sent events, usage,
and Anthropic's errors (429, 529 overloaded, an overloaded stream, a reset connection, 401).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain.chat_models")

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from agent import Context, build_graph, run  # noqa: E402
from agent.models import providers as agent_providers  # noqa: E402
from agent.runs.runner import result_of, thread_config  # noqa: E402
from tests.anthropic_server import (  # noqa: E402
    DROP,
    INPUT_TOKENS_PER_MESSAGE,
    OUTPUT_TOKENS,
    STREAM_OVERLOADED,
    serve,
    to_langchain,
)
from tests.fakes import prompt_values  # noqa: E402
from tests.wire_runs import (  # noqa: F401
    FAST_RETRY,
    HAPPY_REQUESTS,
    decisions,
    first_drafts,
    sqlite_wire_graph,
)

MODEL = "anthropic:claude-fake"
# the tool path over the wire (a step needing no tool is otherwise asked directly)
NATIVE = Context(model=MODEL, tool_calling="native")
GOAL = "Write a slugify helper with tests and a README"


@pytest.fixture
def server(monkeypatch):
    with serve("happy") as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # never send localhost through a proxy
        monkeypatch.setattr(agent_providers, "_CACHE", {})  # a client per test server
        yield fake


def tasks(server) -> list[tuple[str, str, int]]:
    return first_drafts(server, to_langchain, opening=1)


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
    # the failing check sent S3 back with its evidence, and the coder patched it
    assert ("coder", "S3", 0) in tasks(server) and ("coder", "S3", 1) in tasks(server)
    revision = next(
        values
        for body in server.requests_by_role("coder")
        if (values := prompt_values("subagent_revision", _first_user_text(body)))
        and values["step_id"] == "S3"
    )
    assert "pytest" in revision["done_when"] and "assert" in revision["issues"]
    patched = [
        b
        for a in server.answers
        if a["role"] == "coder"
        for b in a["content"]
        if b["type"] == "tool_use"
    ]
    assert "edit_file" in [b["name"] for b in patched]
    assert [d["decision"] for d in decisions(graph, "t")][-1] == "end"
    assert any(d["by"] == "model" for d in decisions(graph, "t"))

    # usage metered per role, exactly as the server reported it
    assert result["usage"] == server.usage_by_role()
    planner = server.usage_by_role()["planner"]
    assert planner["input_tokens"] == planner["calls"] * INPUT_TOKENS_PER_MESSAGE * 2
    assert planner["output_tokens"] == planner["calls"] * OUTPUT_TOKENS

    # what langchain-anthropic put on the wire
    plan = server.requests_by_role("planner")[0]
    assert plan["model"] == "claude-fake" and not plan.get("stream")
    assert plan["system"] and plan["messages"][0]["role"] == "user"
    assert plan["tool_choice"] == {"type": "tool", "name": "PlanDraft"}
    assert [t["name"] for t in plan["tools"]] == ["PlanDraft"]
    first, second = server.requests_by_role("researcher")
    assert {t["name"] for t in first["tools"]} >= {"write_file", "edit_file"}
    assert all("input_schema" in t for t in first["tools"])
    call = next(b for b in second["messages"][-2]["content"] if b["type"] == "tool_use")
    result_block = second["messages"][-1]["content"][0]
    assert call["name"] == "write_file"
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == call["id"]
    reflection = server.requests_by_role("reflection")[0]
    assert reflection["tool_choice"] == {"type": "tool", "name": "ReflectionAnswer"}


def _first_user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return content


@pytest.mark.parametrize("fault", [429, 529, 500, DROP], ids=str)
def test_a_passing_failure_is_retried_by_the_graph_and_the_run_succeeds(server, graph, fault):
    server.fail_next(fault)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert server.requests[0] == server.requests[1]  # the planner's request, sent again
    assert server.requests_per_role() == {**HAPPY_REQUESTS, "planner": 2}
    assert result["usage"] == server.usage_by_role()  # the failure reported no usage


def test_overload_that_outlasts_the_retries_is_not_a_success(server, graph):
    server.fail_next(529, times=FAST_RETRY.max_attempts)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "model_unavailable")
    assert len(server.requests) == FAST_RETRY.max_attempts


def test_an_invalid_key_fails_the_run_without_a_retry(server, graph):
    server.fail_next(401)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    assert len(server.requests) == 1
    reason = decisions(graph, "t")[-1]["reason"]
    assert reason.startswith("planner model:") and "invalid x-api-key" in reason


def test_a_malformed_reflection_answer_is_retried_once(server, graph):
    server.malformed_next("reflection")
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert len(server.requests_by_role("reflection")) == 2
    assert result["usage"]["reflection"]["calls"] == 2
    assert result["usage"] == server.usage_by_role()


def test_json_schema_structured_output_completes_a_run(server, graph):
    context = Context(model=MODEL, structured_output="json_schema")
    result = run(graph, GOAL, context=context, thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    for role in ("planner", "reflection"):
        for body in server.requests_by_role(role):
            fmt = body.get("output_format") or body["output_config"]["format"]
            assert fmt["type"] == "json_schema" and "tools" not in body
    assert result["usage"] == server.usage_by_role()


def stream_run(graph, thread_id: str) -> list[str]:
    """Run the graph as ``langgraph dev`` and Studio do: streaming LLM tokens."""
    modes = []
    payload = {"messages": [HumanMessage(GOAL)]}
    for mode, _chunk in graph.stream(
        payload,
        thread_config(thread_id),
        context=Context(model=MODEL),
        stream_mode=["updates", "messages"],
    ):
        modes.append(mode)
    return modes


def test_a_streamed_run_completes_over_server_sent_events_and_meters_usage(server, graph):
    server.scenario = "demo"
    modes = stream_run(graph, "t")
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert "messages" in modes
    assert all(body.get("stream") is True for body in server.requests)
    assert result["usage"] == server.usage_by_role()  # message_delta's final counts


def test_an_overloaded_stream_is_retried_and_the_run_succeeds(server, graph):
    """Mid-stream, Anthropic reports overload as an ``error`` event on a 200 response."""
    server.fail_next(STREAM_OVERLOADED)
    stream_run(graph, "t")
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert server.requests[0]["stream"] is True and server.requests[0] == server.requests[1]
    assert server.requests_per_role() == {**HAPPY_REQUESTS, "planner": 2}
    assert result["usage"] == server.usage_by_role()


def test_a_run_under_ainvoke_retries_and_succeeds_through_the_async_client(server):
    """``await graph.ainvoke(...)``: the client's async HTTP path, a retry included."""
    graph = build_graph(checkpointer=InMemorySaver(), retry_policy=FAST_RETRY)
    server.scenario = "demo"
    server.fail_next(529)
    payload = {"messages": [HumanMessage(GOAL)]}
    asyncio.run(graph.ainvoke(payload, thread_config("t"), context=Context(model=MODEL)))
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert server.requests[0] == server.requests[1]
    assert result["usage"] == server.usage_by_role()
