"""The reflection rules as pure functions, in design.md's order, without a graph."""

from __future__ import annotations

import time

import pytest

from agent.context import Context
from agent.reflection.budget import budget_left
from agent.reflection.model_view import reflection_input
from agent.reflection.rules import Decision, decide_by_rule, failed_round, validate_decision
from agent.reflection.situation import situation_from_state
from agent.vfs.entries import file_entry
from tests.fakes import situation, step


def done(path, step_no=1, **extra):
    return file_entry("x", step=step_no, status="done", step_id="S1", **extra)


def failed(path, step_no=1, defect="d1"):
    return file_entry("x", step=step_no, status="failed", step_id="S1", defect=defect)


def test_progress_continues_by_rule_without_depth_when_every_new_artifact_passed():
    s = situation({"a.md": done("a.md")}, dispatched=["S1"], depth=3)
    decision = decide_by_rule(s)
    assert decision.decision == "continue" and decision.counts_depth is False


def test_progress_rule_steps_aside_when_nothing_is_ready():
    files = {"a.md": done("a.md"), "b.md": done("b.md")}
    assert decide_by_rule(situation(files, dispatched=["S2"])) is None


def test_progress_rule_steps_aside_for_an_open_critique():
    files = {
        "a.md": done("a.md"),
        "work/S0/critique.json": file_entry("{}", step=1, kind="critique"),
    }
    assert decide_by_rule(situation(files, dispatched=["S1"])) is None


SQL_CHECK = {"kind": "sql", "db": "chinook", "expect_rows": 3}
RUBRIC = {"kind": "rubric", "criteria": ["covers the goal"]}


def test_a_finished_plan_of_the_files_the_goal_names_ends_by_rule():
    # on the 1.5B a reflection shown the one finished query replanned it until the depth cap
    files = {"top.sql": done("top.sql")}
    steps = [step("S1", "top.sql", check=SQL_CHECK)]
    goal = "Write top.sql: the three genres with the most tracks."
    decision = decide_by_rule(situation(files, steps=steps, goal=goal, depth=1))
    assert (
        decision.decision == "end" and decision.by == "rule" and "top.sql" in decision.final_answer
    )


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "non_empty"},
        {"kind": "exists"},
        {"kind": "syntax"},
        {"kind": "json_schema", "schema": {}},
        {"kind": "all", "checks": [{"kind": "non_empty"}, {"kind": "syntax"}]},
    ],
)
def test_an_artifact_proven_only_to_be_there_never_ends_by_rule(check):
    # "hello" passes non_empty: whether report.md is done is reflection's model's to say
    files = {"report.md": done("report.md")}
    steps = [step("S1", "report.md", check=check)]
    s = situation(files, steps=steps, goal="Write report.md for executives.", depth=1)
    assert decide_by_rule(s) is None


def test_the_finished_rule_steps_aside_when_the_goal_may_want_more():
    files = {"a.md": done("a.md"), "b.md": done("b.md")}
    judged = [step("S1", "a.md", check=RUBRIC), step("S2", "b.md", deps=("S1",), check=RUBRIC)]
    named_missing = situation(
        files, steps=judged, goal="Write a.md, b.md and c.md."
    )  # no c.md step
    no_name = situation(files, steps=judged)  # "goal" names no file: the model decides
    rolling = situation(files, steps=judged, goal="Write a.md and b.md.", planning="rolling")
    failing = situation(
        {**files, "b.md": failed("b.md")}, steps=judged, goal="Write a.md and b.md."
    )
    critique = {"work/S0/critique.json": file_entry("{}", step=1, kind="critique")}
    open_critique = situation({**files, **critique}, steps=judged, goal="Write a.md and b.md.")
    for s in (named_missing, no_name, rolling, failing, open_critique):
        assert decide_by_rule(s) is None or decide_by_rule(s).decision != "end"
    given = {**files, "data.csv": file_entry("x", step=0)}  # a named file the user gave
    assert (
        decide_by_rule(
            situation(given, steps=judged, goal="Read data.csv; write a.md and b.md.")
        ).decision
        == "end"
    )


def test_depth_cap_forces_escalate():
    decision = decide_by_rule(situation({}, depth=4, cap=4))
    assert decision.decision == "escalate" and decision.forced
    assert decision.stop_reason == "depth_cap"


def test_budget_rule_escalates_with_budget_exhausted_status():
    decision = decide_by_rule(situation({}, exhausted="token_budget"))
    assert decision.decision == "escalate" and decision.status == "budget_exhausted"
    assert decision.stop_reason == "token_budget"


def test_budgets_stay_hard_limits_even_while_steps_pass():
    s = situation({"a.md": done("a.md")}, dispatched=["S1"], exhausted="step_budget")
    assert decide_by_rule(s).stop_reason == "step_budget"


def test_repeated_defect_in_consecutive_reflections_escalates():
    events = [{"round": 1, "step_id": "S1", "action": "result", "passed": False, "defect": "d1"}]
    s = situation({"a.md": failed("a.md")}, events=events, previous_defects=["d1"])
    assert decide_by_rule(s).stop_reason == "repeated_defect"


def test_a_step_failing_twice_escalates():
    events = [
        {"round": 1, "step_id": "S1", "action": "result", "passed": False, "defect": "d1"},
        {"round": 2, "step_id": "S1", "action": "result", "passed": False, "defect": "d2"},
    ]
    s = situation({"a.md": failed("a.md", 2, "d2")}, events=events, step_no=2)
    assert decide_by_rule(s).stop_reason == "subagent_failed_twice"


