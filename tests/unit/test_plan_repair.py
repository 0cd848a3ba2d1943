"""Plans a small model gets wrong in ways code can settle: two steps writing one file
(merged when safe), a pytest check of a file nothing writes (refused with advice), and the
example plan shown after a repeated invalid plan (it must itself be valid)."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent.checks import describe_kinds
from agent.controller.subagents import build_registry
from agent.models.factory import Metered
from agent.models.profiles import SMALL_LOCAL
from agent.models.scripted import ScriptedChatModel
from agent.plan.floor import without_floor
from agent.plan.needs import named_files
from agent.plan.planner import DEFAULT_EXAMPLE_OUTPUT, ask_planner, example_plan
from agent.plan.same_outputs import merge_same_outputs
from agent.plan.steps import MAX_INSTRUCTIONS_CHARS, PlanDraft, Step
from agent.plan.validation import parse_plan as _parse_plan
from agent.vfs.entries import file_entry
from tests.fakes import step

ACTIONS = {"writer", "coder", "researcher", "critic"}


def parse_plan(*args, **kwargs):
    """The repairs a small model's profile turns on are under test here."""
    return _parse_plan(*args, repairs=True, **kwargs)


def parse(steps, files=()):
    return parse_plan({"steps": steps}, actions=ACTIONS, max_steps=20, files=files)


def ids(steps):
    return [s.step_id for s in steps]


# ------------------------------------------------------------------ same output, merged


def test_write_then_improve_the_same_file_is_one_step_doing_both():
    first = step("S1", "x.py", action="coder", text="Write x.py.")
    second = step("S2", "x.py", action="coder", deps=("S1",), text="Improve x.py.")
    steps, errors = parse([first, second])
    assert errors == [] and ids(steps) == ["S1"]
    assert steps[0].instructions == "Write x.py.\n\nImprove x.py."
    assert steps[0].depends_on == []


def test_merged_step_takes_over_dependants_and_unions_dependencies():
    plan = [
        step("A", "a.md"),
        step("B", "b.md"),
        step("S2", "x.md", deps=("B", "S1"), text="second"),  # listed first, runs second
        step("S1", "x.md", deps=("A",), text="first"),
        step("C", "c.md", deps=("S1", "S2")),
    ]
    steps, errors = parse(plan)
    assert errors == []
    by_id = {s.step_id: s for s in steps}
    assert ids(steps) == ["A", "B", "S2", "C"]  # the first id in plan order is kept
    assert by_id["S2"].instructions == "first\n\nsecond"  # dependency order
    assert sorted(by_id["S2"].depends_on) == ["A", "B"]
    assert by_id["C"].depends_on == ["S2"]


def test_three_steps_writing_one_file_become_one():
    plan = [step(f"S{i}", "out.md", deps=(f"S{i - 1}",) if i > 1 else ()) for i in (1, 2, 3)]
    steps, errors = parse(plan)
    assert errors == [] and ids(steps) == ["S1"] and steps[0].instructions.count("\n\n") == 2


def test_the_last_explicit_check_is_kept_not_the_default():
    check = {"kind": "contains", "all": ["def f"]}
    plan = [step("S1", "x.py", check=check), step("S2", "x.py", deps=("S1",))]
    steps, _ = parse(plan)
    assert without_floor(steps[0].done_when) == check  # the floor is raised around it
    later = {"kind": "regex", "pattern": "return"}
    plan = [step("S1", "x.py", check=check), step("S2", "x.py", deps=("S1",), check=later)]
    steps, _ = parse(plan)
    assert without_floor(steps[0].done_when) == later


def test_twins_of_two_actions_are_one_step_of_the_first_writer():
    steps, errors = parse([step("S1", "x.py", action="coder"), step("S2", "x.py", action="critic")])
    assert errors == [] and ids(steps) == ["S1"] and steps[0].action == "coder"


