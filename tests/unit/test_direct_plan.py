"""Goals that name their files are planned by code, without the planner model, when the
model's profile says so (small local models); every other profile asks the planner model
and falls back to the plan made in code only when the model's plans stay invalid."""

import asyncio

import pytest
from langchain_core.tools import tool

from agent.controller.subagents import build_registry
from agent.models.factory import Metered
from agent.models.profiles import DEFAULT, SMALL_LOCAL
from agent.models.scripted import ScriptedChatModel
from agent.plan.direct import direct_steps, goal_outputs
from agent.plan.planner import ask_planner
from agent.vfs.entries import file_entry
from agent.vfs.origin import USER

REGISTRY = build_registry()


def user(text):
    return file_entry(text, step=0, origin=USER)


def plan(
    goal,
    files=None,
    registry=REGISTRY,
    plan_answers=(),
    state_plan=None,
    answer="",
    profile=SMALL_LOCAL,
):
    model = ScriptedChatModel(list(plan_answers))
    state = {"goal": goal, "files": files or {}, "step": 0, "plan": state_plan}
    outcome = asyncio.run(
        ask_planner(
            Metered(model, "planner", "auto"),
            state,
            registry,
            reason="",
            answer=answer,
            max_plan_steps=8,
            profile=profile,
        )
    )
    return outcome, model


MODEL_PLAN = {
    "steps": [
        {
            "step_id": "S1",
            "action": "coder",
            "instructions": "Write roman.py with to_roman.",
            "expected_output": "roman.py",
            "done_when": {"kind": "python", "code": "assert to_roman(4) == 'IV'"},
        }
    ]
}


def test_the_default_profile_asks_the_planner_model_even_when_the_goal_names_its_file():
    goal = "Write roman.py with to_roman(n: int) -> str."
    outcome, model = plan(goal, plan_answers=[MODEL_PLAN], profile=DEFAULT)
    assert len(model.calls) == 1 and not outcome.fallback
    # the planner's own check runs as written, beside what the product adds
    assert "assert to_roman(4) == 'IV'" in str(outcome.steps[0].done_when)


def test_a_plan_made_in_code_is_the_fallback_when_the_planner_s_plans_stay_invalid():
    invalid = {"steps": [{**MODEL_PLAN["steps"][0], "action": "nobody"}]}
    outcome, model = plan(
        "Write roman.py with to_roman(n: int) -> str.",
        plan_answers=[invalid] * 3,
        profile=DEFAULT,
    )
    assert len(model.calls) >= 2  # asked, then retried with the errors
    assert [s.expected_output for s in outcome.steps] == ["roman.py"]
    assert "nobody" in outcome.fallback and "planned in code" in outcome.fallback


def test_without_a_file_named_an_invalid_plan_stays_invalid():
    invalid = {"steps": [{**MODEL_PLAN["steps"][0], "action": "nobody"}]}
    outcome, _ = plan("Write a converter to roman numerals.", plan_answers=[invalid] * 3,
                      profile=DEFAULT)  # fmt: skip
    assert outcome.steps is None and outcome.errors and not outcome.fallback


def test_a_goal_naming_one_file_is_one_step_without_a_planner_call():
    outcome, model = plan("Write roman.py with to_roman(n: int) -> str; 4 is IV.")
    assert len(model.calls) == 1  # the model is asked for the criteria only; code plans
    assert [(s.step_id, s.action, s.expected_output) for s in outcome.steps] == [
        ("S1", "coder", "roman.py")
    ]
    # the floor raised the default check: roman.py must run and define to_roman
    assert "to_roman" in str(outcome.steps[0].done_when)


def test_a_users_file_the_goal_names_is_the_file_the_step_edits():
    files = {"stats.py": user("def median(xs):\n    return xs[0]\n")}
    outcome, model = plan("Fix the median bug in stats.py.", files)
    assert len(model.calls) == 1
    assert [s.expected_output for s in outcome.steps] == ["stats.py"]


def test_a_users_input_file_is_read_not_written():
    files = {"notes.txt": user("some notes\n")}
    steps = direct_steps("Summarise notes.txt into summary.md.", files, REGISTRY, 8)
    assert [(s.action, s.expected_output) for s in steps] == [("writer", "summary.md")]


def test_two_named_files_are_two_steps_the_second_depending_on_the_first():
    steps = direct_steps("Write pkg/a.py and pkg/b.py; b imports a.", {}, REGISTRY, 8)
    assert [(s.step_id, s.depends_on, s.expected_output) for s in steps] == [
        ("S1", [], "pkg/a.py"),
        ("S2", ["S1"], "pkg/b.py"),
    ]
    assert "pkg/b.py" in steps[0].instructions  # told another step writes it


def test_the_role_whose_tool_the_goal_names_writes_the_file():
    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        return ""

    registry = build_registry(tools={"researcher": [search]})
    goal = "Write report.md; use the search tool and cite 2 sources."
    assert [s.action for s in direct_steps(goal, {}, registry, 8)] == ["researcher"]
    assert [s.action for s in direct_steps(goal, {}, REGISTRY, 8)] == ["writer"]


