"""The OpenAI wire protocol: whole runs through langchain-openai against a local fake server.

``OPENAI_BASE_URL`` points at ``tests/openai_server.py``, which answers with the scripted
scenarios over real HTTP, so these runs exercise the request payloads, tool calls, usage,
HTTP errors and retries exactly as an OpenAI-compatible server would produce them.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from agent import Context, resume, run
from agent.models import providers as agent_providers
from agent.prompts import render
from agent.runs.runner import result_of, thread_config
from tests.fakes import prompt_values, sqlite_graph
from tests.openai_server import role_of, serve, to_langchain
from tests.wire_runs import FAST_RETRY, HAPPY_REQUESTS, decisions, sqlite_wire_graph  # noqa: F401

MODEL = "openai:fake-model"
# the tool path over the wire (a step needing no tool is otherwise asked directly)
NATIVE = Context(model=MODEL, tool_calling="native")
GOAL = "Write a short report on vector databases"


@pytest.fixture
def server(monkeypatch):
    with serve("happy") as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # never send localhost through a proxy
        monkeypatch.setattr(agent_providers, "_CACHE", {})  # a client per test server
        yield fake


def requests_per_role(server) -> dict[str, int]:
    roles = ("planner", "reflection", "researcher", "writer", "judge")
    counts = {role: len(server.requests_by_role(role)) for role in roles}
    return {role: n for role, n in counts.items() if n}


def test_a_scripted_run_over_the_wire_succeeds_and_meters_what_the_server_reported(server, graph):
    result = run(graph, GOAL, context=NATIVE, thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert result["converged"] is True
    assert {p: a["status"] for p, a in result["artifacts"].items()} == {
        "notes.md": "done",
        "report.md": "done",
    }
    assert requests_per_role(server) == HAPPY_REQUESTS
    assert result["usage"] == server.usage_by_role()
    assert result["usage"]["planner"] == {
        "input_tokens": 20,  # system + user, 10 tokens a message
        "output_tokens": 7,
        "total_tokens": 27,
        "calls": 1,
    }

    # what langchain-openai put on the wire: a server of one's own (OPENAI_BASE_URL)
    # constrains decoding to the plan's schema, so the planner cannot answer in prose
    planner = server.requests_by_role("planner")[0]
    assert planner["model"] == "fake-model" and planner["stream"] is False
    assert "tools" not in planner and "tool_choice" not in planner
    assert planner["response_format"]["type"] == "json_schema"
    schema = planner["response_format"]["json_schema"]
    assert schema["name"] == "PlanDraft"
    step = schema["schema"]["$defs"]["Step"]["properties"]
    assert {"step_id", "action", "expected_output", "done_when"} <= set(step)
    assert set(step["action"]["enum"]) >= {"researcher", "writer"}  # only registered actions
    first, second = server.requests_by_role("researcher")
    assert {t["function"]["name"] for t in first["tools"]} >= {"write_file", "edit_file"}
    call = first_tool_call(server, "researcher")
    assert second["messages"][-2]["tool_calls"][0]["id"] == call["id"]
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["tool_call_id"] == call["id"]
    reflection = server.requests_by_role("reflection")[0]
    assert reflection["response_format"]["json_schema"]["name"] == "ReflectionAnswer"


def test_a_schema_too_slow_to_decode_by_is_asked_the_next_way_and_not_again(server, graph):
    server.slow_response_format_s = 1.5
    context = Context(model=MODEL, request_timeout_s=0.5)
    result = run(graph, GOAL, context=context, thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    planner = server.requests_by_role("planner")
    assert [bool(b.get("response_format")) for b in planner] == [True, False]
    assert planner[-1]["tools"][0]["function"]["name"] == "PlanDraft"
    reflection = server.requests_by_role("reflection")
    assert reflection and not any(b.get("response_format") for b in reflection)


def test_function_calling_sends_the_schema_as_a_forced_tool(server, graph):
    context = Context(model=MODEL, structured_output="function_calling")
    result = run(graph, GOAL, context=context, thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    planner = server.requests_by_role("planner")[0]
    assert [t["function"]["name"] for t in planner["tools"]] == ["PlanDraft"]
    assert planner["tool_choice"] == {"type": "function", "function": {"name": "PlanDraft"}}
    reflection = server.requests_by_role("reflection")[0]
    assert reflection["tool_choice"]["function"]["name"] == "ReflectionAnswer"


def test_a_server_that_refuses_response_format_falls_back_and_is_remembered(server, graph):
    server.refuse_response_format = True
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    roles = {"planner", "reflection"}
    structured = [b for b in server.requests if role_of(to_langchain(b["messages"])) in roles]
    asked = ["response_format" if b.get("response_format") else "tools" for b in structured]
    # the refusal is asked again at once by tool calling, which answered: from then on
    # this model is asked that way first, and json_schema is not sent again
    assert asked[:2] == ["response_format", "tools"] and set(asked[1:]) == {"tools"}
    assert len(asked) >= 3  # the planner and at least one reflection
    names = {b["tools"][0]["function"]["name"] for b in structured if "tools" in b}
    assert names == {"PlanDraft", "ReflectionAnswer"}


def first_tool_call(server, role: str) -> dict:
    answers = [a for a in server.answers if a["role"] == role]
    return answers[0]["message"]["tool_calls"][0]


def test_a_rate_limited_request_is_retried_by_the_graph_and_the_run_succeeds(server, graph):
    server.fail_next(429)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert len(server.requests) == sum(HAPPY_REQUESTS.values()) + 1
    assert server.requests[0] == server.requests[1]  # the planner's request, sent again
    assert requests_per_role(server) == {**HAPPY_REQUESTS, "planner": 2}
    assert result["usage"] == server.usage_by_role()  # the 429 reported no usage


def test_a_rate_limit_that_outlasts_the_retries_is_not_a_success(server, graph):
    server.fail_next(503, times=FAST_RETRY.max_attempts)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "model_unavailable")
    assert len(server.requests) == FAST_RETRY.max_attempts
    assert decisions(graph, "t")[-1]["reason"].startswith("planner model:")


def test_an_unauthorized_key_fails_the_run_without_a_retry(server, graph):
    server.fail_next(401)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    assert len(server.requests) == 1
    reason = decisions(graph, "t")[-1]["reason"]
    assert reason.startswith("planner model:") and "Incorrect API key" in reason


def test_a_malformed_reflection_answer_is_retried_once(server, graph):
    server.malformed_next("reflection")
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    first, retry = server.requests_by_role("reflection")
    assert first["messages"][-1]["role"] == "user"
    assert len(retry["messages"]) == len(first["messages"]) + 2  # the bad answer + the error
    assert [(d["decision"], d["by"]) for d in decisions(graph, "t")] == [
        ("continue", "rule"),
        ("end", "model"),
    ]
    assert result["usage"]["reflection"]["calls"] == 2
    assert result["usage"] == server.usage_by_role()


def test_a_reflection_malformed_twice_is_a_lost_round_never_an_end(server, graph):
    server.malformed_next("reflection", times=2)
    result = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")

    logged = decisions(graph, "t")
    lost = logged[1]
    assert lost["decision"] == "replan" and lost["forced"] is True  # every step done: replan
    assert lost["reason"].startswith("reflection answer malformed twice")
    # the replan keeps both done steps, so the next reflection is asked again and may end
    assert [d["decision"] for d in logged] == ["continue", "replan", "end"]
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert len(server.requests_by_role("reflection")) == 3
    assert result["usage"] == server.usage_by_role()


def test_a_reflection_that_is_never_valid_never_ends_the_run(server, graph):
    server.malformed_next("reflection", times=1000)
    result = run(graph, GOAL, context=Context(model=MODEL, workload="qa"), thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "depth_cap")
    assert "end" not in [d["decision"] for d in decisions(graph, "t")]
    assert len(server.requests_by_role("reflection")) == 2 * 2  # qa cap 2, each retried once


@pytest.mark.parametrize(
    ("method", "response_format"),
    [("json_schema", "json_schema"), ("json_mode", "json_object")],
)
def test_json_schema_and_json_mode_structured_output_complete_a_run(
    server, graph, method, response_format
):
    context = Context(model=MODEL, structured_output=method)
    result = run(graph, GOAL, context=context, thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    for role in ("planner", "reflection"):
        for body in server.requests_by_role(role):
            assert body["response_format"]["type"] == response_format
            assert "tools" not in body
    if method == "json_schema":
        planner = server.requests_by_role("planner")[0]
        assert planner["response_format"]["json_schema"]["name"] == "PlanDraft"
    assert result["usage"] == server.usage_by_role()


@pytest.mark.parametrize("method", ["json_mode", "json_schema"])
def test_response_format_methods_retry_a_malformed_reflection(server, graph, method):
    server.malformed_next("reflection")
    context = Context(model=MODEL, structured_output=method)
    result = run(graph, GOAL, context=context, thread_id="t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert len(server.requests_by_role("reflection")) == 2


def test_the_escalation_scenario_pauses_and_resumes_over_the_wire(server, tmp_path):
    server.scenario = "escalation"
    graph, conn = sqlite_graph(tmp_path, {}, retry_policy=FAST_RETRY)
    paused = run(graph, GOAL, context=Context(model=MODEL), thread_id="t")
    conn.close()

    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "model_escalated")
    assert paused["escalation"]["question"] == "Who is the report for: engineers or executives?"
    labels = [c["label"] for c in paused["escalation"]["suggested_responses"]]
    assert labels == ["engineers", "executives"]
    before = len(server.requests)

    # a fresh graph on the same SQLite file, as another process would resume it
    graph, conn = sqlite_graph(tmp_path, {}, retry_policy=FAST_RETRY)
    try:
        done = resume(graph, "t", "engineers")  # the stored Context: the same openai model
        values = graph.get_state(thread_config("t")).values
    finally:
        conn.close()

    assert (done["status"], done["stop_reason"]) == ("success", "end")
    assert done["plan_version"] == 2
    replan = server.requests_by_role("planner")[1]
    asked = prompt_values("planner_input", replan["messages"][-1]["content"])
    assert asked and asked["answer"] == "engineers"
    steps = values["plan"]["steps"]
    assert all("Audience: engineers." in s["instructions"] for s in steps)
    assert len(server.requests) > before
    assert done["usage"] == server.usage_by_role()  # both turns, summed


def test_a_streaming_client_gets_server_sent_events(server):
    """``graph.stream(stream_mode="messages")`` (langgraph dev, Studio) makes ChatOpenAI
    stream; the fake answers with SSE chunks and a final usage chunk."""
    model = ChatOpenAI(
        model="fake-model",
        api_key="not-needed",
        base_url=server.base_url,
        max_retries=0,
        stream_usage=True,
    )
    messages = [SystemMessage(render("reflection")), HumanMessage("{}")]
    chunks = list(model.stream(messages))
    answer = chunks[0]
    for chunk in chunks[1:]:
        answer += chunk

    body = server.requests[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert json.loads(answer.content) == {"decision": "continue", "reason": "steps remain"}
    assert answer.usage_metadata["input_tokens"] == 20
    assert answer.usage_metadata["output_tokens"] == 7


def stream_messages(graph, thread_id: str) -> list[str]:
    """Run the graph as ``langgraph dev`` and Studio do: streaming LLM tokens."""
    modes = []
    payload = {"messages": [HumanMessage(GOAL)]}
    context = Context(model=MODEL)
    for mode, _chunk in graph.stream(
        payload, thread_config(thread_id), context=context, stream_mode=["updates", "messages"]
    ):
        modes.append(mode)
    return modes


def test_a_run_streamed_in_messages_mode_completes_over_server_sent_events(server, graph):
    modes = stream_messages(graph, "t")
    result = result_of(graph, "t")

    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert "messages" in modes
    assert all(body["stream"] is True for body in server.requests)
    assert requests_per_role(server) == HAPPY_REQUESTS


def test_a_run_streamed_in_messages_mode_meters_usage(server, graph):
    stream_messages(graph, "t")
    result = result_of(graph, "t")

    assert all(body.get("stream_options") == {"include_usage": True} for body in server.requests)
    assert result["usage"] == server.usage_by_role()