def test_a_step_planned_between_twins_runs_after_the_merged_step():
    # write stats.py, test it, fix stats.py: refused before, the 1.5B's replan then ended
    # invalid_plan; now the test step reads the finished file
    plan = [
        step("S3", "stats.py", action="coder"),
        step("S4", "notes.md", deps=("S3",)),
        step("S5", "stats.py", action="coder", deps=("S4",), text="Fix what S4 found."),
        step("S6", "report.md", deps=("S5", "S4")),
    ]
    steps, errors = parse(plan)
    assert errors == [] and ids(steps) == ["S3", "S4", "S6"]
    by_id = {s.step_id: s for s in steps}
    assert by_id["S3"].depends_on == [] and by_id["S4"].depends_on == ["S3"]
    assert by_id["S3"].instructions.endswith("Fix what S4 found.")
    assert by_id["S6"].depends_on == ["S3", "S4"]


@pytest.mark.parametrize(
    ("plan", "why"),
    [
        (
            [step("S1", "x.md", deps=("S2",)), step("S2", "x.md", deps=("S1",))],
            "the twins depend on each other",
        ),
        (
            [step("S1", "x.md", text="a" * 5000), step("S2", "x.md", text="b" * 5000)],
            "instructions too long for one step",
        ),
        ([step("S1", "x.md"), step("S1", "x.md")], "duplicate ids"),
    ],
)
def test_an_unsafe_merge_is_left_for_validation_to_refuse(plan, why):
    steps, errors = parse(plan)
    assert steps is None, why
    assert any("both produce 'x.md'" in e or "duplicate step_id" in e for e in errors), errors


def test_merge_leaves_a_plan_without_twins_untouched():
    steps = PlanDraft.model_validate({"steps": [step("S1", "a.md"), step("S2", "b.md")]}).steps
    assert merge_same_outputs(steps) is steps
    assert (
        MAX_INSTRUCTIONS_CHARS
        == PlanDraft.model_json_schema()["$defs"]["Step"]["properties"]["instructions"]["maxLength"]
    )


# --------------------------------------------------------- pytest checks of unwritten files


def pytest_step(step_id, output, tests, deps=()):
    return step(
        step_id, output, action="coder", deps=deps, check={"kind": "pytest", "tests": tests}
    )


def test_pytest_check_of_a_file_no_step_writes_is_refused_with_advice():
    _, errors = parse([step("S1", "lib.py"), pytest_step("S2", "app.py", ["tests/test_app.py"])])
    (error,) = errors
    assert "step S2" in error and "'tests/test_app.py', which no step writes" in error
    assert "add a step that writes it" in error and "make this step depend on it" in error


def test_advice_lists_the_files_that_exist():
    plan = [pytest_step("S1", "app.py", ["tests/test_nope.py"])]
    _, errors = parse(plan, files=["tests/test_real.py", "src/app.py"])
    assert "name a file that exists: src/app.py, tests/test_real.py" in errors[0]


def test_a_check_of_a_file_another_step_writes_makes_its_step_depend_on_that_step():
    plan = [
        step("T", "tests/test_app.py", action="coder"),
        pytest_step("S1", "app.py", ["tests/test_app.py"]),
    ]
    steps, errors = parse(plan)
    assert errors == [] and steps is not None
    assert steps[1].depends_on == ["T"] and steps[0].depends_on == []


def deps(steps):
    return {s.step_id: s.depends_on for s in steps}


def test_a_package_planned_unordered_has_its_init_run_after_every_module():
    # the 1.5B's replan of textkit: three steps, no dependencies, each check only a parse
    plan = [
        step("S1", "textkit/words.py", action="coder"),
        step("S2", "textkit/count.py", action="coder"),
        step("S3", "textkit/__init__.py", action="coder"),
        step("S4", "tests/test_words.py", action="coder"),
    ]
    steps, errors = parse(plan)
    assert errors == [] and steps is not None
    assert deps(steps) == {"S1": [], "S2": [], "S3": ["S1", "S2"], "S4": []}


