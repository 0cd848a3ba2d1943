"""Scenario tests: the compiled graph end to end on scripted models and a real SQLite file."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from agent import Context, ScriptedChatModel, resume, run
from agent.errors import ConfigError
from agent.events import is_progress
from agent.models.scripted import tool_call
from agent.prompts import render
from agent.runs.runner import result_of, thread_config
from tests.fakes import END, chain, ctx, models, prompt_values, sqlite_graph, step, writer

CONTAINS_OK = {"kind": "contains", "all": ["OK"]}


def reflection_calls(roles) -> int:
    return len(roles["reflection"].calls)


def test_run_ends_with_success_and_a_result(tmp_path):
    roles = models([step("S1", "a.md"), step("S2", "b.md", deps=("S1",))], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "write two files", context=ctx(), thread_id="t1")
    assert result["status"] == "success" and result["stop_reason"] == "end"
    assert result["converged"] is True
    assert set(result["artifacts"]) == {"a.md", "b.md"}
    values = graph.get_state(thread_config("t1")).values
    # the answer, then the main artifact (the plan's sink, b.md) shown whole in the chat
    final = values["messages"][-1].content
    assert final.startswith(END["final_answer"]) and final.endswith(
        "```markdown\ncontent of b.md\n```"
    )
    assert "**b.md** (done, 16 bytes)" in final
    assert values["result"]["status"] == "success"
    assert [d["by"] for d in values["decisions"]] == ["rule", "model"]


def test_parallel_steps_fan_out_up_to_max_parallel(tmp_path):
    plan = [step(f"S{i}", f"f{i}.md") for i in range(1, 4)]
    graph, _ = sqlite_graph(tmp_path, models(plan, [END]))
    run(graph, "three files", context=ctx(max_parallel=2), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    rounds = {}
    for event in values["trajectory"]:
        if event["action"] == "result":
            rounds.setdefault(event["round"], []).append(event["step_id"])
    assert rounds == {1: ["S1", "S2"], 2: ["S3"]} or rounds == {1: ["S2", "S1"], 2: ["S3"]}


def test_replan_keeps_finished_work_and_bumps_the_version(tmp_path):
    v1 = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",), check=CONTAINS_OK)]
    v2 = [v1[0], step("S2", "b.md", deps=("S1",), check=CONTAINS_OK, text="Write b.md with OK.")]
    written = []

    def content(step_id, path, revision):
        written.append(step_id)
        return "OK\n" if step_id == "S2" and len(written) > 2 else f"draft of {path}\n"

    replan = {"decision": "replan", "reason": "b.md lacks OK"}
    roles = models([{"steps": v1}, {"steps": v2}], [replan, END], writer(content))
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(max_revisions=0), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    assert result["status"] == "success" and result["plan_version"] == 2
    assert [p["version"] for p in values["plan_history"]] == [1]
    assert written.count("S1") == 1  # done and unaffected: never regenerated
    assert values["files"]["b.md"]["content"] == "OK\n"


def test_escalation_pauses_and_a_new_message_on_the_thread_resumes_it(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?", "suggested_responses": ["2024"]}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    paused = run(graph, "summarise the filing", context=ctx(), thread_id="t")
    assert paused["status"] == "awaiting_input" and paused["stop_reason"] == "model_escalated"
    snapshot = graph.get_state(thread_config("t"))
    assert snapshot.next == ("escalate",)  # paused inside escalate, on interrupt()
    escalation = snapshot.values["escalation"]
    assert [i.value for t in snapshot.tasks for i in t.interrupts] == [escalation]
    assert escalation["question"] == "Which year?"
    assert escalation["artifacts_ready_for_review"] == ["a.md"]
    assert escalation["suggested_responses"] == [
        {"label": "2024", "value": {"action": "answer", "text": "2024"}}
    ]
    assert escalation["reflection_depth"] == 1

    done = resume(graph, "t", "2024", context=ctx())
    values = graph.get_state(thread_config("t")).values
    assert done["status"] == "success"
    assert values["escalation"] is None
    assert "2024" in str(roles["planner"].calls[-1][-1].content)  # the answer reached the planner


def test_a_goal_asking_the_user_first_pauses_before_the_plan_runs_then_plans_with_the_answer(
    tmp_path,
):
    goal = "Write notes.md for the launch. Ask the user which date the launch is on first."
    asks = {"text": "Which date?", "quote": "Ask the user which date the launch is on first."}
    planned = {"steps": [step("S1", "notes.md")], "criteria": {"question": asks}}
    roles = models([planned, {"steps": [step("S1", "notes.md")]}], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    paused = run(graph, goal, context=ctx(), thread_id="t")
    assert paused["status"] == "awaiting_input" and paused["stop_reason"] == "question_first"
    assert "Ask the user which date the launch is on first." in paused["escalation"]["question"]
    assert len(roles["planner"].calls) == 1  # the criteria came with the plan
    assert all(len(m.calls) == 0 for r, m in roles.items() if r != "planner")
    assert not graph.get_state(thread_config("t")).values.get("plan")  # no step guessed

    done = resume(graph, "t", "the 9th of March", context=ctx())
    assert done["status"] == "success"
    plan = graph.get_state(thread_config("t")).values["plan"]
    assert len(roles["planner"].calls) == 2  # planned again, with the answer
    assert [s["expected_output"] for s in plan["steps"]] == ["notes.md"]
    goal_now = graph.get_state(thread_config("t")).values["goal"]
    assert goal_now.startswith(goal) and "the 9th of March" in goal_now  # every step sees it


def test_a_profile_without_model_questions_runs_the_plan_the_model_asked_a_question_with(
    tmp_path,
):
    # small-local: the 1.5B read questions into goals that asked none; the plan runs instead
    goal = "Write notes.md for the launch. Ask the user which date the launch is on first."
    asks = {"text": "Which date?", "quote": "Ask the user which date the launch is on first."}
    planned = {"steps": [step("S1", "notes.md")], "criteria": {"question": asks}}
    roles = models([planned], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    done = run(graph, goal, context=ctx(profile="small-local"), thread_id="t")
    assert done["stop_reason"] != "question_first"
    assert graph.get_state(thread_config("t")).values["plan"]["steps"][0]["expected_output"] == (
        "notes.md"
    )


def test_a_question_the_goal_does_not_ask_never_pauses(tmp_path):
    asks = {"text": "Which date?", "quote": "Ask the user which date"}  # not in the goal
    planned = {"steps": [step("S1", "notes.md")], "criteria": {"question": asks}}
    graph, _ = sqlite_graph(tmp_path, models([planned], [END]))
    result = run(graph, "Write notes.md for the launch on 9 March.", context=ctx(), thread_id="t")
    assert result["status"] == "success"


def _paused_on_depth_cap(tmp_path):
    replan = {"decision": "replan", "reason": "could be better"}
    roles = models([{"steps": [step("S1", "a.md")]}] * 8, [replan] * 8)
    graph, _ = sqlite_graph(tmp_path, roles)
    paused = run(graph, "goal", context=ctx(workload="qa"), thread_id="t")
    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "depth_cap")
    return graph, roles


def _calls(roles) -> int:
    return sum(len(m.calls) for m in roles.values() if isinstance(m, ScriptedChatModel))


def test_command_resume_accept_finishes_at_once_with_the_artifacts_as_they_are(tmp_path):
    graph, roles = _paused_on_depth_cap(tmp_path)
    before = _calls(roles)
    graph.invoke(Command(resume={"action": "accept"}), thread_config("t"), context=ctx())
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == ("success", "accepted_by_human")
    assert result["converged"] is False and result["escalation"] is None
    assert _calls(roles) == before  # no model called


def test_command_resume_stop_fails_the_run_and_nothing_more_runs(tmp_path):
    graph, roles = _paused_on_depth_cap(tmp_path)
    before = _calls(roles)
    graph.invoke(Command(resume={"action": "stop"}), thread_config("t"), context=ctx())
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == ("failed", "stopped_by_human")
    assert _calls(roles) == before


def test_a_suggested_choice_sent_back_whole_resumes_with_its_value(tmp_path):
    graph, _ = _paused_on_depth_cap(tmp_path)
    choices = graph.get_state(thread_config("t")).values["escalation"]["suggested_responses"]
    stop = next(c for c in choices if c["label"] == "stop here")
    graph.invoke(Command(resume=stop), thread_config("t"), context=ctx())
    assert result_of(graph, "t")["stop_reason"] == "stopped_by_human"


def test_command_resume_with_text_reaches_the_planner_and_the_run_goes_on(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?"}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(), thread_id="t")
    graph.invoke(Command(resume="engineers"), thread_config("t"), context=ctx())
    assert result_of(graph, "t")["status"] == "success"
    assert "engineers" in str(roles["planner"].calls[-1][-1].content)


def test_command_resume_continue_with_a_higher_budget_goes_on(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    roles = models(plan, [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    paused = run(graph, "goal", context=ctx(max_steps=1), thread_id="t")
    assert (paused["status"], paused["stop_reason"]) == ("budget_exhausted", "step_budget")
    more = ctx(max_steps=5)  # the caller's Context holds the budgets; continue restarts the turn
    graph.invoke(Command(resume={"action": "continue"}), thread_config("t"), context=more)
    assert result_of(graph, "t")["status"] == "success"


def test_command_resume_continue_raises_the_budget_named_for_this_turn(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    graph, _ = sqlite_graph(tmp_path, models(plan, [END]))
    run(graph, "goal", context=ctx(max_steps=1), thread_id="t")
    raised = {"action": "continue", "budget": {"max_steps": 5}}
    graph.invoke(Command(resume=raised), thread_config("t"), context=ctx(max_steps=1))
    assert result_of(graph, "t")["status"] == "success"


def test_an_unknown_action_is_refused_and_the_thread_stays_answerable(tmp_path):
    graph, roles = _paused_on_depth_cap(tmp_path)
    with pytest.raises(ConfigError, match="unknown action 'dance'"):
        resume(graph, "t", {"action": "dance"}, context=ctx())
    with pytest.raises(ConfigError, match="unknown budget 'tokens'"):
        resume(graph, "t", {"action": "continue", "budget": {"tokens": 5}}, context=ctx())
    # sent raw (SDK, Studio), it pauses again instead of wedging the thread
    graph.invoke(Command(resume={"action": "dance"}), thread_config("t"), context=ctx())
    assert result_of(graph, "t")["status"] == "awaiting_input"
    done = resume(graph, "t", {"action": "accept"}, context=ctx())
    assert done["stop_reason"] == "accepted_by_human"


def test_resume_with_an_action_through_the_python_api(tmp_path):
    graph, _ = _paused_on_depth_cap(tmp_path)
    done = resume(graph, "t", {"action": "accept"}, context=ctx())
    assert (done["status"], done["stop_reason"]) == ("success", "accepted_by_human")


def test_resuming_without_an_answer_pauses_again_without_any_model_call(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?"}
    roles = models([step("S1", "a.md")], [ask])
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(), thread_id="t")
    before = {role: len(m.calls) for role, m in roles.items()}
    again = resume(graph, "t", None, context=ctx())
    assert again["status"] == "awaiting_input"
    assert again["escalation"]["question"] == "Which year?"
    assert {role: len(m.calls) for role, m in roles.items()} == before
    questions = [
        m
        for m in graph.get_state(thread_config("t")).values["messages"]
        if m.type == "ai" and "Which year?" in str(m.content)
    ]
    assert len(questions) == 1


def test_depth_cap_forces_escalate_without_model_call(tmp_path):
    replan = {"decision": "replan", "reason": "could be better"}
    roles = models([{"steps": [step("S1", "a.md")]}] * 5, [replan] * 5)
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(workload="qa"), thread_id="t")
    assert result["status"] == "awaiting_input" and result["stop_reason"] == "depth_cap"
    assert reflection_calls(roles) == 2  # qa caps depth at 2; the third reflection is forced
    last = graph.get_state(thread_config("t")).values["decisions"][-1]
    assert last["forced"] is True and last["by"] == "rule"


def test_end_without_all_artifacts_done_is_overridden(tmp_path):
    attempts = []

    def content(step_id, path, revision):
        attempts.append(step_id)
        return "OK" if attempts.count(step_id) > 1 else "not yet"

    plan = [step("S1", "a.md", check=CONTAINS_OK)]
    roles = models(plan, [END, END], writer(content))
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(max_revisions=0), thread_id="t")
    decisions = graph.get_state(thread_config("t")).values["decisions"]
    assert decisions[0]["decision"] == "continue" and decisions[0]["forced"]
    assert decisions[0]["reason"].startswith("end overridden")
    assert result["status"] == "success"


def test_repeated_defect_escalates(tmp_path):
    plan = [step("S1", "a.md", check=CONTAINS_OK)]
    go_on = {"decision": "continue", "reason": "retry"}
    roles = models(plan, [go_on, go_on], writer(lambda *_: "always wrong"))
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(max_revisions=0), thread_id="t")
    assert result["status"] == "awaiting_input"
    assert result["stop_reason"] == "repeated_defect"
    assert "a.md lacks" in result["escalation"]["question"]
    assert reflection_calls(roles) == 1


def test_budget_exhaustion_saves_state_and_resumes_with_a_higher_budget(tmp_path):
    roles = models([{"steps": chain(3)}] * 2, [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(token_budget=1500), thread_id="t")
    assert result["status"] == "budget_exhausted" and result["stop_reason"] == "token_budget"
    done_before = [p for p, a in result["artifacts"].items() if a["status"] == "done"]
    assert done_before  # work done before the budget ran out is kept
    finished = resume(graph, "t", "continue with a higher budget", context=ctx())
    assert finished["status"] == "success"


def test_step_budget_stops_a_long_plan(tmp_path):
    graph, _ = sqlite_graph(tmp_path, models(chain(5), [END]))
    result = run(graph, "goal", context=ctx(max_steps=2), thread_id="t")
    assert result["status"] == "budget_exhausted" and result["stop_reason"] == "step_budget"


def test_malformed_planner_answer_is_retried_once_with_the_errors(tmp_path):
    roles = models(["this is not a plan", {"steps": [step("S1", "a.md")]}], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    retry_prompt = str(roles["planner"].calls[1][-1].content)
    assert prompt_values("planner_retry", retry_prompt) and "not a valid plan" in retry_prompt


def test_an_invalid_plan_twice_escalates(tmp_path):
    cyclic = [step("S1", "a.md", deps=("S2",)), step("S2", "b.md", deps=("S1",))]
    roles = models([{"steps": cyclic}] * 3, [])  # the same plan again earns a third try
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert result["status"] == "awaiting_input" and result["stop_reason"] == "invalid_plan"
    assert "cycle" in result["escalation"]["question"]
    assert reflection_calls(roles) == 0


def test_two_different_invalid_plans_escalate_after_one_retry(tmp_path):
    cyclic = [step("S1", "a.md", deps=("S2",)), step("S2", "b.md", deps=("S1",))]
    unknown = [step("S1", "a.md", deps=("S9",))]
    roles = models([{"steps": cyclic}, {"steps": unknown}], [])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "invalid_plan")
    assert len(roles["planner"].calls) == 2  # no example: the retry did move


def test_the_same_invalid_plan_twice_gets_an_example_and_a_third_try(tmp_path):
    cyclic = [step("S1", "a.md", deps=("S2",)), step("S2", "b.md", deps=("S1",))]
    roles = models([{"steps": cyclic}, {"steps": cyclic}, {"steps": [step("S1", "a.md")]}], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "Write notes on tuples", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    third = str(roles["planner"].calls[2][-1].content)
    values = prompt_values("planner_retry_example", third)
    assert values is not None and "cycle" in values["errors"]
    example = json.loads(values["example"])
    assert example["steps"][0]["expected_output"] == "a.md"  # the file the draft named
    assert example["steps"][0]["instructions"] == "Write notes on tuples"


def test_malformed_reflection_answer_is_a_failed_round_never_an_end(tmp_path):
    attempts = []

    def content(step_id, path, revision):
        attempts.append(step_id)
        return "OK" if len(attempts) > 1 else "draft"

    plan = [step("S1", "a.md", check=CONTAINS_OK)]
    roles = models(plan, ["{not json", "still not json", END], writer(content))
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(max_revisions=0), thread_id="t")
    first = graph.get_state(thread_config("t")).values["decisions"][0]
    assert first["decision"] == "continue" and "malformed twice" in first["reason"]
    assert result["status"] == "success"


def test_empty_goal_is_rejected_as_invalid_input(tmp_path):
    roles = models([step("S1", "a.md")], [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "   ", context=ctx(), thread_id="t")
    assert result["status"] == "failed" and result["stop_reason"] == "invalid_input"
    assert len(roles["planner"].calls) == 0


def test_thirty_step_plan_needs_one_model_reflection(tmp_path):
    roles = models(chain(30), [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "thirty parts", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    assert reflection_calls(roles) == 1
    assert ctx().depth_cap() == 4


def _reflection_prompt(tmp_path, size: int) -> str:
    marker = "CONTENT-MARKER"
    body = (marker + " ") * (size // 15)
    roles = models(chain(3), [END], writer(lambda *_: body))
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(token_budget=10**8), thread_id=f"t{size}")
    prompt = "\n".join(str(m.content) for m in roles["reflection"].calls[0])
    assert marker not in prompt
    return prompt


def test_reflection_prompt_holds_no_content_and_does_not_grow_with_it(tmp_path):
    small = _reflection_prompt(tmp_path / "small", 1_000)
    large = _reflection_prompt(tmp_path / "large", 1_000_000)
    assert abs(len(large) - len(small)) < 30  # only the byte counts' digits differ


def test_sqlite_storage_grows_linearly_with_files_written(tmp_path):
    def db_bytes(n: int) -> int:
        roles = models(chain(n), [END], writer(lambda s, p, r: f"{p}\n" + "x" * 10_000))
        graph, conn = sqlite_graph(tmp_path / str(n), roles)
        run(graph, "goal", context=ctx(), thread_id="t")
        rows = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint)),0) + COALESCE(SUM(LENGTH(metadata)),0) "
            "FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute("SELECT COALESCE(SUM(LENGTH(value)),0) FROM writes").fetchone()[0]
        return rows + writes

    ten, twenty = db_bytes(10), db_bytes(20)
    # Linear: twice the files, about twice the bytes. A plain dict channel re-stores every
    # file in every checkpoint, which makes this ratio about 4 (quadratic).
    assert twenty / ten < 2.5, (ten, twenty)


def test_a_new_message_after_success_starts_a_new_turn(tmp_path):
    roles = models(
        [{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md"), step("S2", "b.md")]}],
        [END, END],
    )
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "first goal", context=ctx(), thread_id="t")
    graph.invoke({"messages": [HumanMessage("also write b.md")]}, thread_config("t"), context=ctx())
    values = graph.get_state(thread_config("t")).values
    assert values["goal"] == "also write b.md"
    assert values["status"] == "success" and values["plan"]["version"] == 2
    assert json.loads(json.dumps(values["files"]["a.md"]))["status"] == "done"


def test_scripted_model_string_runs_the_demo_scenario(tmp_path):
    from tests.fakes import sqlite_graph as make

    graph, _ = make(tmp_path, {})
    result = run(graph, "demo goal", context=ctx(model="scripted:demo"), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    assert result["status"] == "success" and result["plan_version"] == 2
    checks = [e for e in values["trajectory"] if e["action"] == "check" and e["step_id"] == "S3"]
    assert [c["check"]["passed"] for c in checks] == [False, True]
    assert "AssertionError" in checks[0]["observation"]
    assert isinstance(ScriptedChatModel(["x"]).invoke("hi").content, str)


def test_a_rubric_check_asks_the_judge_model_and_meters_it(tmp_path):
    blocking = {
        "issues": [
            {
                "id": "no-title",
                "severity": "blocking",
                "location": "line 1",
                "evidence": "the first line is 'draft', not a title",
            }
        ],
        "score": 0.3,
    }
    plan = [step("S1", "a.md", check="The file starts with a title")]
    judge = ScriptedChatModel([blocking, {"issues": [], "score": 0.9}])
    roles = models(plan, [END], writer(lambda s, p, r: "# Title\n" if r else "draft"), judge=judge)
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    assert result["status"] == "success"
    assert result["usage"]["judge"]["calls"] == 2
    assert values["files"]["a.md"]["rounds"] == 1  # revised once from the judge's evidence
    checks = [e for e in values["trajectory"] if e["action"] == "check"]
    assert [c["check"]["passed"] for c in checks] == [False, True]
    assert "not a title" in checks[0]["observation"]
    judge_prompt = "\n".join(str(m.content) for m in roles["judge"].calls[0])
    assert "The file starts with a title" in judge_prompt


def test_streamed_messages_name_their_step_and_the_json_calls_stay_out_of_the_chat(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md", check="The file names its subject")]
    roles = models(plan, [END])
    graph, _ = sqlite_graph(tmp_path, roles)
    payload = {"messages": [HumanMessage("two files")]}
    streamed = [
        metadata
        for chunk, metadata in graph.stream(
            payload, thread_config("t"), context=ctx(), stream_mode="messages"
        )
        if metadata.get("langgraph_node") == "subagent" and not is_progress(chunk)
    ]
    assert roles["judge"].calls  # the rubric judge was asked, its JSON was not streamed
    assert {(m["role"], m["step_id"], m["expected_output"]) for m in streamed} == {
        ("writer", "S1", "a.md"),
        ("writer", "S2", "b.md"),
    }
    assert all(m["revision"] == 0 for m in streamed)


def test_the_critic_key_names_the_critic_subagent_and_never_the_judge(tmp_path):
    plan = [step("S1", "a.md", check="The file names its subject")]
    critic = ScriptedChatModel([])  # it would fail the run if it were asked anything
    roles = models(plan, [END], critic=critic)
    del roles["judge"]  # so the judge is the Context's: scripted:happy's, which approves
    roles["writer"] = roles.pop("default")
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert result["status"] == "success" and result["usage"]["judge"]["calls"] == 1
    assert critic.calls == []


SLUG_TESTS = (
    "from slug import slugify\n\n\ndef test_drops_punctuation():\n"
    "    assert slugify('Hi, there!') == 'hi-there'\n"
)
SLUG_BUGGY = "def slugify(text):\n    return '-'.join(text.lower().split())\n"


def test_a_failing_pytest_check_is_patched_from_its_evidence_and_reflection_ends(tmp_path):
    plan = [
        step("S1", "test_slug.py", action="coder", check={"kind": "regex", "pattern": "def test_"}),
        step(
            "S2",
            "slug.py",
            action="coder",
            deps=("S1",),
            check={"kind": "pytest", "tests": ["test_slug.py"]},
        ),
    ]

    def coder(messages, metadata):
        if messages[-1].type == "tool":
            return "done"
        if metadata["step_id"] == "S1":
            return tool_call("write_file", path="test_slug.py", content=SLUG_TESTS)
        if metadata["revision"]:
            return tool_call(
                "edit_file",
                path="slug.py",
                old="text.lower().split()",
                new="''.join(c if c.isalnum() else ' ' for c in text.lower()).split()",
            )
        return tool_call("write_file", path="slug.py", content=SLUG_BUGGY)

    roles = models(plan, [END], coder)
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "a slug helper", context=ctx(workload="coding"), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    model = roles["default"]
    revision = next(
        str(call[1].content)
        for call, metadata in zip(model.calls, model.call_metadata, strict=True)
        if metadata["revision"]
    )
    assert "assert 'hi,-there!' == 'hi-there'" in revision  # the failing assertion, verbatim
    entry = values["files"]["slug.py"]
    assert entry["status"] == "done" and entry["rounds"] == 1 and entry["stop_reason"] == "pass"
    assert entry["check"]["kind"] == "pytest" and entry["check"]["score"] == 1.0
    assert result["status"] == "success" and values["decisions"][-1]["decision"] == "end"


def test_a_user_subagent_with_its_own_tool_and_model(tmp_path):
    from langchain_core.tools import tool

    @tool
    def lookup_price(item: str) -> str:
        """Price of an item in the catalogue."""
        return {"apple": "3"}.get(item, "unknown")

    def pricer(messages):
        if messages[-1].type == "tool" and messages[-1].name == "lookup_price":
            return tool_call(
                "write_file", path="price.txt", content=f"apple={messages[-1].content}"
            )
        if messages[-1].type == "tool":
            return "done"
        return tool_call("lookup_price", item="apple")

    spec = {
        "name": "pricer",
        "description": "Looks up prices.",
        "prompt": "You price things.",
        "tools": [lookup_price],
        "model": ScriptedChatModel(responder=pricer),
    }
    plan = [step("S1", "price.txt", action="pricer", check={"kind": "contains", "all": ["=3"]})]
    roles = models(plan, [END])
    del roles["default"]
    graph, _ = sqlite_graph(tmp_path, roles, subagents=[spec])
    result = run(graph, "price an apple", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    assert graph.get_state(thread_config("t")).values["files"]["price.txt"]["content"] == "apple=3"
    assert "pricer: Looks up prices." in str(roles["planner"].calls[0][0].content)


def test_an_unusable_answer_keeps_the_thread_paused_on_its_question(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?"}
    roles = models([{"steps": [step("S1", "a.md")]}] * 2, [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(), thread_id="t")
    again = resume(graph, "t", "   ", context=ctx())
    assert again["status"] == "awaiting_input" and again["escalation"]["question"] == "Which year?"
    last = graph.get_state(thread_config("t")).values["messages"][-1]
    assert "not accepted" in str(last.content)
    assert len(roles["planner"].calls) == 1
    assert resume(graph, "t", "2024", context=ctx())["status"] == "success"


def test_rolling_planning_commits_to_one_segment_at_a_time_and_finishes(tmp_path):
    graph, _ = sqlite_graph(tmp_path, {})
    context = ctx(model="scripted:rolling", planning="rolling")
    result = run(graph, "facts, then the report they call for", context=context, thread_id="r")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    values = graph.get_state(thread_config("r")).values
    first, final = values["plan_history"][0], values["plan"]
    assert [s["step_id"] for s in first["steps"]] == ["S1"]  # segment 1 only
    assert [s["step_id"] for s in final["steps"]] == ["S1", "S2"] and final["version"] == 2
    ran = [e["step_id"] for e in values["trajectory"] if e["action"] == "result"]
    assert ran == ["S1", "S2"]  # the done segment is kept, not run again
    assert [d["decision"] for d in values["decisions"]] == ["replan", "end"]


def test_upfront_planning_is_the_default_and_rolling_is_told_to_the_planner(tmp_path):
    for planning in ("upfront", "rolling"):
        roles = models([step("S1", "a.md")], [END])
        graph, _ = sqlite_graph(tmp_path / planning, roles)
        run(graph, "goal", context=ctx(planning=planning), thread_id="p")
        system = str(roles["planner"].calls[0][0].content)
        assert render("planning_" + planning) in system
    assert Context().planning == "upfront"
    assert Context(planning="sideways").validate()  # an unknown mode is refused


class _ContextLengthError(Exception):
    """llama.cpp's answer to a request over its context window, as the client raises it."""

    status_code = 400

    def __str__(self) -> str:
        return "Error code: 400 - the request exceeds the available context size (n_ctx 4096)"


