import pytest

from agent.plan import plan_actual_diff
from agent.plan.progress import merge_replan, ready_steps, unchanged_given
from agent.plan.steps import Step
from agent.plan.validation import parse_plan as _parse_plan
from agent.vfs.entries import file_entry
from tests.fakes import chain, step

ACTIONS = {"writer", "coder", "researcher", "critic"}


def parse_plan(*args, **kwargs):
    """The repairs a small model's profile turns on are under test here."""
    return _parse_plan(*args, repairs=True, **kwargs)


def parse(steps, max_steps=50):
    return parse_plan({"steps": steps}, actions=ACTIONS, max_steps=max_steps)


def test_valid_plan_parses():
    steps, errors = parse(chain(3))
    assert errors == [] and [s.step_id for s in steps] == ["S1", "S2", "S3"]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([step("S1", "a.md"), step("S1", "b.md")], "duplicate step_id 'S1'"),
        ([step("S1", "a.md", deps=("S9",))], "unknown step 'S9'"),
        ([step("S1", "a.md", deps=("S2",)), step("S2", "b.md", deps=("S1",))], "cycle"),
        (
            [step("S1", "a.md", deps=("S2",)), step("S2", "a.md", deps=("S1",))],
            "both produce 'a.md'",
        ),
        ([step("S1", "a.md", action="shell")], "unknown action 'shell'"),
        ([step("S1", "../a.md")], "climbs out"),
        ([step("S1", "work/S1/a.md")], "scratch space"),
        ([], "no steps"),
        ([step("S1", "a.md", check={"kind": "teleport"})], "done_when"),
    ],
)
def test_invalid_plans_are_explained(steps, message):
    parsed, errors = parse(steps)
    assert parsed is None
    assert any(message in e for e in errors), errors


def test_a_huge_plan_is_rejected_without_validating_each_step():
    parsed, errors = parse(chain(10_000), max_steps=50)
    assert parsed is None and errors == ["the plan has 10000 steps; at most 50 are allowed"]


def test_malformed_plan_data_is_an_error_not_an_exception():
    parsed, errors = parse_plan({"steps": [{"step_id": 3}]}, actions=ACTIONS, max_steps=5)
    assert parsed is None and errors
    parsed, errors = parse_plan("not a plan", actions=ACTIONS, max_steps=5)
    assert parsed is None and errors


def test_plan_actual_diff_matches_seed_000():
    plan = {"steps": [step("S1", "a.md"), step("S2", "b.md")]}
    files = {"a.md": {}, "extra.md": {}}
    assert plan_actual_diff(plan, files) == {
        "expected_not_produced": ["b.md"],
        "produced_not_expected": ["extra.md"],
        "overlap": ["a.md"],
        "completion_ratio": 0.5,
    }
    seed_shape = {"subtasks": [{"expected_artifact": "a.md"}]}
    assert plan_actual_diff(seed_shape, files)["completion_ratio"] == 1.0


def test_ready_steps_follow_depends_on():
    steps = [step("S1", "a.md"), step("S2", "b.md"), step("S3", "c.md", deps=("S1", "S2"))]
    plan = {"version": 1, "steps": steps}
    assert [s["step_id"] for s in ready_steps(plan, {})] == ["S1", "S2"]
    done = {"a.md": file_entry("a", step=1, status="done")}
    assert [s["step_id"] for s in ready_steps(plan, done)] == ["S2"]
    failed_b = {**done, "b.md": file_entry("b", step=1, status="failed")}
    assert [s["step_id"] for s in ready_steps(plan, failed_b)] == ["S2"]


def test_replan_keeps_done_unaffected_steps_and_reruns_affected_ones():
    old_steps = [
        step("S1", "a.md"),
        step("S2", "b.md", deps=("S1",)),
        step("S3", "c.md", deps=("S2",)),
    ]
    planned, _ = parse(old_steps)  # as the first plan was stored: its checks raised
    old = {"version": 1, "steps": [s.model_dump() for s in planned]}
    files = {p: file_entry(p, step=1, status="done") for p in ("a.md", "b.md", "c.md")}
    better = step("S2", "b.md", deps=("S1",), text="Write b.md better.")
    changed = [old_steps[0], better, old_steps[2]]
    new_steps, errors = parse(changed)
    plan, stale = merge_replan(old, new_steps, files)
    assert plan["version"] == 2
    # S2 changed, and S3 depends on it: both are re-run; S1 is kept.
    assert stale == ["b.md", "c.md"]


