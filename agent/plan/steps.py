"""Executable plans (seed 001): validated steps, readiness, replanning, plan-vs-actual diff."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator

from agent.vfs.entries import PathError, validate_path
from agent.vfs.filenames import fold, nfc

if TYPE_CHECKING:
    from agent.checks import CheckScope

MAX_STEP_ID_CHARS = 40
MAX_INSTRUCTIONS_CHARS = 8000
# A step id names its scratch folder, work/<step_id>/: a "/" would nest one step's scratch in
# another's ("S1/x" inside "S1"), ".." would climb out, a newline or a space would break the
# prompts' "step_id: S1" lines. A letter or digit first, so "." and ".." cannot match.
STEP_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_STEP_ID_CHARS - 1}}}")


def step_id_problem(step_id: str) -> str | None:
    """Why ``step_id`` cannot name a step (and its scratch folder), or None."""
    if STEP_ID.fullmatch(step_id):
        return None
    shown = repr(step_id) if len(step_id) <= 60 else repr(step_id[:60]) + "…"
    return (
        f"step_id {shown} is not a short safe name: use 1 to {MAX_STEP_ID_CHARS} letters, "
        "digits, '_', '.' or '-', starting with a letter or digit (e.g. S1)"
    )


class Step(BaseModel):
    """One executable step: who does it, what it must produce and how "done" is proven."""

    step_id: str = Field(
        description="Stable id, e.g. S1: letters, digits, '_', '.' or '-', at most 40.",
        json_schema_extra={"pattern": f"^{STEP_ID.pattern}$", "maxLength": MAX_STEP_ID_CHARS},
    )
    depends_on: list[str] = Field(default_factory=list, description="Ids that must finish first.")
    action: str = Field(description="A registered subagent name, never a free string.")
    instructions: str = Field(
        min_length=1, max_length=MAX_INSTRUCTIONS_CHARS, description="What the step does."
    )
    expected_output: str = Field(description="The artifact path the step must produce.")
    done_when: dict[str, Any] | str = Field(
        default_factory=lambda: {"kind": "non_empty"},
        description='A check spec such as {"kind": "contains", "all": ["..."]}, or a rubric.',
    )

    @field_validator("step_id")
    @classmethod
    def _id_is_a_safe_name(cls, value: str) -> str:
        if (problem := step_id_problem(value)) is not None:
            raise ValueError(problem)
        return value

    @field_validator("done_when")
    @classmethod
    def _check_paths_in_nfc(cls, value: dict[str, Any] | str) -> dict[str, Any] | str:
        # the one spelling the VFS stores names under, so the check finds the files
        if not isinstance(value, dict):
            return value
        tests = value.get("tests")
        if isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            return {**value, "tests": [nfc(t) for t in tests]}
        return value

    @field_validator("expected_output")
    @classmethod
    def _output_is_a_vfs_path(cls, value: str) -> str:
        try:
            return validate_path(value)
        except PathError as exc:
            raise ValueError(str(exc)) from None


MAX_PLAN_STEPS = 1_000  # ceiling of Context.max_plan_steps; validation stops past it


class PlanDraft(BaseModel):
    """What the planner model returns: the steps only; the version is ours to set."""

    steps: list[Step] = Field(
        max_length=MAX_PLAN_STEPS,
        description="The steps, in any order; depends_on sets the order.",
    )


@functools.lru_cache(maxsize=64)
def plan_draft_for(actions: tuple[str, ...]) -> type[PlanDraft]:
    """``PlanDraft`` whose steps' ``action`` is one of ``actions`` in its JSON schema, so a
    server that enforces the schema (``json_schema``, a grammar on llama.cpp) cannot let a
    model invent a subagent; an answer that ignores the schema is still refused by
    ``plan_errors``, with its advice. Same name, so the tool the model is asked to call
    stays ``PlanDraft``."""
    action = Field(
        description="The subagent that does the step: one of the actions listed.",
        json_schema_extra={"enum": list(actions)},  # validated by plan_errors, with its advice
    )
    step = create_model("Step", __base__=Step, action=(str, action))
    steps = Field(
        max_length=MAX_PLAN_STEPS, description=PlanDraft.model_fields["steps"].description
    )
    listed: Any = list[step]
    return create_model("PlanDraft", __base__=PlanDraft, steps=(listed, steps))


def _cycle(steps: list[Step]) -> list[str] | None:
    """The first dependency cycle found, as a path, or None; iterative, so a long chain of
    dependencies cannot exhaust Python's recursion limit."""
    deps = {s.step_id: list(s.depends_on) for s in steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root in deps:
        if root in state:
            continue
        path: list[str] = [root]
        stack = [iter(deps[root])]
        state[root] = 1
        while stack:
            dep = next(stack[-1], None)
            if dep is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            elif dep in deps and dep not in state:
                state[dep] = 1
                path.append(dep)
                stack.append(iter(deps[dep]))
    return None


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
    ids = [s.step_id for s in steps]
    seen: set[str] = set()
    for step_id in ids:
        if step_id in seen:
            errors.append(f"duplicate step_id {step_id!r}")
        seen.add(step_id)
    outputs: dict[str, str] = {}
    thread_files = frozenset(files)
    folded: dict[str, str] = {}  # fold(output) -> the first output with that key
    for step in steps:
        if step.action not in actions:
            errors.append(
                f"step {step.step_id}: unknown action {step.action!r}; "
                f"use one of {', '.join(sorted(actions))}"
            )
        for dep in step.depends_on:
            if dep not in seen:
                errors.append(f"step {step.step_id}: depends on unknown step {dep!r}")
            if dep == step.step_id:
                errors.append(f"step {step.step_id}: depends on itself")
        twin = folded.setdefault(fold(step.expected_output), step.expected_output)
        if twin != step.expected_output:
            errors.append(
                f"step {step.step_id}: {step.expected_output!r} differs from step "
                f"{outputs[twin]}'s {twin!r} only by letter case or character forms"
            )
        if step.expected_output in outputs:
            errors.append(
                f"steps {outputs[step.expected_output]} and {step.step_id} both produce "
                f"{step.expected_output!r}"
            )
        outputs.setdefault(step.expected_output, step.step_id)
        if step.expected_output.startswith("work/"):
            errors.append(f"step {step.step_id}: work/ is scratch space, not an artifact")
        for problem in validate_check_spec(
            step.done_when, _scope(step, steps, databases, thread_files)
        ):
            errors.append(f"step {step.step_id}: done_when {problem}")
    if (cycle := _cycle(steps)) is not None:
        errors.append("dependency cycle: " + " -> ".join(cycle))
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
) -> tuple[list[Step] | None, list[str]]:
    """Validate raw planner output; return the steps or the list of errors, never raise.
    Steps that write the same file are merged first where that is safe
    (:func:`merge_same_outputs`). ``databases``: the names of the databases the user
    declared; ``files``: the paths already in the thread (``plan_errors``)."""
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
    steps = merge_same_outputs(steps)
    errors = plan_errors(
        steps, actions=actions, max_steps=max_steps, databases=databases, files=files
    )
    return (None, errors) if errors else (steps, [])