def test_a_step_over_the_context_window_fails_alone_never_the_run(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md")]
    write = writer()

    def subagent(messages, metadata):
        if metadata["step_id"] == "S2":
            raise _ContextLengthError()
        return write(messages, metadata)

    roles = models(plan, [], subagent)
    roles["planner"] = ScriptedChatModel(responder=lambda m: {"steps": plan})
    roles["reflection"] = ScriptedChatModel(responder=lambda m: END)
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert result["status"] != "failed", result
    assert result["artifacts"]["a.md"]["status"] == "done"
    assert "b.md" not in result["artifacts"] or result["artifacts"]["b.md"]["status"] != "done"
    events = graph.get_state(thread_config("t")).values["trajectory"]
    errors = [e for e in events if e.get("action") == "error" and e.get("step_id") == "S2"]
    assert errors and all(e["error_class"] == "deterministic_validation" for e in errors)
    assert "does not fit the model's context window" in errors[0]["observation"]


# ------------------------------------------------- agent-chat-ui: buttons, typed labels, pauses


def _interrupt_value(graph, thread_id: str = "t"):
    (value,) = [
        i.value for t in graph.get_state(thread_config(thread_id)).tasks for i in t.interrupts
    ]
    return value


def _ai(graph, thread_id: str = "t"):
    return [
        m for m in graph.get_state(thread_config(thread_id)).values["messages"] if m.type == "ai"
    ]


def test_the_interrupt_is_a_review_card_that_agent_chat_ui_draws_with_buttons(tmp_path):
    from agent.reflection.on_screen import on_screen
    from tests.unit.test_answers import drawn_with_buttons

    graph, _ = _paused_on_depth_cap(tmp_path)
    value = _interrupt_value(graph)
    escalation = graph.get_state(thread_config("t")).values["escalation"]
    # the escalation as a screen shows it: a label's placeholder is text, not an HTML tag
    assert value == on_screen(escalation) and drawn_with_buttons(value)
    hint = "try again with clearer instructions: &lt;your hint&gt;"
    assert hint in [c["label"] for c in value["suggested_responses"]]
    # the contract's fields stay in the escalation, beside the card
    assert {"question", "artifacts_ready_for_review", "suggested_responses"} <= set(escalation)
    assert {"reflection_depth", "reason"} <= set(escalation)
    (action,) = value["action_requests"]
    assert action["args"]["question"] == escalation["question"]
    assert action["args"]["artifacts_ready_for_review"] == "- `a.md`"
    assert value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    # for a client without cards, the message lists every label one may type, literally
    message = _ai(graph)[-1].content
    assert message.startswith(escalation["question"])
    labels = [c["label"] for c in escalation["suggested_responses"]]
    assert message.splitlines()[1:] == [f"- `{label}`" for label in labels]
    assert "stop here" in labels and "accept the artifacts as they are" in labels


BUTTONS = [
    pytest.param(
        {"decisions": [{"type": "approve"}]}, ("success", "accepted_by_human"), id="approve"
    ),
    pytest.param(
        [{"type": "accept", "args": None}], ("success", "accepted_by_human"), id="inbox-accept"
    ),
    pytest.param(
        {"decisions": [{"type": "reject", "message": "Stop here."}]},
        ("failed", "stopped_by_human"),
        id="reject-stop-here",
    ),
    pytest.param(
        {"decisions": [{"type": "reject", "message": "STOP"}]},
        ("failed", "stopped_by_human"),
        id="reject-stop",
    ),
    pytest.param(
        {"decisions": [{"type": "reject", "message": " accept the artifacts AS they are "}]},
        ("success", "accepted_by_human"),
        id="reject-accept-label",
    ),
    pytest.param(
        [{"type": "ignore", "args": None}], ("failed", "stopped_by_human"), id="inbox-ignore"
    ),
    pytest.param(
        [{"type": "response", "args": "stop here"}],
        ("failed", "stopped_by_human"),
        id="inbox-response",
    ),
]


@pytest.mark.parametrize(("button", "expected"), BUTTONS)
def test_each_button_of_the_card_ends_the_thread_as_its_label_says(tmp_path, button, expected):
    graph, roles = _paused_on_depth_cap(tmp_path)
    before = _calls(roles)
    graph.invoke(Command(resume=button), thread_config("t"), context=ctx())
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == expected
    assert result["escalation"] is None and _calls(roles) == before  # no model called
    assert graph.get_state(thread_config("t")).next == ()


def test_the_reject_button_with_an_answer_reaches_the_planner(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?", "suggested_responses": ["2024"]}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(), thread_id="t")
    # accept and stop are offered beside the model's suggestion, in the card and the message
    listed = ["- `2024`", "- `accept the artifacts as they are`", "- `stop here`"]
    assert _ai(graph)[-1].content.splitlines()[1:] == listed
    answer = {"decisions": [{"type": "reject", "message": "cover 2022 and 2023"}]}
    graph.invoke(Command(resume=answer), thread_config("t"), context=ctx())
    assert result_of(graph, "t")["status"] == "success"
    assert "cover 2022 and 2023" in str(roles["planner"].calls[-1][-1].content)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("  Stop   Here ", ("failed", "stopped_by_human")),
        ("stop", ("failed", "stopped_by_human")),
        ("Accept the artifacts as they are.", ("success", "accepted_by_human")),
    ],
)
def test_a_typed_label_on_the_paused_thread_acts_as_that_choice(tmp_path, typed, expected):
    graph, roles = _paused_on_depth_cap(tmp_path)
    before = _calls(roles)
    graph.invoke({"messages": [HumanMessage(typed)]}, thread_config("t"), context=ctx())
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == expected
    assert _calls(roles) == before  # not taken as an answer: nothing replanned or re-run
    assert _ai(graph)[-1].content != _ai(graph)[-2].content  # the outcome, after the question
    # the same through agent.resume with text, and as a string resume value
    graph2, _ = _paused_on_depth_cap(tmp_path / "2")
    assert resume(graph2, "t", typed, context=ctx())["stop_reason"] == expected[1]
    graph3, _ = _paused_on_depth_cap(tmp_path / "3")
    graph3.invoke(Command(resume=typed), thread_config("t"), context=ctx())
    assert result_of(graph3, "t")["stop_reason"] == expected[1]