@pytest.mark.parametrize(
    ("plan", "wanted"),
    [
        # a chain: the last module depends on the one before only, and then on both
        (
            [("A", "a.py", ()), ("B", "b.py", ("A",)), ("C", "c.py", ("B",))],
            {"A": [], "B": ["A"], "C": ["B", "A"]},
        ),
        # the __init__.py already runs first (a module depends on it): the last module instead
        (
            [("I", "p/__init__.py", ()), ("A", "p/a.py", ("I",)), ("B", "p/b.py", ())],
            {"I": [], "A": ["I"], "B": ["I", "A"]},
        ),
    ],
)
def test_the_step_run_after_every_module_adds_no_cycle(plan, wanted):
    steps, errors = parse([step(i, out, action="coder", deps=d) for i, out, d in plan])
    assert errors == [] and deps(steps) == wanted


def test_a_plan_with_a_step_after_every_module_or_one_module_is_left_as_planned():
    ordered = [step("A", "a.py"), step("B", "b.py", deps=("A",)), step("R", "README.md")]
    steps, _ = parse(ordered)
    assert deps(steps) == {"A": [], "B": ["A"], "R": []}
    single = [step("A", "a.py"), step("T", "test_a.py"), step("R", "README.md")]
    steps, _ = parse(single)
    assert deps(steps) == {"A": [], "T": [], "R": []}


def test_advice_names_the_step_that_writes_the_file_when_depending_on_it_makes_a_cycle():
    plan = [
        step("T", "tests/test_app.py", action="coder", deps=("S1",)),
        pytest_step("S1", "app.py", ["tests/test_app.py"]),
    ]
    _, errors = parse(plan)
    assert "which step T writes" in errors[0] and "add 'T' to this step's depends_on" in errors[0]


def test_pytest_check_of_the_steps_own_artifact_is_refused():
    plan = [
        step("S0", "app.py"),
        pytest_step("S1", "tests/test_app.py", ["tests/test_app.py"], deps=("S0",)),
    ]
    _, errors = parse(plan, files=["tests/test_app.py"])  # even if an earlier round wrote it
    assert len(errors) == 1 and "own artifact 'tests/test_app.py'" in errors[0]


@pytest.mark.parametrize("case", ["written by a dependency", "among the thread's files"])
def test_pytest_check_of_a_file_the_check_will_hold_is_accepted(case):
    if case == "written by a dependency":
        plan = [
            step("T", "tests/test_app.py", action="coder"),
            pytest_step("S1", "app.py", ["tests/test_app.py"], deps=("T",)),
        ]
        steps, errors = parse(plan)
    else:  # the user's file, say
        plan = [pytest_step("S1", "app.py", ["tests/test_app.py"])]
        steps, errors = parse(plan, files=["tests/test_app.py"])
    assert errors == [] and steps is not None


def test_every_missing_test_file_is_named_at_once():
    plan = [pytest_step("S1", "app.py", ["tests/test_a.py", "tests/test_b.py", "tests/ok.py"])]
    _, errors = parse(plan, files=["tests/ok.py"])
    assert len(errors) == 2 and "test_a.py" in errors[0] and "test_b.py" in errors[1]


def test_a_thread_database_file_is_a_valid_sql_db():
    plan = [step("S1", "q.sql", check={"kind": "sql", "db": "data/shop.sqlite"})]
    assert parse(plan, files=["data/shop.sqlite"])[1] == []
    assert "cannot open" in parse(plan)[1][0]


def test_the_planner_is_told_where_pytest_files_come_from():
    assert "already among the files" in describe_kinds()


# ---------------------------------------------------------------------- the example plan


