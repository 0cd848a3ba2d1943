"""A new message on a paused thread, taken in without a graph: a choice's label acts as that
choice; other words are an answer for the planner."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from agent.graph.turn import take_in
from agent.reflection.answers import choices
from agent.tools.approvals import approval_payload
from tests.fakes import ctx

PLAN = {"version": 1, "steps": [{"step_id": "S1"}]}


def paused(suggested, text, **extra):
    human = HumanMessage(text, id="h2")
    escalation = {"question": "Which year?", "suggested_responses": choices(suggested), **extra}
    return {
        "plan": PLAN,
        "escalation": escalation,
        "status": "awaiting_input",
        "turn": {"human_id": "h1", "started_at": 1.0},
        "step": 3,
        "messages": [HumanMessage("goal", id="h1"), AIMessage("Which year?"), human],
    }


def test_a_stop_label_finishes_failed_and_the_message_is_taken_in():
    intake = take_in(paused(["2024", "stop here"], " Stop HERE "), ctx())
    assert intake.next == "finalize"
    assert (intake.update["status"], intake.update["stop_reason"]) == ("failed", "stopped_by_human")
    assert intake.update["escalation"] is None and intake.update["turn"]["human_id"] == "h2"


def test_accept_is_always_offered_and_finishes_successfully():
    intake = take_in(paused(["2024"], "accept"), ctx())
    assert intake.next == "finalize" and intake.update["stop_reason"] == "accepted_by_human"
    assert intake.update["turn"]["human_id"] == "h2"


def test_continue_after_a_budget_stop_dispatches_with_a_fresh_turn_and_no_replan():
    state = paused(["continue with a higher budget", "stop here"], "Continue")
    intake = take_in(state, ctx(), now=50.0)
    assert intake.next == "dispatch" and "plan_request" not in intake.update
    turn = intake.update["turn"]
    assert turn["human_id"] == "h2" and turn["start_step"] == 3 and turn["budget"] == {}
    assert intake.update["status"] == "running" and intake.update["reflection_depth"] == 0


def test_continue_where_it_is_not_offered_is_an_answer():
    intake = take_in(paused(["2024"], "continue"), ctx())
    assert intake.next == "plan" and intake.update["plan_request"]["answer"] == "continue"


def test_words_that_only_contain_a_label_are_an_answer_as_typed():
    intake = take_in(paused(["2024", "stop here"], "stop here and use 2023"), ctx())
    assert intake.next == "plan"
    assert intake.update["plan_request"]["answer"] == "stop here and use 2023"


def test_an_approval_label_decides_the_pending_calls():
    request = {
        "id": "ap-1",
        "tool": "send_email",
        "args": {"to": "a@example.com"},
        "status": "pending",
        "plan_version": 1,
        "step_id": "S1",
        "asked_at": 1,
    }
    payload = approval_payload([request])
    state = paused([], "Approve all") | {"escalation": payload, "approvals": {"ap-1": request}}
    intake = take_in(state, ctx())
    assert intake.next == "dispatch" and intake.update["escalation"] is None
    assert intake.update["approvals"]["ap-1"]["decision"] == {"type": "approve"}
    assert intake.update["turn"]["human_id"] == "h2"