def test_a_permission_error_fails_the_run():
    events = [{"round": 1, "step_id": "S1", "action": "error", "error_class": "permission_denied"}]
    decision = decide_by_rule(situation({}, events=events))
    assert decision.decision == "fail" and decision.stop_reason == "permission_denied"


def test_no_rule_means_ask_the_model():
    assert decide_by_rule(situation({"a.md": failed("a.md")})) is None


def test_end_without_a_done_file_becomes_replan_or_continue():
    s = situation({})
    decision = validate_decision(Decision("end", "looks done", by="model"), s)
    assert decision.decision == "continue" and decision.forced  # S1 is ready
    only_b_missing = situation({"a.md": done("a.md")}, steps=[step("S1", "a.md")])
    ok = validate_decision(Decision("end", "done", by="model"), only_b_missing)
    assert ok.decision == "end" and ok.final_answer


def test_strict_end_needs_every_expected_artifact():
    s = situation({"a.md": done("a.md"), "b.md": failed("b.md")})
    assert validate_decision(Decision("end", "", by="model"), s).decision == "continue"
    lenient = situation({"a.md": done("a.md"), "b.md": failed("b.md")}, strict_end=False)
    assert validate_decision(Decision("end", "", by="model"), lenient).decision == "end"


def test_continue_with_every_artifact_done_is_an_end():
    files = {"a.md": done("a.md"), "b.md": done("b.md")}
    decision = validate_decision(Decision("continue", "", by="model"), situation(files))
    assert decision.decision == "end" and decision.forced and decision.final_answer


def test_continue_with_nothing_ready_but_work_left_becomes_replan():
    files = {"a.md": done("a.md")}
    steps = [step("S1", "a.md"), step("S2", "b.md", deps=("S9",))]  # S2 can never be ready
    for strict in (True, False):  # lenient: an end would stand, but S2 is not done
        s = situation(files, steps=steps, strict_end=strict)
        decision = validate_decision(Decision("continue", "", by="model"), s)
        assert decision.decision == "replan" and decision.forced


def test_a_malformed_answer_is_never_an_end():
    assert failed_round(situation({}), "bad json").decision == "continue"
    files = {"a.md": done("a.md"), "b.md": done("b.md")}
    assert failed_round(situation(files), "bad json").decision == "replan"


def test_reflection_input_carries_summaries_not_contents():
    files = {"a.md": file_entry("TOP-SECRET " * 100, step=1, status="done")}
    view = reflection_input(situation(files))
    assert "TOP-SECRET" not in repr(view)
    assert view["files"]["a.md"]["bytes"] == 1100
    assert view["diff"]["expected_not_produced"] == ["b.md"]


def test_budget_left_names_the_spent_budget():
    turn = {"started_at": time.time(), "start_step": 2, "start_tokens": 100}
    common = {"token_budget": 1000, "time_budget_s": 60, "max_steps": 5}

    def spent(**kw):
        return budget_left(turn=turn, **common, **kw).exhausted

    assert spent(tokens_used=1100, step=3) == "token_budget"
    assert spent(tokens_used=200, step=7) == "step_budget"
    assert spent(tokens_used=200, step=3, now=turn["started_at"] + 61) == "time_budget"
    assert spent(tokens_used=200, step=3) is None


def test_dispatch_allowances_come_from_the_same_budget():
    turn = {"started_at": 100.0, "start_step": 0, "start_tokens": 0}
    left = budget_left(
        turn=turn,
        tokens_used=400,
        step=1,
        token_budget=1000,
        time_budget_s=60,
        max_steps=5,
        now=130.0,
    )
    assert (left.tokens, left.seconds, left.steps) == (600, 30.0, 4)
    assert left.token_allowance(4) == 150 and left.time_allowance() == 30.0
    spent = budget_left(
        turn=turn,
        tokens_used=5000,
        step=1,
        token_budget=1000,
        time_budget_s=60,
        max_steps=5,
        now=500.0,
    )
    assert spent.token_allowance(4) == 1 and spent.time_allowance() == 1.0


def test_the_situation_is_built_once_with_the_real_depth_cap_and_budget():
    state = {
        "goal": "g",
        "plan": {"version": 1, "steps": [step("S1", "a.md")]},
        "turn": {"started_at": 100.0, "start_step": 0, "start_tokens": 0},
        "usage": {"planner": {"total_tokens": 2000}},
        "step": 1,
    }
    s = situation_from_state(state, Context(workload="coding", token_budget=1000), now=101.0)
    assert s.cap == 5 and s.exhausted == "token_budget"
    assert [st["step_id"] for st in s.ready] == ["S1"]


def test_an_end_while_a_file_the_goal_asks_for_has_no_step_is_overridden():
    files = {"a.md": done("a.md")}
    s = situation(files, steps=[step("S1", "a.md", check=RUBRIC)], goal="Write a.md and b.md.")
    decision = validate_decision(Decision("end", "looks done", by="model"), s)
    assert decision.decision != "end" and "b.md" in decision.reason
    given = situation(
        {**files, "b.md": done("b.md")},
        steps=[step("S1", "a.md", check=RUBRIC)],
        goal="Write a.md and b.md.",
    )  # b.md is already in the thread: nothing is missing
    assert validate_decision(Decision("end", "done", by="model"), given).decision == "end"