def merge_same_outputs(steps: list[Step]) -> list[Step]:
    """``steps`` with every group of steps that write the same file merged into one, where
    that is safe; an unsafe group is left as it is, for ``plan_errors`` to refuse.

    Small models split "write x.py" and "improve x.py" into two steps: both would write the
    file, and neither's check would judge the other's work. The merged step keeps the first
    step's id and place, does every step's instructions in dependency order, depends on
    what any of them depended on (but each other), and takes over their dependants. Its
    check is the last step's (the one that sees the finished file; an earlier step's check
    would judge a draft the later step rewrites), unless the last one has only the default
    ``non_empty``: then the last explicit check among them, the stricter. Safe means: ids
    unique, the same action, instructions that fit a step, and no dependency cycle through
    another step."""
    ids = [s.step_id for s in steps]
    if len(set(ids)) != len(ids):
        return steps
    groups: dict[str, list[Step]] = {}
    for step in steps:
        groups.setdefault(step.expected_output, []).append(step)
    merged = steps
    for group in groups.values():
        if len(group) > 1:
            merged = _merged_group(merged, [s.step_id for s in group])
    return merged


def _merged_group(steps: list[Step], group_ids: list[str]) -> list[Step]:
    """``steps`` with the steps ``group_ids`` merged, or ``steps`` unchanged if unsafe."""
    by_id = {s.step_id: s for s in steps}
    group = _in_dependency_order([by_id[i] for i in group_ids])
    if group is None or len({s.action for s in group}) != 1:
        return steps
    members = set(group_ids)
    keep = next(s.step_id for s in steps if s.step_id in members)  # the first in plan order
    instructions = "\n\n".join(s.instructions for s in group)
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        return steps
    depends = [d for s in group for d in s.depends_on if d not in members]
    one = group[-1].model_copy(
        update={
            "step_id": keep,
            "instructions": instructions,
            "depends_on": list(dict.fromkeys(depends)),
            "done_when": _last_check(group),
        }
    )
    out: list[Step] = []
    for step in steps:
        if step.step_id == keep:
            out.append(one)
        elif step.step_id not in members:
            deps = [keep if d in members else d for d in step.depends_on]
            out.append(step.model_copy(update={"depends_on": list(dict.fromkeys(deps))}))
    return steps if _cycle(out) is not None else out