def test_a_typed_label_that_is_an_answer_reaches_the_planner_as_its_value(tmp_path):
    ask = {
        "decision": "escalate",
        "question": "Which year?",
        "suggested_responses": ["Recent years"],
    }
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    run(graph, "goal", context=ctx(), thread_id="t")
    graph.invoke(
        {"messages": [HumanMessage(" recent   YEARS ")]}, thread_config("t"), context=ctx()
    )
    assert result_of(graph, "t")["status"] == "success"
    asked = str(roles["planner"].calls[-1][-1].content)
    assert "Recent years" in asked and "recent   YEARS" not in asked  # the choice's own words


@pytest.mark.parametrize("typed", ["continue", "Continue with a higher budget"])
def test_continue_typed_after_a_budget_stop_continues_without_replanning(tmp_path, typed):
    plan = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    written = []
    roles = models(plan, [END], writer(lambda s, p, r: written.append(s) or f"content of {p}\n"))
    graph, _ = sqlite_graph(tmp_path, roles)
    paused = run(graph, "goal", context=ctx(max_steps=1), thread_id="t")
    assert (paused["status"], paused["stop_reason"]) == ("budget_exhausted", "step_budget")
    plans, s1_writes = len(roles["planner"].calls), written.count("S1")
    more = ctx(max_steps=5)  # the Context holds the budgets; continue restarts the turn's count
    graph.invoke({"messages": [HumanMessage(typed)]}, thread_config("t"), context=more)
    assert result_of(graph, "t")["status"] == "success"
    assert len(roles["planner"].calls) == plans  # no replan
    assert written.count("S1") == s1_writes  # the finished step is not run again