@pytest.mark.parametrize(
    ("goal", "draft", "output"),
    [
        ("Write a function add(a, b) in calc.py", None, "calc.py"),
        ("Summarise the meeting", None, DEFAULT_EXAMPLE_OUTPUT),
        ("Fix ../../etc/passwd and /abs/x.py", None, DEFAULT_EXAMPLE_OUTPUT),
        ('Quote "this" and a \\ backslash\nand a newline {braces}', None, DEFAULT_EXAMPLE_OUTPUT),
        ("", None, DEFAULT_EXAMPLE_OUTPUT),
        ("anything", {"steps": [step("S1", "src/a.py", action="coder")] * 2}, "src/a.py"),
        ("x", {"steps": [step("S1", "work/S1/a.md", action="shell")]}, DEFAULT_EXAMPLE_OUTPUT),
    ],
)
def test_the_example_plan_is_a_valid_one_step_plan_for_the_goal(goal, draft, output):
    registry = build_registry()
    text = example_plan(goal, registry, None if draft is None else invalid_draft(draft["steps"]))
    steps, errors = parse_plan(json.loads(text), actions=registry, max_steps=1)
    assert errors == [] and steps is not None and len(steps) == 1
    assert steps[0].expected_output == output
    assert steps[0].action in registry
    if goal.strip():
        assert steps[0].instructions == " ".join(goal.split())


def invalid_draft(steps):
    """A draft as the planner model returned it: well-formed, not (yet) validated."""
    return PlanDraft.model_construct(steps=[Step.model_construct(**s) for s in steps])


def test_the_example_uses_the_drafts_action_when_registered():
    registry = build_registry()
    draft = invalid_draft([step("S1", "a.py", action="coder")])
    assert json.loads(example_plan("g", registry, draft))["steps"][0]["action"] == "coder"


# ------------------------------------------------------------ through the planner's call


def ask(plan_answers, files):
    model = ScriptedChatModel(plan_answers)
    state = {"goal": "Make tests/test_app.py pass", "files": files, "step": 1}
    outcome = asyncio.run(
        ask_planner(
            Metered(model, "planner", "auto"),
            state,
            build_registry(),
            reason="",
            answer="",
            max_plan_steps=8,
        )
    )
    return outcome, model


def test_the_planner_may_check_with_a_test_file_already_in_the_thread():
    plan = {"steps": [pytest_step("S1", "app.py", ["tests/test_app.py"])]}
    outcome, model = ask([plan], {"tests/test_app.py": file_entry("def test(): ...", step=0)})
    assert outcome.errors == [] and len(model.calls) == 1


def test_another_steps_scratch_file_is_no_thread_file_for_a_check():
    plan = {"steps": [pytest_step("S1", "app.py", ["work/S9/test_app.py"])]}
    files = {"work/S9/test_app.py": file_entry("def test(): ...", step=0)}
    outcome, model = ask([plan, plan, plan], files)
    assert outcome.steps is None and "which no step writes" in outcome.errors[0]
    assert "work/S9" not in outcome.errors[0].split("name a file that exists:")[1]
    assert len(model.calls) == 3  # the same plan twice: a third try, shown an example


@pytest.mark.parametrize("scratch", ["work/S1/stats.py", "work/S7/stats.py", "work/stats.py"])
def test_a_scratch_output_below_which_is_a_known_file_writes_that_file(scratch):
    # a replan shown work/S1/critique.json planned the fix into the scratch space
    plan = [
        step("S2", scratch, action="coder", check={"kind": "python", "code": "assert 1"}),
        step("S3", "notes.md", deps=("S2",), check={"kind": "contains", "all": [scratch]}),
    ]
    steps, errors = parse_plan({"steps": plan}, actions=ACTIONS, max_steps=20, files=["stats.py"])
    assert errors == [] and steps[0].expected_output == "stats.py"
    assert without_floor(steps[1].done_when) == {"kind": "contains", "all": ["stats.py"]}


def test_a_scratch_output_below_which_is_another_steps_file_is_merged_into_that_step():
    plan = [
        step("S1", "app.py", action="coder"),
        step("S2", "work/S1/app.py", action="coder", deps=("S1",), text="Improve app.py."),
    ]
    steps, errors = parse(plan)
    assert errors == [] and ids(steps) == ["S1"] and "Improve app.py." in steps[0].instructions


