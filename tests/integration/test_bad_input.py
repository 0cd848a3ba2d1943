"""Bad input gets a clear error, never a traceback, and loses nothing: tool arguments nested
300 deep or not JSON at all, a Context of the wrong types, a 10 MB goal, unsafe step ids and
a judge that fails mid-loop. Each test also shows the thread still works afterwards."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_openai.chat_models.base import _convert_dict_to_message
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import Runtime

from agent import Context, ScriptedChatModel, build_graph, run
from agent.cli import main
from agent.controller.subagents import build_registry
from agent.errors import ConfigError
from agent.graph.reflection import Reflection
from agent.graph.roles import Roles
from agent.graph.subagent import Subagent
from agent.models.scripted import tool_call
from agent.plan.steps import STEP_ID
from agent.plan.validation import parse_plan
from agent.reflection.rules import RULES
from agent.runs.runner import result_of, thread_config
from agent.state import CUT_KEY, MAX_GOAL_CHARS, PREVIEW_CHARS, bounded_message, bounded_messages
from agent.tools.filesystem import (
    MAX_ARG_DEPTH,
    arguments_problem,
    invalid_call_error,
    summarise_value,
    vfs_tools,
)
from agent.vfs.entries import Workspace, scratch_prefix
from tests.fakes import END, call_tool, ctx, models, prompt_values, sqlite_graph, step, writer


def values(graph, thread_id: str = "t") -> dict[str, Any]:
    return graph.get_state(thread_config(thread_id)).values


def model_calls(roles: dict[str, Any]) -> int:
    return sum(len(m.calls) for m in roles.values() if isinstance(m, ScriptedChatModel))


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def turns(*answers: Any) -> Callable[[list[BaseMessage], dict[str, Any]], Any]:
    """A subagent that gives ``answers`` one per call, then behaves like ``writer()``."""
    state = {"n": 0}
    fallback = writer()

    def respond(messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
        state["n"] += 1
        if state["n"] <= len(answers):
            return answers[state["n"] - 1]
        return fallback(messages, metadata)

    return respond


def two_turns(plan: list[dict[str, Any]], subagent: Any = None, **extra: Any) -> dict[str, Any]:
    """Scripted roles for a first turn and a second one on the same thread."""
    return models([{"steps": plan}] * 2, [END, END], subagent, **extra)


def tool_replies(roles: dict[str, Any]) -> list[ToolMessage]:
    """The tool messages of the subagent's last prompt: what it was told about its calls."""
    return [m for m in roles["default"].calls[-1] if isinstance(m, ToolMessage)]


def second_turn_succeeds(graph, thread_id: str = "t") -> bool:
    """The thread takes a new request and finishes it, read back from the checkpointer."""
    result = run(graph, "write it again", context=ctx(token_budget=10**8), thread_id=thread_id)
    return result["status"] == "success"


# ----------------------------------------------------------------------------- tool arguments

HOSTILE_VALUES: dict[str, Any] = {
    "nested 300 deep": nested(300),
    "nested 5000 deep": nested(5000),
    "a million items": list(range(1_000_000)),
    "100,000 keys": {f"k{i}": i for i in range(100_000)},
    "a 10 MB key": {"x" * 10_000_000: 1},
    "a 10 MB string": "y" * 10_000_000,
    "an integer beyond 64 bits": 10**30,
    "an object": object(),
}


@pytest.mark.parametrize("name", list(HOSTILE_VALUES))
def test_what_the_trajectory_keeps_of_any_argument_is_small_and_serialisable(name):
    summary = summarise_value({"path": "a.md", "content": HOSTILE_VALUES[name]})
    assert len(json.dumps(summary)) < 2_000
    kind, blob = JsonPlusSerializer().dumps_typed(summary)  # what the checkpointer writes
    assert kind == "msgpack" and len(blob) < 2_000


def test_a_summary_keeps_short_values_and_names_the_size_of_long_ones():
    summary = summarise_value({"path": "a.md", "content": "z" * 81, "n": 3, "flags": [True, None]})
    assert summary == {"path": "a.md", "content": "<81 bytes>", "n": 3, "flags": [True, None]}


