"""The ``execute`` scenario through the graph: a coder runs its tests before handing in,
fixes what they report, and an approval rule holds the exact command for a human."""

from __future__ import annotations

import pytest

from agent import resume, run
from agent.models.scenarios import RUN_TESTS, SCENARIO_CONTEXT, SCENARIO_GOALS
from agent.sandbox import SandboxUnavailable, isolation_level
from agent.tools.command import EXECUTE
from tests.fakes import ctx, sqlite_graph

try:
    LEVEL = isolation_level()
except SandboxUnavailable as exc:
    pytest.skip(f"no sandbox: {exc}", allow_module_level=True)

GOAL = SCENARIO_GOALS["execute"]


def scenario(**overrides):
    return ctx(model="scripted:execute", **SCENARIO_CONTEXT["execute"], **overrides)


def executed(graph, thread="t"):
    state = graph.get_state({"configurable": {"thread_id": thread}}).values
    return [e for e in state["trajectory"] if e.get("action") == EXECUTE], state


def test_the_coder_runs_its_tests_fixes_them_and_hands_in_a_passing_module(tmp_path):
    graph, _ = sqlite_graph(tmp_path, {})
    result = run(graph, GOAL, thread_id="t", context=scenario())
    assert result["status"] == "success"
    calls, state = executed(graph)
    assert [c["params"]["command"] for c in calls] == [RUN_TESTS, RUN_TESTS]
    first, second = (c["observation"] for c in calls)
    assert first.startswith(f"exit code 1 [sandbox: {LEVEL}]")
    assert second.startswith(f"exit code 0 [sandbox: {LEVEL}]")
    assert "a + b" in state["files"]["calc.py"]["content"]


def test_an_approval_rule_holds_the_exact_command_until_a_human_approves(tmp_path):
    graph, _ = sqlite_graph(tmp_path, {})
    paused = run(graph, GOAL, thread_id="t", context=scenario(interrupt_on=EXECUTE))
    assert paused["status"] == "awaiting_input"
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values
    pending = [a for a in state["approvals"].values() if a["status"] == "pending"]
    assert [(a["tool"], a["args"]) for a in pending] == [(EXECUTE, {"command": RUN_TESTS})]
    assert executed(graph)[0] == []  # nothing ran before the human decided
    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    if result["status"] == "awaiting_input":  # the second run of the same line is its own call
        result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "success"
    # the step ran again after each decision, its approved calls again with it
    ran = [c["observation"][: len("exit code 0")] for c in executed(graph)[0]]
    assert ran[-2:] == ["exit code 1", "exit code 0"]


def test_execute_roles_empty_gives_no_role_the_tool(tmp_path):
    graph, _ = sqlite_graph(tmp_path, {})
    run(graph, GOAL, thread_id="t", context=scenario(execute_roles=""))
    calls, _ = executed(graph)
    assert calls and all(c["observation"].startswith("invalid_input: unknown tool") for c in calls)