def test_a_scratch_output_of_an_unknown_file_is_refused_with_a_path_to_use():
    steps, errors = parse([step("S1", "work/S1/analysis.md")])
    assert steps is None
    assert errors == [
        "step S1: work/ is scratch space, not an artifact; a step's expected_output is a "
        "file outside work/ (such as 'analysis.md')"
    ]


# ------------------------------------------------------------------ what the goal needs


def test_files_a_goal_names_are_found_and_numbers_are_not_files():
    goal = "stats.py has a bug: median([1, 2, 3, 4]) should be 2.5 (v1.2); fix it in stats.py."
    assert named_files(goal) == ["stats.py"]
    assert named_files("Write report.md and src/app.py, not /etc/passwd or ../x.txt.") == [
        "report.md",
        "src/app.py",
    ]


def test_steps_the_named_file_does_not_need_are_dropped():
    # the plan the 1.5B made for "Write report.md: ..." (bench/goals, citations): notes,
    # summary and a critique nobody asked for, none of them read by the report's step
    plan = [
        step("S1", "notes", action="researcher"),
        step("S2", "report.md", action="researcher", check={"kind": "exists"}),
        step("S3", "summary", action="writer", check={"kind": "exists"}),
        step("S4", "criticism", action="critic", check={"kind": "exists"}),
    ]
    steps, errors = parse_plan({"steps": plan}, actions=ACTIONS, max_steps=20, asked=["report.md"])
    assert errors == [] and ids(steps) == ["S2"]


def test_what_the_named_file_reads_checks_against_or_is_read_by_is_kept():
    plan = [
        step("T", "tests/test_app.py", action="coder"),
        step("N", "notes.md", action="researcher"),
        step("X", "extra.md"),  # connected to nothing the goal asks for
        pytest_step("A", "app.py", ["tests/test_app.py"], deps=("N",)),
        step("D", "docs.md", deps=("A",)),  # reads the asked file: documentation of it
        step("E", "index.md", deps=("D",)),  # through another step
    ]
    steps, errors = parse_plan({"steps": plan}, actions=ACTIONS, max_steps=20, asked=["app.py"])
    assert errors == [] and ids(steps) == ["T", "N", "A", "D", "E"]
    assert steps[2].depends_on == ["N", "T"]


def test_a_goal_naming_no_file_the_plan_writes_keeps_the_plan():
    plan = [step("S1", "notes.md"), step("S2", "summary.md", deps=("S1",)), step("S3", "x.md")]
    for asked in ([], ["data.csv"]):  # nothing named, or only an input
        steps, errors = parse_plan({"steps": plan}, actions=ACTIONS, max_steps=20, asked=asked)
        assert errors == [] and ids(steps) == ["S1", "S2", "S3"]


def test_the_planner_keeps_only_what_the_goal_asks_for():
    plan = {
        "steps": [
            step("S1", "report.md", action="writer"),
            step("S2", "summary.md", action="writer"),
        ]
    }
    model = ScriptedChatModel([plan])
    registry = build_registry()
    outcome = asyncio.run(
        ask_planner(
            Metered(model, "planner", "auto"),
            {"goal": "Write report.md on vector indexes."},
            registry,
            reason="",
            answer="",
            max_plan_steps=10,
            profile=SMALL_LOCAL,
        )
    )
    assert outcome.errors == [] and [s.step_id for s in outcome.steps] == ["S1"]