def test_each_pause_is_a_new_ai_message_and_the_last_one_is_the_pause(tmp_path):
    graph, _ = _paused_on_depth_cap(tmp_path)
    first = _ai(graph)[-1]
    assert first.id.startswith("escalation-")
    again = resume(graph, "t", "try a shorter plan", context=ctx(workload="qa"))
    assert (again["status"], again["stop_reason"]) == ("awaiting_input", "depth_cap")
    messages = graph.get_state(thread_config("t")).values["messages"]
    pauses = [m for m in messages if m.type == "ai" and str(m.id).startswith("escalation-")]
    assert len(pauses) == 2 and pauses[0].id != pauses[1].id
    assert pauses[0].content == pauses[1].content  # the same question, asked twice
    assert messages[-1].id == pauses[1].id  # the card sits under the last message
    said = [m for m in messages if not is_progress(m)]  # the run's narration aside
    assert [m.type for m in said[-3:]] == ["ai", "human", "ai"]
    # resumed with nothing, it pauses on the same message: no third one
    resume(graph, "t", None, context=ctx(workload="qa"))
    after = graph.get_state(thread_config("t")).values["messages"]
    assert [m.id for m in after] == [m.id for m in messages]


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("openai:gpt-4.1-mini", "OPENAI_API_KEY"),
        ("nosuchprovider:x", "unknown model provider"),
        ("no-colon", "provider:name"),
    ],
)
def test_a_model_that_cannot_be_made_fails_the_run_with_a_message_that_stays(
    tmp_path, monkeypatch, model, words
):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    graph, _ = sqlite_graph(tmp_path, {})
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        run(graph, "write a report", context=Context(model=model), thread_id="t")
    assert not graph.get_state(thread_config("t")).values  # nothing stored
    # a server's run (Studio, the SDKs) cannot raise to its caller: it fails, saying why
    goal = {"messages": [HumanMessage("write a report")]}
    graph.invoke(goal, thread_config("t"), context=Context(model=model))
    result = result_of(graph, "t")
    assert result["status"] == "failed" and result["stop_reason"] == "invalid_input"
    assert result["message"] and words in result["message"]
    assert result["open_issues"][0]["id"] == "invalid_input"
    last = graph.get_state(thread_config("t")).values["messages"][-1]
    assert last.type == "ai" and words in last.content and last.content == result["message"]
    assert (
        "`model` in the assistant's context" in last.content and "DEEPREFLECT_MODEL" in last.content
    )
    assert "--model" in last.content


