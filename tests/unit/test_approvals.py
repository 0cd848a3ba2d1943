"""agent.tools.approvals: the config, the approval's identity, and reading decisions."""

from __future__ import annotations

import pytest

from agent.errors import ConfigError
from agent.tools.approvals import (
    approval_id,
    approval_payload,
    decided,
    decisions_problem,
    interrupt_config,
    pending_requests,
    read_decisions,
)

STEP = {"step_id": "S1", "action": "coder", "instructions": "Send it.", "expected_output": "a.md"}


def request(rid="ap-1", tool="send_email", allowed=("approve", "edit", "reject"), **extra):
    return {
        "id": rid,
        "kind": "approval",
        "status": "pending",
        "tool": tool,
        "args": {"to": "a@x"},
        "step_id": "S1",
        "allowed_decisions": list(allowed),
        **extra,
    }


def test_interrupt_on_is_normalised_and_false_entries_dropped():
    config = interrupt_config({"a": True, "b": False, "c": {"allowed_decisions": ["approve"]}})
    assert config == {
        "a": {"allowed_decisions": ["approve", "edit", "reject"], "description": None},
        "c": {"allowed_decisions": ["approve"], "description": None},
    }


@pytest.mark.parametrize(
    "bad",
    [
        ["send_email"],
        {"": True},
        {"a": "yes"},
        {"a": {"allowed": []}},
        {"a": {"allowed_decisions": ["maybe"]}},
    ],
)
def test_a_malformed_interrupt_on_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        interrupt_config(bad)


def test_the_approval_id_changes_with_the_arguments_the_step_and_the_plan_version():
    base = approval_id(STEP, 1, 0, "send_email", {"to": "a@x", "cc": "b@x"})
    assert base == approval_id(STEP, 1, 0, "send_email", {"cc": "b@x", "to": "a@x"})  # key order
    assert base != approval_id(STEP, 1, 0, "send_email", {"to": "a@x", "cc": "c@x"})
    assert base != approval_id(STEP, 2, 0, "send_email", {"to": "a@x", "cc": "b@x"})
    assert base != approval_id(STEP, 1, 1, "send_email", {"to": "a@x", "cc": "b@x"})
    changed = {**STEP, "instructions": "Send it to everyone."}
    assert base != approval_id(changed, 1, 0, "send_email", {"to": "a@x", "cc": "b@x"})


def test_the_payload_has_langchains_hitl_shape():
    payload = approval_payload([request(), request("ap-2", "migrate", ("approve", "reject"))])
    assert [a["name"] for a in payload["action_requests"]] == ["send_email", "migrate"]
    assert payload["review_configs"][1] == {
        "action_name": "migrate",
        "allowed_decisions": ["approve", "reject"],
    }
    assert payload["kind"] == "approval" and payload["status"] == "awaiting_input"


@pytest.mark.parametrize(
    "value",
    [
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        "approve",
        {"type": "approve"},
        [{"type": "accept"}],
        {"ap-1": {"type": "approve"}, "ap-2": "approve"},
    ],
)
def test_every_answer_shape_approves_both(value):
    requests = [request(), request("ap-2")]
    assert read_decisions(value, requests) == {
        "ap-1": {"type": "approve"},
        "ap-2": {"type": "approve"},
    }


def test_edit_and_reject_carry_their_arguments_and_message():
    requests = [request(), request("ap-2")]
    value = {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b@x"}}},
            {"type": "reject", "message": "no"},
        ]
    }
    assert read_decisions(value, requests) == {
        "ap-1": {"type": "edit", "args": {"to": "b@x"}},
        "ap-2": {"type": "reject", "message": "no"},
    }
    chat_ui = [{"type": "edit", "args": {"action": "send_email", "args": {"to": "c@x"}}}]
    assert read_decisions(chat_ui, [request()]) == {"ap-1": {"type": "edit", "args": {"to": "c@x"}}}
    assert read_decisions([{"type": "response", "args": "later"}], [request()]) == {
        "ap-1": {"type": "reject", "message": "later"}
    }


@pytest.mark.parametrize(
    "value",
    [
        {"decisions": [{"type": "approve"}]},  # one decision short
        {"type": "maybe"},
        {"type": "edit", "edited_action": {"name": "other_tool", "args": {}}},  # another tool
        {"type": "edit", "edited_action": {"name": "send_email"}},  # no arguments
        {"decisions": [{"type": "edit", "edited_action": {"args": {}}}, {"type": "edit"}]},
        42,
        None,
    ],
)
def test_answers_that_do_not_decide_every_request_validly_decide_nothing(value):
    requests = [request(), request("ap-2", allowed=("approve", "reject"))]
    assert read_decisions(value, requests) is None
    assert "decisions" in (decisions_problem(value, requests) or "")


def test_a_decision_the_tool_does_not_allow_is_refused():
    assert read_decisions("reject", [request(allowed=("approve",))]) is None


def test_decided_records_the_decision_and_pending_lists_only_the_waiting():
    requests = [request(asked_at=2), request("ap-2", asked_at=1)]
    update = decided(requests, {"ap-1": {"type": "approve"}})
    assert update == {"ap-1": {**requests[0], "status": "decided", "decision": {"type": "approve"}}}
    assert [r["id"] for r in pending_requests({**{r["id"]: r for r in requests}, **update})] == [
        "ap-2"
    ]
    assert pending_requests(None) == [] and pending_requests({"x": None}) == []
