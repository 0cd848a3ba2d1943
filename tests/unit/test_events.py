"""What each ``stream_mode="custom"`` progress event holds, and that outside a run it is a
no-op."""

from __future__ import annotations

from agent.events import check_event, decision_event, emit, plan_event, step_event
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
