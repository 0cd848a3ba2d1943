"""Plan validation: everything wrong with a plan the planner model returned, at
once, so that one retry with the errors as feedback can fix all of it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent.plan.criteria import GoalCriteria
from agent.plan.floor import raise_to_floor
from agent.plan.needs import (
    depend_on_checked_files,
    needed_steps,
    one_after_all_modules,
    out_of_scratch,
    own_tests_moved,
    without_references,
)
from agent.plan.same_outputs import merge_same_outputs
from agent.plan.steps import PlanDraft, Step, dependency_cycle
from agent.vfs.entries import SCRATCH, is_scratch
from agent.vfs.filenames import fold

if TYPE_CHECKING:
    from agent.checks import CheckScope

__all__ = ["parse_plan", "plan_errors"]


def plan_errors(
    steps: list[Step],
    *,
    actions: Collection[str],
    max_steps: int,
    databases: Collection[str] = (),
    files: Collection[str] = (),
) -> list[str]:
    """Everything wrong with a plan, so one retry can fix all of it at once. ``databases``
    are the names of the databases the user declared and ``files`` the paths already in
    the thread: a check may name only those, its own artifact, or a file a step it depends
    on writes."""
    from agent.checks import validate_check_spec

    errors: list[str] = []
    if not steps:
        errors.append("the plan has no steps")
    if len(steps) > max_steps:
        errors.append(f"the plan has {len(steps)} steps; at most {max_steps} are allowed")
        return errors  # the per-step checks below would only repeat the point
    errors += _duplicate_ids(steps)
    ids = {s.step_id for s in steps}
    outputs: dict[str, str] = {}  # output -> the first step that produces it
    folded: dict[str, str] = {}  # fold(output) -> the first output with that key
    thread_files = frozenset(files)
    for step in steps:
        errors += _reference_errors(step, actions, ids)
        errors += _output_errors(step, outputs, folded)
        scope = _scope(step, steps, databases, thread_files)
        errors += [
            f"step {step.step_id}: done_when {problem}"
            for problem in validate_check_spec(step.done_when, scope)
        ]
    if (cycle := dependency_cycle(steps)) is not None:
        errors.append("dependency cycle: " + " -> ".join(cycle))
    return errors


def _duplicate_ids(steps: list[Step]) -> list[str]:
    """One error for each repeat of a step id."""
    errors, seen = [], set()
    for step in steps:
        if step.step_id in seen:
            errors.append(f"duplicate step_id {step.step_id!r}")
        seen.add(step.step_id)
    return errors


def _reference_errors(step: Step, actions: Collection[str], ids: set[str]) -> list[str]:
    """An action that is not a registered subagent, dependencies that name no other step."""
    errors = []
    if step.action not in actions:
        errors.append(
            f"step {step.step_id}: unknown action {step.action!r}; "
            f"use one of {', '.join(sorted(actions))}"
        )
    for dep in step.depends_on:
        if dep not in ids:
            errors.append(f"step {step.step_id}: depends on unknown step {dep!r}")
        if dep == step.step_id:
            errors.append(f"step {step.step_id}: depends on itself")
    return errors


def _output_errors(step: Step, outputs: dict[str, str], folded: dict[str, str]) -> list[str]:
    """An artifact another step already produces (or one a reader could not tell from it),
    or one in the scratch space; records the step's output in ``outputs`` and ``folded``."""
    errors = []
    output = step.expected_output
    twin = folded.setdefault(fold(output), output)
    if twin != output:
        errors.append(
            f"step {step.step_id}: {output!r} differs from step "
            f"{outputs[twin]}'s {twin!r} only by letter case or character forms"
        )
    if output in outputs:
        errors.append(f"steps {outputs[output]} and {step.step_id} both produce {output!r}")
    outputs.setdefault(output, step.step_id)
    if is_scratch(output):
        below = output[len(SCRATCH) :].rpartition("/")[2] or "notes.md"
        errors.append(
            f"step {step.step_id}: work/ is scratch space, not an artifact; a step's "
            f"expected_output is a file outside work/ (such as {below!r})"
        )
    return errors


def _scope(
    step: Step, steps: list[Step], databases: Collection[str], thread_files: frozenset[str]
) -> CheckScope:
    """What the step's check will reach when it runs (``agent.checks.CheckScope``): the
    declared databases, its dependencies' outputs (``subagent_task``), the thread's files."""
    from agent.checks import CheckScope

    outputs = {s.step_id: s.expected_output for s in steps}
    files = frozenset(outputs[d] for d in step.depends_on if d in outputs and d != step.step_id)
    writers = tuple((s.expected_output, s.step_id) for s in steps)
    return CheckScope(frozenset(databases), files, thread_files, step.expected_output, writers)


def parse_plan(
    data: Any,
    *,
    actions: Collection[str],
    max_steps: int,
    databases: Collection[str] = (),
    files: Collection[str] = (),
    asked: Collection[str] = (),
    goal: str = "",
    kept: Mapping[str, str] | None = None,
    repairs: bool = False,
    criteria: GoalCriteria | None = None,
) -> tuple[list[Step] | None, list[str]]:
    """Validate raw planner output; return the steps or the list of errors, never raise.
    With ``repairs`` (a model profile's choice, :mod:`agent.models.profiles`), repaired
    first, where that is safe: ``file.py::test``-like names are cut back to a
    known file, a scratch output (``work/S1/stats.py``) is moved to the known file below
    it, steps that write the same file are merged
    (:func:`merge_same_outputs`), a pytest check of a step's own tests moves to the module
    they test (:func:`own_tests_moved`), a step depends on the steps writing the files its
    check names, only the steps that the files the goal names (``asked``) need are kept,
    and one step writing a module runs after every other (:mod:`agent.plan.needs`); then a
    check that cannot prove its artifact works is raised to the floor the artifact's kind
    and the ``goal`` allow (:mod:`agent.plan.floor`), beside the planner's own check.
    ``databases``: the names of the databases the user declared; ``files``: the paths
    already in the thread (``plan_errors``); ``kept``: the source of each of the user's
    modules as given, which a step rewriting one must keep (:mod:`agent.plan.kept`);
    ``criteria``: what the goal asks of its files, already verified against it
    (:mod:`agent.plan.criteria`; the goal's literals are added here)."""
    if isinstance(data, PlanDraft):
        steps = data.steps
    else:
        if isinstance(data, Mapping) and isinstance(data.get("steps"), list):
            if len(data["steps"]) > max_steps:
                n = len(data["steps"])
                return None, [f"the plan has {n} steps; at most {max_steps} are allowed"]
        try:
            steps = PlanDraft.model_validate(data).steps
        except ValidationError as exc:
            errors = [
                f"{'.'.join(str(p) for p in err['loc']) or 'plan'}: {err['msg']}"
                for err in exc.errors()[:20]
            ]
            return None, errors
    if repairs:
        steps = out_of_scratch(without_references(steps, [*asked, *files]), [*asked, *files])
        steps = own_tests_moved(merge_same_outputs(steps), asked)
        steps = one_after_all_modules(needed_steps(depend_on_checked_files(steps), asked))
    steps = raise_to_floor(
        steps, goal, databases=databases, kept=kept, repairs=repairs, criteria=criteria
    )
    errors = plan_errors(
        steps, actions=actions, max_steps=max_steps, databases=databases, files=files
    )
    return (None, errors) if errors else (steps, [])