def test_a_subagent_model_that_cannot_be_made_fails_the_run_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    roles = models([step("S1", "a.md")], [END])
    del roles["default"]
    graph, _ = sqlite_graph(tmp_path, roles)
    bad = ctx(subagent_model="openai:gpt-4.1-mini")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        run(graph, "goal", context=bad, thread_id="t")
    graph.invoke({"messages": [HumanMessage("goal")]}, thread_config("t"), context=bad)
    result = result_of(graph, "t")
    assert (result["status"], result["stop_reason"]) == ("failed", "invalid_input")
    last = graph.get_state(thread_config("t")).values["messages"][-1]
    assert "OPENAI_API_KEY" in last.content and "DEEPREFLECT_MODEL" in last.content
    assert result["message"] == last.content
    assert result["open_issues"][0]["suggestion"] and result["open_issues"][0]["step_id"] == "S1"


class AuthenticationError(Exception):
    """A provider's refusal of the key, as its SDK names it."""


def test_a_provider_refusing_the_key_fails_the_run_with_the_error_and_the_fix(tmp_path):
    refusing = ScriptedChatModel(responder=lambda m: AuthenticationError("invalid api key sk-…"))
    roles = models([step("S1", "a.md")], [END], planner=refusing)
    graph, _ = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    last = graph.get_state(thread_config("t")).values["messages"][-1]
    assert last.type == "ai" and "invalid api key" in last.content
    assert "DEEPREFLECT_MODEL" in last.content


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"decisions": [{"type": "approve"}]}, "accepted_by_human"),
        ([{"type": "accept", "args": None}], "accepted_by_human"),
        ({"decisions": [{"type": "reject", "message": "stop here"}]}, "stopped_by_human"),
    ],
)
def test_agent_resume_takes_the_cards_decisions_too(tmp_path, answer, expected):
    graph, _ = _paused_on_depth_cap(tmp_path)
    assert resume(graph, "t", answer, context=ctx())["stop_reason"] == expected