def test_a_file_named_like_a_test_id_or_a_traceback_line_is_that_file():
    # what the 1.5B and the 0.5B planned for the bughunt goal ("fix stats.py")
    plan = [
        step("S1", "stats.py:median([1, 2]) should be 1.5", action="coder"),
        step("T", "tests/test_stats.py", action="coder"),
        pytest_step("S2", "stats.py::test_median_even", ["tests/test_stats.py::test_even"]),
    ]
    steps, errors = parse_plan(
        {"steps": plan}, actions=ACTIONS, max_steps=20, asked=["stats.py"], files=["stats.py"]
    )
    assert errors == [] and steps is not None
    (fix,) = [s for s in steps if s.expected_output == "stats.py"]  # the two merged
    assert fix.done_when == {"kind": "pytest", "tests": ["tests/test_stats.py"]}
    assert "T" in fix.depends_on


def test_a_colon_in_a_name_that_is_no_known_file_stays():
    plan = [step("S1", "notes:draft.md")]
    steps, errors = parse_plan({"steps": plan}, actions=ACTIONS, max_steps=20, asked=["x.md"])
    assert errors == [] and steps[0].expected_output == "notes:draft.md"


# ------------------------------------------------ a step's pytest check of its own tests


def own_tests_plan(*extra, tests_check=None):
    check = tests_check or {"kind": "pytest", "tests": ["tests/test_stats.py"]}
    return [step("S1", "tests/test_stats.py", action="coder", check=check), *extra]


def test_a_step_s_own_tests_check_the_module_they_test():
    # the 1.5B, for a bug in stats.py: "write tests/test_stats.py, done when pytest runs it"
    fix = step("S2", "stats.py", action="coder", check={"kind": "exists"})
    steps, errors = parse_plan(
        {"steps": own_tests_plan(fix)},
        actions=ACTIONS,
        max_steps=5,
        files=["stats.py"],
        asked=["stats.py"],
    )
    assert errors == []
    by_id = {s.step_id: s for s in steps}
    assert by_id["S1"].done_when == {"kind": "non_empty"}
    assert by_id["S2"].depends_on == ["S1"]
    pytest_part = next(p for p in by_id["S2"].done_when["checks"] if p["kind"] == "pytest")
    assert pytest_part["tests"] == ["tests/test_stats.py"]


def test_own_tests_keep_the_rest_of_their_check_and_other_tests_stay():
    check = {
        "kind": "all",
        "checks": [
            {"kind": "contains", "all": ["def test_"]},
            {"kind": "pytest", "tests": ["tests/test_stats.py", "tests/test_old.py"]},
        ],
    }
    steps, errors = parse_plan(
        {"steps": own_tests_plan(step("S2", "stats.py", action="coder"), tests_check=check)},
        actions=ACTIONS,
        max_steps=5,
        files=["stats.py", "tests/test_old.py"],
    )
    assert errors == []
    tests_step = next(s for s in steps if s.step_id == "S1")
    assert tests_step.done_when == {
        "kind": "all",
        "checks": [
            {"kind": "contains", "all": ["def test_"]},
            {"kind": "pytest", "tests": ["tests/test_old.py"]},
        ],
    }


@pytest.mark.parametrize(
    "others",
    [
        [],  # nothing else is written: which module the tests are for is not known
        [step("S2", "a.py", action="coder"), step("S3", "b.py", action="coder")],
    ],
    ids=["no module", "two modules"],
)
def test_own_tests_with_no_one_module_to_check_are_refused_with_advice(others):
    steps, errors = parse_plan({"steps": own_tests_plan(*others)}, actions=ACTIONS, max_steps=5)
    assert steps is None
    assert any("own artifact" in e and "tests/test_stats.py" in e for e in errors)


def test_the_module_the_goal_names_takes_the_tests_among_several():
    plan = own_tests_plan(step("S2", "a.py", action="coder"), step("S3", "b.py", action="coder"))
    steps, errors = parse_plan(
        {"steps": plan}, actions=ACTIONS, max_steps=5, asked=["b.py", "tests/test_stats.py"]
    )
    assert errors == []
    by_id = {s.step_id: s for s in steps}
    assert "S1" in by_id["S3"].depends_on and "S2" not in by_id  # a.py: not asked, not needed
