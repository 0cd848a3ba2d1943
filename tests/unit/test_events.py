"""What each ``stream_mode="custom"`` progress event holds, and that outside a run it is a
no-op."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import add_messages

from agent.events import (
    MAX_PROGRESS_CHARS,
    MAX_PROGRESS_MESSAGES,
    PROGRESS_NAME,
    check_event,
    decision_event,
    emit,
    is_progress,
    plan_event,
    progress_message,
    step_event,
    told,
)
from tests.fakes import step


def test_a_plan_event_lists_each_step_with_its_artifact():
    event = plan_event({"version": 2, "steps": [step("S1", "a.md")]})
    assert event == {
        "event": "plan",
        "version": 2,
        "steps": [{"step_id": "S1", "action": "writer", "expected_output": "a.md"}],
    }


def test_a_step_event_names_the_step_its_subagent_and_round():
    event = step_event(step("S1", "a.md", action="coder"), 3)
    assert event == {
        "event": "step_started",
        "step_id": "S1",
        "action": "coder",
        "expected_output": "a.md",
        "round": 3,
    }


def test_a_check_event_carries_the_verdict_and_one_line_of_evidence():
    report = {"kind": "pytest", "passed": False, "evidence": "1 failed:\n  assert 1 == 2" * 50}
    event = check_event("S1", 1, report)
    assert (event["event"], event["step_id"], event["revision"]) == ("check", "S1", 1)
    assert event["passed"] is False and event["kind"] == "pytest"
    assert "\n" not in event["evidence"] and len(event["evidence"]) <= 200


def test_a_decision_event_is_the_logged_decision_without_the_final_answer():
    entry = {"round": 2, "decision": "end", "by": "model", "reason": "ok", "depth": 1}
    event = decision_event(entry | {"final_answer": "long text"})
    assert event == {"event": "decision", "forced": False, **entry}


def test_emit_outside_a_run_does_nothing():
    emit({"event": "check"})  # no run, no stream: must not raise


# ---------------------------------------------------------------- progress in the chat


def _decision(**extra):
    entry = {"round": 3, "decision": "replan", "by": "model", "reason": "sharpen S2", "depth": 1}
    return decision_event(entry | extra)


def test_a_progress_message_is_tagged_short_and_keeps_the_id_it_was_given():
    report = {"kind": "pytest", "passed": False, "evidence": "E   assert 1 == 2\n" * 500}
    message = progress_message(check_event("S1", 2, report), "progress-check-4-S1-1")
    assert message.id == "progress-check-4-S1-1" and message.name == PROGRESS_NAME
    assert is_progress(message) and is_progress(message.model_dump())
    assert len(message.content) <= MAX_PROGRESS_CHARS
    assert "S1" in message.content and "revision 2" in message.content
    assert "failed" in message.content and "assert 1 == 2" in message.content


def test_an_answer_or_a_question_is_not_progress():
    assert not is_progress(AIMessage("Done: report.md"))
    assert not is_progress({"type": "ai", "content": "x", "additional_kwargs": {}})
    assert not is_progress({"type": "ai", "additional_kwargs": {"deepreflect": "progress"}})
    assert not is_progress(HumanMessage("progress", name=PROGRESS_NAME))


def test_a_plan_message_lists_a_bounded_number_of_steps():
    steps = [
        {"step_id": f"S{i}", "action": "writer", "expected_output": f"part{i}.md"}
        for i in range(40)
    ]
    text = progress_message(plan_event({"version": 3, "steps": steps}), "p").content
    assert "Plan v3" in text and "40 step(s)" in text
    assert "part0.md" in text and "part39.md" not in text and "more" in text
    assert len(text) <= MAX_PROGRESS_CHARS


def test_a_decision_message_names_the_decision_and_its_reason():
    text = progress_message(_decision(), "d").content
    assert "round 3" in text and "replan" in text and "sharpen S2" in text and "depth 1" in text


def test_an_escalation_decision_does_not_repeat_the_question_its_pause_asks():
    question = "Who is the report for: engineers or executives?"
    event = _decision(decision="escalate", reason=question, stop_reason="model_escalated")
    text = progress_message(event, "d").content
    assert "escalate" in text and "model_escalated" in text and question not in text


def test_told_keeps_only_the_newest_progress_and_never_removes_the_conversation():
    old = [progress_message(_decision(round=i), f"progress-decision-{i}") for i in range(30)]
    said = [HumanMessage("goal", id="h"), AIMessage("Which year?", id="escalation-1-x")]
    current = [said[0], *old[:15], said[1], *old[15:]]
    new = progress_message(_decision(round=99), "progress-decision-99")
    write = told(current, [new])
    removed = [m.id for m in write if isinstance(m, RemoveMessage)]
    assert removed == [f"progress-decision-{i}" for i in range(11)]  # 30 + 1 - 20
    assert write[-1] is new and "h" not in removed and "escalation-1-x" not in removed
    merged = add_messages(current, write)
    assert sum(is_progress(m) for m in merged) == MAX_PROGRESS_MESSAGES
    assert [m.id for m in merged if not is_progress(m)] == ["h", "escalation-1-x"]


def test_told_again_with_the_same_id_replaces_and_removes_nothing():
    first = progress_message(_decision(), "progress-decision-1")
    write = told([first], [progress_message(_decision(), "progress-decision-1")])
    assert not [m for m in write if isinstance(m, RemoveMessage)]
    assert len(add_messages([first], write)) == 1