def test_agent_resume_refuses_a_decision_the_card_does_not_offer(tmp_path):
    graph, _ = _paused_on_depth_cap(tmp_path)
    edit = {"decisions": [{"type": "edit", "edited_action": {"name": "escalation", "args": {}}}]}
    with pytest.raises(ConfigError, match="approve .* or reject"):
        resume(graph, "t", edit, context=ctx())
    assert result_of(graph, "t")["status"] == "awaiting_input"


def test_a_missing_check_runner_fails_the_run_at_once_naming_the_package(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pytest" else real(name, *a)
    )
    from tests.fakes import sqlite_graph as make

    graph, _ = make(tmp_path, {})
    result = run(graph, "demo goal", context=ctx(model="scripted:demo"), thread_id="t")
    values = graph.get_state(thread_config("t")).values
    assert result["status"] == "failed" and result["stop_reason"] == "invalid_input"
    assert result["plan_version"] == 1  # no replan spent on it
    errors = [e for e in values["trajectory"] if e["action"] == "error"]
    assert errors and errors[0]["fix"] == "pip install pytest"
    assert "pytest" in errors[0]["observation"]
    step_id = errors[0]["step_id"]
    # no draft written for the step: no revision, no fresh draft
    assert not [
        e for e in values["trajectory"] if e["step_id"] == step_id and e["action"] != "error"
    ]
    assert "pip install pytest" in values["messages"][-1].content


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"models": {"planer": ScriptedChatModel(["x"])}}, "did you mean 'planner'"),
        ({"models": {"default": "gpt-4.1-mini"}}, "provider:name"),
        ({"tools": {"codr": []}}, "did you mean 'coder'"),
    ],
)
def test_build_graph_refuses_what_no_run_could_use_with_the_fix(options, words):
    from agent import ConfigError as Exported
    from agent import build_graph

    with pytest.raises(Exported, match=words):
        build_graph(**options)