def _last_check(group: list[Step]) -> dict[str, Any] | str:
    """The check of the last step of ``group`` that has more than the default one."""
    default = Step.model_fields["done_when"].get_default(call_default_factory=True)
    explicit = [s.done_when for s in group if s.done_when != default]
    return explicit[-1] if explicit else group[-1].done_when


def _in_dependency_order(group: list[Step]) -> list[Step] | None:
    """``group`` ordered so that a step comes after those of the group it depends on
    (plan order otherwise); None when they depend on each other in a cycle."""
    left = list(group)
    ordered: list[Step] = []
    while left:
        names = {s.step_id for s in left}
        ready = next((s for s in left if not names & set(s.depends_on) - {s.step_id}), None)
        if ready is None:
            return None
        ordered.append(ready)
        left.remove(ready)
    return ordered


def new_plan(steps: list[Step], version: int) -> dict[str, Any]:
    """The plain-data plan stored in state."""
    return {"version": version, "steps": [s.model_dump() for s in steps]}


def is_done(step: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> bool:
    """A step is done when its artifact exists and its check passed."""
    entry = files.get(step["expected_output"])
    return bool(entry and entry.get("status") == "done")


def ready_steps(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Steps not yet done whose dependencies are all done, in plan order."""
    if not plan:
        return []
    steps = plan.get("steps", [])
    done = {s["step_id"] for s in steps if is_done(s, files)}
    return [dict(s) for s in steps if s["step_id"] not in done and set(s["depends_on"]) <= done]


def pending_steps(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Steps not yet done, ready or not."""
    if not plan:
        return []
    return [dict(s) for s in plan.get("steps", []) if not is_done(s, files)]


def plan_actual_diff(plan: Mapping[str, Any] | None, files: Mapping[str, Any]) -> dict[str, Any]:
    """Compare what the plan expects with what exists (seed 000, exactly)."""
    steps = (plan or {}).get("steps") or (plan or {}).get("subtasks") or []
    expected = {s.get("expected_output") or s.get("expected_artifact") for s in steps}
    expected.discard(None)
    produced = set(files)
    return {
        "expected_not_produced": sorted(expected - produced),
        "produced_not_expected": sorted(produced - expected),
        "overlap": sorted(expected & produced),
        "completion_ratio": len(expected & produced) / max(len(expected), 1),
    }


_IDENTITY = ("action", "instructions", "expected_output", "done_when", "depends_on")


def merge_replan(
    old_plan: Mapping[str, Any] | None,
    new_steps: list[Step],
    files: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], list[str]]:
    """Adopt a new plan version, keeping finished work that the change does not touch.

    A step is kept when an identical step (same id, action, instructions, output, check and
    dependencies) was already done and every dependency is kept too; every other step whose
    artifact exists is affected and must run again (seed 001: re-run only affected steps).

    Returns the new plan and the artifact paths that must be re-run (stale).
    """
    old = {s["step_id"]: s for s in (old_plan or {}).get("steps", [])}
    version = int((old_plan or {}).get("version", 0)) + 1
    plan = new_plan(new_steps, version)
    kept: set[str] = set()
    # depends_on is acyclic, so a few passes settle "kept" transitively.
    for _ in range(len(plan["steps"]) + 1):
        changed = False
        for step in plan["steps"]:
            sid = step["step_id"]
            if sid in kept:
                continue
            before = old.get(sid)
            same = before is not None and all(before.get(k) == step[k] for k in _IDENTITY)
            if same and is_done(step, files) and set(step["depends_on"]) <= kept:
                kept.add(sid)
                changed = True
        if not changed:
            break
    stale = [
        s["expected_output"]
        for s in plan["steps"]
        if s["step_id"] not in kept and is_done(s, files)
    ]
    return plan, stale
