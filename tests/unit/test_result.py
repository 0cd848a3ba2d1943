"""A thread paused inside a subagent's own graph reads as a paused run
(``with_subagent_question``): the interrupt's value is the question."""

from __future__ import annotations

from langgraph.types import Interrupt

from agent.graph.result import SUBAGENT_KIND, build_result, with_subagent_question

RUNNING = {"status": "running", "stop_reason": None}


def test_a_pending_interrupt_of_a_running_thread_is_its_question():
    values = with_subagent_question(RUNNING, [Interrupt({"question": "Which region?"}, id="i1")])
    result = build_result(values, "t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "subagent_asked")
    assert result["escalation"]["kind"] == SUBAGENT_KIND
    assert result["escalation"]["interrupt_id"] == "i1"
    assert result["message"] == "Which region?"


def test_any_value_becomes_one_line_of_text():
    request = {"action_requests": [{"name": "send", "args": {"to": "a\x1b[31m"}}]}
    plain = with_subagent_question(RUNNING, [Interrupt("Go\non?", id="a")])
    shaped = with_subagent_question(RUNNING, [Interrupt(request, id="b")])
    assert plain["escalation"]["question"] == "Go on?"
    assert shaped["escalation"]["question"].startswith('{"action_requests"')
    assert "\x1b" not in shaped["escalation"]["question"]
    assert shaped["escalation"]["value"] == request  # the graph's payload, whole


def test_our_own_pauses_and_threads_without_an_interrupt_are_left_as_they_are():
    escalated = {"status": "awaiting_input", "stop_reason": "depth_cap", "escalation": {"q": 1}}
    assert with_subagent_question(escalated, [Interrupt("x", id="a")]) == escalated
    assert with_subagent_question(RUNNING, []) == RUNNING