@pytest.mark.parametrize("depth", [MAX_ARG_DEPTH, MAX_ARG_DEPTH + 1, 300, 5000])
def test_arguments_nested_deeper_than_the_limit_are_refused(depth):
    problem = arguments_problem({"content": nested(depth - 1)})  # the dict is one level
    if depth <= MAX_ARG_DEPTH:
        assert problem is None
    else:
        assert problem == f"they are nested more than {MAX_ARG_DEPTH} levels deep"


def test_a_deep_argument_is_refused_as_invalid_input_before_the_tool_runs():
    received: list[Any] = []

    def store(data: Any) -> str:
        received.append(data)
        return "stored"

    tools = {"store": StructuredTool.from_function(store, name="store", description="Store.")}
    text, ok = call_tool({"name": "store", "args": {"data": nested(300)}}, tools)
    assert not ok and received == []
    assert text == (
        f"invalid_input: the arguments of store are refused: they are nested more than "
        f"{MAX_ARG_DEPTH} levels deep"
    )
    assert call_tool({"name": "store", "args": {"data": nested(3)}}, tools)[1]


def test_a_tool_call_nested_300_deep_is_a_tool_error_and_the_thread_runs_on(tmp_path):
    deep = AIMessage(
        "",
        tool_calls=[
            {"name": "write_file", "args": {"path": "a.md", "content": nested(300)}, "id": "c1"}
        ],
    )
    roles = two_turns(
        [step("S1", "a.md")], turns(deep, tool_call("write_file", path="a.md", content="ok\n"))
    )
    graph, conn = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")  # no "Recursion limit reached"
    assert (result["status"], values(graph)["files"]["a.md"]["content"]) == ("success", "ok\n")
    refused = tool_replies(roles)[0]
    assert refused.tool_call_id == "c1"
    assert str(refused.content).startswith("invalid_input: the arguments of write_file are refused")
    event = next(e for e in values(graph)["trajectory"] if e["action"] == "write_file")
    assert event["ok"] is False and len(json.dumps(event["params"])) < 500
    sent_back = next(m for m in roles["default"].calls[1] if isinstance(m, AIMessage))
    assert len(json.dumps(sent_back.tool_calls[0]["args"])) < 500  # the model gets a summary

    reopened = build_graph(models=roles, checkpointer=SqliteSaver(conn), retry_policy=None)
    assert values(reopened)["status"] == "success"  # the checkpoint reads back
    assert second_turn_succeeds(reopened)


# ----------------------------------------------------------------------------- invalid JSON

BROKEN_ARGS = '{"path": "a.md", "content": "unterminated'


def _openai_answer_with_broken_arguments() -> AIMessage:
    """What langchain-openai makes of a reply whose tool arguments are not JSON."""
    raw = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_bad",
                "type": "function",
                "function": {"name": "write_file", "arguments": BROKEN_ARGS},
            },
            {
                "id": "call_ls",
                "type": "function",
                "function": {"name": "ls", "arguments": "{}"},
            },
        ],
    }
    message = _convert_dict_to_message(raw)
    assert isinstance(message, AIMessage)
    return message


def test_langchain_openai_puts_unparseable_arguments_in_invalid_tool_calls():
    message = _openai_answer_with_broken_arguments()
    assert [c["name"] for c in message.tool_calls] == ["ls"]
    assert [c["id"] for c in message.invalid_tool_calls] == ["call_bad"]


def test_invalid_json_arguments_are_answered_so_the_model_can_retry(tmp_path):
    answer = _openai_answer_with_broken_arguments()
    roles = two_turns(
        [step("S1", "a.md")], turns(answer, tool_call("write_file", path="a.md", content="ok\n"))
    )
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert result["status"] == "success"

    replies = {m.tool_call_id: str(m.content) for m in tool_replies(roles)}
    assert set(replies) >= {"call_bad", "call_ls"}  # every call made is answered
    assert replies["call_bad"].startswith(
        "invalid_input: the arguments of write_file are not valid JSON: Unterminated string"
    )
    events = [e for e in values(graph)["trajectory"] if e["action"] == "write_file"]
    assert events[0]["ok"] is False and events[0]["observation"] == replies["call_bad"][:200]
    assert events[0]["params"] == {"arguments": BROKEN_ARGS}  # short, so kept as it was sent
    assert second_turn_succeeds(graph)