@pytest.mark.parametrize(
    "goal",
    [
        "Explain the difference between a list and a tuple.",  # no file
        "Write calc.py and tests/test_calc.py for it.",  # a test file: the planner's
        "Write a.py, b.py, c.py and d.py.",  # more than a few
        "Use os.path and e.g. numpy.linalg to explain paths.",  # names, not files
        "Write /etc/passwd.json and ../up.py.",  # not VFS paths
    ],
)
def test_goals_the_model_plans(goal):
    assert direct_steps(goal, {}, REGISTRY, 8) is None


def test_the_model_plans_when_a_plan_exists_or_the_goal_needs_it():
    answer = {"steps": [{"step_id": "S1", "action": "writer", "instructions": "Answer.",
                         "expected_output": "answer.md"}]}  # fmt: skip
    outcome, model = plan("Explain tuples.", plan_answers=[answer])
    assert len(model.calls) == 1 and outcome.steps[0].expected_output == "answer.md"
    old = {"version": 1, "steps": []}
    outcome, model = plan("Write x.py.", plan_answers=[answer], state_plan=old)
    assert len(model.calls) == 1  # a replan is the model's: it reads why


def test_a_step_limit_below_the_files_leaves_it_to_the_model():
    assert direct_steps("Write a.py and b.py.", {}, REGISTRY, 1) is None


def test_goal_outputs_skip_named_test_files_of_the_user():
    files = {"stats.py": user("x = 1\n"), "test_stats.py": user("def test(): ...\n")}
    assert goal_outputs("Make test_stats.py pass by fixing stats.py.", files) == ["stats.py"]


ASKS = (
    "Write deploy.json with the region. The region is not written anywhere, and guessing "
    "would deploy to the wrong place: ask the user which region before writing the file. "
    "Use 3 replicas."
)


def test_the_question_first_comes_from_the_criteria_quoting_the_goal():
    criteria = {
        "question": {
            "text": "Which region?",
            "quote": "ask the user which region before writing the file",
        }
    }
    outcome, model = plan(ASKS, plan_answers=[criteria])
    assert len(model.calls) == 1  # the criteria asked of the model; the plan is code's
    assert outcome.criteria.question.text == "Which region?"
    assert [s.expected_output for s in outcome.steps] == ["deploy.json"]


def test_a_question_the_goal_does_not_ask_is_dropped():
    criteria = {"question": {"text": "Which region?", "quote": "ask the user for the region"}}
    outcome, _ = plan("Write deploy.json with region eu-north-1.", plan_answers=[criteria])
    assert outcome.criteria.question is None and outcome.dropped


def test_an_answered_goal_tells_every_step_the_answer():
    steps = direct_steps(ASKS, {}, REGISTRY, 8, answer="eu-north-1, said ops")
    assert [s.expected_output for s in steps] == ["deploy.json"]
    assert "eu-north-1, said ops" in steps[0].instructions


def test_the_answer_reaches_the_plan_without_a_planner_call():
    outcome, model = plan(ASKS, answer="The operations team chose eu-north-1.")
    assert len(model.calls) == 1 and "eu-north-1" in outcome.steps[0].instructions


def test_only_a_one_step_plan_made_in_code_without_an_answer_is_the_whole_goal():
    from agent.plan.direct import is_whole_goal

    (one,) = direct_steps("Write roman.py with to_roman(n).", {}, REGISTRY, 8)
    assert is_whole_goal(one.model_dump())
    two = direct_steps("Write a.py and b.py: b.py imports a.py.", {}, REGISTRY, 8)
    assert two is not None and len(two) == 2
    assert not any(is_whole_goal(s.model_dump()) for s in two)
    (told,) = direct_steps("Write deploy.json.", {}, REGISTRY, 8, answer="region eu-west-1")
    assert not is_whole_goal(told.model_dump())
    assert not is_whole_goal(MODEL_PLAN["steps"][0])  # the planner model's step


def test_a_whole_goal_step_is_asked_as_the_goal_is_written_with_its_files_and_no_check():
    from agent.controller.prompting import direct_messages

    goal = "Korrigiere median in stats.py: median([1, 2, 3, 4]) soll 2.5 sein."
    given = "def median(v):\n    return v[len(v) // 2]\n"
    files = {"stats.py": user(given)}
    (step,) = direct_steps(goal, files, REGISTRY, 8)
    check = {"kind": "python", "code": "assert median([1, 2, 3, 4]) == 2.5"}
    step = {**step.model_dump(), "done_when": check}
    kwargs = {"goal": goal, "system_prompt": "s", "files": {"data.csv": "a,b\n"}, "draft": given}
    asked = direct_messages(step, **kwargs, feedback=None, as_asked=True)[-1].content
    framed = direct_messages(step, **kwargs, feedback=None)[-1].content
    assert asked.startswith(goal)
    assert step["instructions"] not in asked and step["instructions"] in framed
    assert "assert median" not in asked and "assert median" in framed
    assert given in asked and "a,b" in asked and "stats.py" in asked
    # a revision is asked with its evidence whatever the switch says
    feedback = {"mode": "rewrite", "issues": [{"evidence": "median([1, 2, 3, 4]) returned 3"}]}
    revised = direct_messages(step, **kwargs, feedback=feedback, as_asked=True)[-1].content
    assert "returned 3" in revised
    assert revised == direct_messages(step, **kwargs, feedback=feedback)[-1].content