def test_a_paused_or_failed_result_says_why_in_plain_fields(tmp_path):
    graph, _ = sqlite_graph(tmp_path, models([step("S1", "a.md")], [END]))
    failed = run(graph, "   ", context=ctx(), thread_id="t")
    assert failed["status"] == "failed" and failed["message"]
    assert failed["open_issues"] and failed["open_issues"][0]["evidence"]
    (tmp_path / "p").mkdir()
    graph, _ = sqlite_graph(tmp_path / "p", {})
    paused = run(graph, "demo goal", context=ctx(model="scripted:escalation"), thread_id="p")
    assert paused["status"] == "awaiting_input"
    assert paused["message"] == paused["escalation"]["question"]
    assert paused["open_issues"]


def test_a_profile_taking_no_end_on_the_models_word_pauses_unverified_where_default_ends(
    tmp_path,
):
    # small-local: on the 1.5B both ends its reflection model decided were false successes
    goal = "Summarise the launch on 9 March for the team."  # names no file: no rule ends it
    for profile, wanted in (("default", ("success", "end")), ("small-local", None)):
        roles = models([{"steps": [step("S1", "notes.md")]}], [END])
        graph, _ = sqlite_graph(tmp_path / profile, roles)
        result = run(graph, goal, context=ctx(profile=profile), thread_id="t")
        decisions = graph.get_state(thread_config("t")).values["decisions"]
        assert decisions[-1]["by"] == "model"  # no rule ended it: the model was asked
        if wanted:
            assert (result["status"], result["stop_reason"]) == wanted
            continue
        assert (result["status"], result["stop_reason"]) == ("awaiting_input", "unverified")
        assert result["artifacts"] and "accept" in result["escalation"]["question"].lower()
        accepted = resume(graph, "t", {"action": "accept"}, context=ctx(profile=profile))
        assert (accepted["status"], accepted["stop_reason"]) == ("success", "accepted_by_human")