def test_the_invalid_json_error_is_short_and_never_quotes_the_arguments():
    raw = '{"content": "' + "secret " * 1_000_000
    error = invalid_call_error({"name": "write_file", "args": raw, "id": "c", "error": raw})
    assert len(error) < 300 and "secret" not in error
    assert error.startswith("invalid_input: the arguments of write_file are not valid JSON:")
    nameless = invalid_call_error({"name": None, "args": None, "id": None, "error": None})
    assert nameless.startswith("invalid_input: the arguments of ? are not valid JSON:")


def test_a_model_that_only_sends_broken_calls_stops_after_its_tool_turns(tmp_path):
    broken = AIMessage(
        "",
        invalid_tool_calls=[
            {
                "name": "write_file",
                "args": "{",
                "id": "c",
                "error": None,
                "type": "invalid_tool_call",
            }
        ],
    )
    roles = models([step("S1", "a.md")], [END], lambda messages: broken)
    graph, _ = sqlite_graph(tmp_path, roles, max_tool_turns=3)
    result = run(graph, "goal", context=ctx(max_revisions=0), thread_id="t")
    assert result["status"] in ("awaiting_input", "success")  # a step that failed, no crash
    writes = [e for e in values(graph)["trajectory"] if e["action"] == "write_file"]
    per_round = Counter(e["round"] for e in writes)
    assert per_round and set(per_round.values()) == {3}  # bounded by the tool turns
    assert not any(e["ok"] for e in writes)


# ----------------------------------------------------------------------------- Context

BAD_CONTEXTS: dict[str, tuple[dict[str, Any], str]] = {
    "a count as text": ({"max_parallel": "4"}, "max_parallel must be an integer, got '4'"),
    "a depth as text": ({"max_reflection_depth": "x"}, "max_reflection_depth must be an integer"),
    "a bool as a count": ({"max_steps": True}, "max_steps must be an integer, got True"),
    "a float as a count": ({"max_revisions": 2.5}, "max_revisions must be an integer"),
    "nan seconds": ({"time_budget_s": float("nan")}, "time_budget_s must be a finite number"),
    "infinite seconds": ({"time_budget_s": float("inf")}, "time_budget_s must be a finite number"),
    "nan gain": ({"min_gain": float("nan")}, "min_gain must be a finite number"),
    "text as a gain": ({"min_gain": "0.1"}, "min_gain must be a finite number"),
    "text as a flag": ({"strict_end": "yes"}, "strict_end must be true or false"),
    "a number as a model": ({"planner_model": 3}, "planner_model must be a string or None"),
    "no default model": ({"model": None}, "model must be a string, got None"),
    "a list as a workload": ({"workload": ["qa"]}, "workload must be a string"),
    "a negative budget": ({"token_budget": -1}, "token_budget must be positive, got -1"),
    "zero seconds": ({"time_budget_s": 0}, "time_budget_s must be positive, got 0"),
}


@pytest.mark.parametrize("name", list(BAD_CONTEXTS))
def test_a_bad_context_value_is_named_and_the_depth_cap_still_answers(name):
    fields, message = BAD_CONTEXTS[name]
    context = Context(**fields)
    assert any(message in problem for problem in context.validate()), context.validate()
    assert 1 <= context.depth_cap() <= 10


def test_good_contexts_validate_and_ints_are_fine_seconds():
    assert Context().validate() == []
    assert Context(time_budget_s=60, min_gain=0, max_reflection_depth=None).validate() == []
    assert Context(max_reflection_depth=3).depth_cap() == 3


def test_every_problem_is_reported_at_once():
    problems = Context(max_parallel="4", time_budget_s=float("nan"), max_steps=0).validate()
    assert {p.split(" ", 1)[0] for p in problems} == {"time_budget_s", "max_steps", "max_parallel"}