def test_the_planners_schema_lists_the_registered_actions_under_the_same_name():
    from agent.plan.steps import plan_draft_for

    draft = plan_draft_for(("coder", "writer"))
    schema = draft.model_json_schema()
    assert draft.__name__ == "PlanDraft" and schema["title"] == "PlanDraft"
    assert schema["$defs"]["Step"]["properties"]["action"]["enum"] == ["coder", "writer"]
    assert plan_draft_for(("coder", "writer")) is draft  # built once per set of actions


def test_an_action_outside_the_schema_is_still_refused_with_advice():
    from agent.plan.steps import plan_draft_for

    draft = plan_draft_for(("coder",)).model_validate(
        {
            "steps": [
                {"step_id": "S1", "action": "shell", "instructions": "x", "expected_output": "a"}
            ]
        }
    )
    steps, errors = parse_plan(draft, actions={"coder"}, max_steps=5)
    assert steps is None and any("unknown action 'shell'" in e for e in errors)


@pytest.mark.parametrize(
    "goal",
    [
        "Write stats.py. " + " == ".join(f"f({i})" for i in range(3000)),  # ~27 KB of calls
        "Write a.py with " + "(" * 50_000,  # parentheses that never close
        "Write notes.md. " + "x" * 100_000,  # a huge goal given as one word
        'Write data.json: {"k": ' * 5_000,  # keys that never close
    ],
)
def test_a_huge_or_hostile_goal_is_planned_without_an_error(goal):
    first = goal.split()[1].rstrip(".:")
    plan = [{"step_id": "S1", "action": "coder", "instructions": "do it", "expected_output": first}]
    steps, errors = _parse_plan({"steps": plan}, actions=ACTIONS, max_steps=5, goal=goal)
    assert errors == [] and steps is not None and steps[0].expected_output == first


def test_a_user_s_module_still_as_given_is_unchanged_whatever_its_layout():
    given = "def f(x):\n    return x\n"
    plan = {"steps": [{"step_id": "S1", "expected_output": "m.py"}]}

    def files(content: str) -> dict:
        entry = file_entry(content, step=1, status="done", origin="user")
        return {"m.py": entry | {"given": given}}

    assert unchanged_given(plan, files("def f(x):\n\n    return x  # same code\n")) == ["m.py"]
    assert unchanged_given(plan, files("def f(x):\n    return x + 1\n")) == []
    assert unchanged_given(plan, files("def f(x:\n")) == []  # unparsable: not the same code
    # the agent's own module, or a user's file no step writes, is not asked about
    own = {"m.py": file_entry(given, step=1, status="done")}
    assert unchanged_given(plan, own) == []
    assert unchanged_given({"steps": []}, files(given)) == []
    # a replan writes such a module again, though its step did not change
    steps = [Step.model_validate(step("S1", "m.py", action="coder"))]
    first, _ = merge_replan(None, steps, {})
    _, stale = merge_replan(first, steps, files(given), reopen=["m.py"])
    assert stale == ["m.py"]
    _, kept = merge_replan(first, steps, files(given))
    assert kept == []


def test_a_plan_made_with_a_human_s_answer_says_so_and_every_later_plan_keeps_it():
    from agent.plan.planner import apply_plan

    steps, _ = parse([step("S1", "a.md")])
    assert steps is not None
    first = apply_plan({"goal": "g"}, steps)["plan"]
    assert "answered" not in first
    answered = apply_plan({"goal": "g", "plan": first}, steps, answered=True)["plan"]
    assert answered["answered"] is True
    later = apply_plan({"goal": "g", "plan": answered}, steps)["plan"]
    assert later["answered"] is True and later["version"] == 3