@pytest.mark.parametrize("name", ["a count as text", "nan seconds", "a depth as text"])
def test_a_run_with_a_bad_context_fails_naming_the_field_then_a_good_one_succeeds(tmp_path, name):
    fields, message = BAD_CONTEXTS[name]
    roles = models([step("S1", "a.md")], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    with pytest.raises(ConfigError, match=re.escape(message)):  # run() says so before it runs
        run(graph, "goal", context=ctx(**fields), thread_id="t")
    # a server's run cannot raise to its caller: it fails, naming the field
    graph.invoke({"messages": [HumanMessage("goal")]}, thread_config("t"), context=ctx(**fields))
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == ("failed", "invalid_input")
    assert result["message"] and message in result["message"]
    assert message in values(graph)["decisions"][-1]["reason"]
    assert message in str(values(graph)["messages"][-1].content)
    assert model_calls(roles) == 0

    again = run(graph, "goal", context=ctx(), thread_id="t")
    assert (again["status"], again["stop_reason"]) == ("success", "end")


def _runtime(**fields: Any) -> Runtime[Context]:
    return Runtime(context=Context(**fields))


def test_reflection_and_subagents_refuse_a_bad_context_too():
    """A run resumed mid-round with another Context never reaches the planner's check."""
    roles = Roles(build_registry(), {"default": ScriptedChatModel([])})
    command = asyncio.run(
        Reflection(roles, RULES).node({"turn": {"started_at": 0.0}}, _runtime(time_budget_s="soon"))
    )
    assert command.goto == "finalize"
    update = command.update
    assert (update["status"], update["stop_reason"]) == ("failed", "invalid_input")
    assert "time_budget_s must be a finite number" in update["decisions"][-1]["reason"]

    task = {"step": step("S1", "a.md"), "readable": [], "round": 1}
    task |= {"token_allowance": 10, "time_allowance_s": 1.0}
    done = asyncio.run(Subagent(roles, 12).node(task, _runtime(max_revisions="2")))  # type: ignore[arg-type]
    event = done["trajectory"][0]
    assert (event["action"], event["error_class"]) == ("error", "invalid_input")
    assert "max_revisions must be an integer" in event["observation"]


def test_the_cli_still_exits_2_on_a_bad_configuration(tmp_path, capsys):
    db = str(tmp_path / "threads.sqlite")
    assert main(["demo", "--scenario", "happy", "--db", db, "--json"]) == 0
    thread_id = json.loads(capsys.readouterr().out)["thread_id"]
    assert main(["resume", thread_id, "--token-budget", "-5", "--db", db]) == 2
    assert "token_budget must be positive, got -5" in capsys.readouterr().err


# ----------------------------------------------------------------------------- a 10 MB goal

TEN_MB = 10_000_000


def _stored_bytes(conn: sqlite3.Connection, path: Path) -> int:
    """What the SQLite file holds once the write-ahead log is folded in."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.commit()
    return os.path.getsize(path)


def _wal_graph(tmp_path: Path, roles: dict[str, Any]):
    path = tmp_path / "threads.sqlite"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    saver = SqliteSaver(conn)
    saver.setup()
    return build_graph(models=roles, checkpointer=saver, retry_policy=None), conn, path


def test_a_rejected_ten_megabyte_goal_through_run_stores_only_its_placeholder(tmp_path):
    roles = models([step("S1", "a.md")], [END])
    graph, conn, path = _wal_graph(tmp_path, roles)
    result = run(graph, "x" * TEN_MB, context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", "invalid_input")
    stored = _stored_bytes(conn, path)
    print(f"\nrejected 10 MB goal via run(): {stored:,} bytes in SQLite")
    assert stored < 200_000  # run() cuts it before LangGraph stores the input

    state = values(graph)
    first = state["messages"][0]
    assert first.additional_kwargs[CUT_KEY] == TEN_MB
    assert len(str(first.content)) < PREVIEW_CHARS + 100
    assert not state.get("goal")
    assert "xxxxxxxxxx" not in state["decisions"][-1]["reason"]
    assert str(state["messages"][-1].content) == (
        f"The run failed (invalid_input): the goal is {TEN_MB} characters; "
        f"the limit is {MAX_GOAL_CHARS}"
    )
    assert model_calls(roles) == 0

    latest = conn.execute("SELECT max(length(checkpoint)) FROM checkpoints").fetchone()[0]
    assert latest < 3 * TEN_MB  # sanity: the copies above are all there is
    assert second_turn_succeeds(graph)


def test_a_rejected_ten_megabyte_goal_sent_raw_is_stored_twice_at_most(tmp_path):
    graph, conn, path = _wal_graph(tmp_path, models([step("S1", "a.md")], [END]))
    graph.invoke({"messages": [HumanMessage("x" * TEN_MB)]}, thread_config("t"), context=ctx())
    assert values(graph)["stop_reason"] == "invalid_input"
    stored = _stored_bytes(conn, path)
    # LangGraph saves the input twice before any node runs (the input checkpoint and the
    # write of its __start__ task); before the cut every checkpoint held a copy (50 MB)
    print(f"\nrejected raw 10 MB goal: {stored:,} bytes in SQLite ({stored / TEN_MB:.2f}x)")
    assert stored < 2.1 * TEN_MB


def test_a_pre_cut_goal_costs_nothing_beyond_its_placeholder(tmp_path):
    graph, conn, path = _wal_graph(tmp_path, models([step("S1", "a.md")], [END]))
    payload = {"messages": [bounded_message(HumanMessage("x" * TEN_MB))]}
    graph.invoke(payload, thread_config("t"), context=ctx())
    assert values(graph)["stop_reason"] == "invalid_input"
    assert _stored_bytes(conn, path) < 200_000


def test_a_ten_megabyte_goal_sent_as_the_goal_key_is_not_kept_in_state(tmp_path):
    graph, _ = sqlite_graph(tmp_path, models([step("S1", "a.md")], [END]))
    graph.invoke({"goal": "x" * TEN_MB}, thread_config("t"), context=ctx())
    state = values(graph)
    assert (state["status"], state["stop_reason"], state["goal"]) == ("failed", "invalid_input", "")
    assert all(len(str(m.content)) < 1_000 for m in state["messages"])
    assert second_turn_succeeds(graph)


def test_bounded_message_cuts_only_oversized_human_messages_and_keeps_their_id():
    long = HumanMessage("é" * (MAX_GOAL_CHARS + 1), id="m1", name="ann")
    cut = bounded_message(long)
    assert (cut.id, cut.name, cut.additional_kwargs[CUT_KEY]) == ("m1", "ann", MAX_GOAL_CHARS + 1)
    assert str(cut.content).startswith("é" * PREVIEW_CHARS + "\n[… cut:")
    assert bounded_message(cut) is cut  # idempotent
    at_limit = HumanMessage("x" * MAX_GOAL_CHARS)
    assert bounded_message(at_limit) is at_limit
    ai = AIMessage("z" * (MAX_GOAL_CHARS + 1))
    assert bounded_message(ai) is ai
    image = HumanMessage([{"type": "image_url", "image_url": {"url": "data:," + "A" * 30_000}}])
    assert CUT_KEY in bounded_message(image).additional_kwargs


def test_the_messages_reducer_still_adds_and_replaces_by_id():
    merged = bounded_messages([HumanMessage("hi", id="a")], [AIMessage("yo", id="b")])
    assert [(m.id, m.content) for m in merged] == [("a", "hi"), ("b", "yo")]
    replaced = bounded_messages(merged, [HumanMessage("x" * (MAX_GOAL_CHARS + 5), id="a")])
    assert [m.id for m in replaced] == ["a", "b"]
    assert replaced[0].additional_kwargs[CUT_KEY] == MAX_GOAL_CHARS + 5


# ----------------------------------------------------------------------------- step ids

ACTIONS = {"writer", "coder", "researcher", "critic"}
UNSAFE_IDS = ["S1/x", "..", ".", "a\nb", "a b", "", "x" * 41, "../S2", "S1\x00", "é1", "-x", "_x"]


@pytest.mark.parametrize("bad", UNSAFE_IDS, ids=[repr(i) for i in UNSAFE_IDS])
def test_an_unsafe_step_id_is_rejected_with_a_message_naming_it(bad):
    parsed, errors = parse_plan(
        {"steps": [step("S1", "a.md"), step(bad, "b.md")]}, actions=ACTIONS, max_steps=50
    )
    assert parsed is None
    shown = repr(bad) if len(bad) <= 60 else repr(bad[:60]) + "…"
    assert any(f"step_id {shown} is not a short safe name" in e for e in errors), errors


@pytest.mark.parametrize("good", ["S1", "step-2", "a.b_c", "X" * 40, "1", "S1..x"])
def test_short_safe_step_ids_are_accepted(good):
    parsed, errors = parse_plan({"steps": [step(good, "a.md")]}, actions=ACTIONS, max_steps=50)
    assert errors == [] and parsed is not None


def test_s1_and_s1_slash_x_can_no_longer_share_scratch_space():
    assert scratch_prefix("S1/x").startswith(scratch_prefix("S1"))  # why it matters
    parsed, errors = parse_plan(
        {"steps": [step("S1", "a.md"), step("S1/x", "b.md")]}, actions=ACTIONS, max_steps=50
    )
    assert parsed is None and any("'S1/x'" in e for e in errors)


@given(st.from_regex(STEP_ID, fullmatch=True), st.from_regex(STEP_ID, fullmatch=True))
def test_the_scratch_folders_of_two_valid_step_ids_never_overlap(a, b):
    if a != b:
        assert not scratch_prefix(a).startswith(scratch_prefix(b))
        workspace = Workspace({}, writable=["out.md"], scratch=scratch_prefix(a))
        text, ok = call_tool(
            {"name": "write_file", "args": {"path": f"{scratch_prefix(b)}n.md", "content": "x"}},
            {t.name: t for t in vfs_tools(workspace)},
        )
        assert not ok and text.startswith("permission_denied")


def test_a_plan_with_an_unsafe_step_id_is_retried_with_the_id_named_then_runs(tmp_path):
    bad = {"steps": [step("S1", "a.md"), step("S1/x", "b.md", deps=("S1",))]}
    good = {"steps": [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]}
    roles = models([bad, good], [END], writer())
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    retry_prompt = str(roles["planner"].calls[1][-1].content)
    assert prompt_values("planner_retry", retry_prompt)
    assert "'S1/x' is not a short safe name" in retry_prompt
    assert set(values(graph)["files"]) == {"a.md", "b.md"}


# ----------------------------------------------------------------------------- a failing judge


def test_a_judge_without_permission_fails_the_run_and_keeps_the_draft(tmp_path):
    forbidden = httpx.Response(403, request=httpx.Request("POST", "https://api.example.test/v1"))

    def judge(messages: list[BaseMessage]) -> Any:
        return openai.PermissionDeniedError("no access", response=forbidden, body=None)

    plan = [step("S1", "a.md", check="The file names its subject")]
    roles = models(plan, [END], judge=ScriptedChatModel(responder=judge))
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    kept = values(graph)["files"]["a.md"]
    assert (kept["content"], kept["status"], kept["stop_reason"]) == (
        "content of a.md\n",
        "failed",
        "critic_error",
    )
    errors = [e for e in values(graph)["trajectory"] if e["action"] == "error"]
    assert errors[0]["error_class"] == "permission_denied"


def test_an_eval_task_whose_critic_crashes_reports_the_critics_error():
    from agent.eval import run_reflection_eval
    from tests.integration.test_eval import INC, write

    model = ScriptedChatModel({"inc": write("inc.py", "def inc(x):\n    return x\n") * 3})
    critic = ScriptedChatModel([RuntimeError("the critic is down")] * 3)
    task = run_reflection_eval([INC], model, critic=critic, workers=1)["tasks"][0]
    assert (task["error"], task["error_class"]) == ("RuntimeError: the critic is down", "unknown")
