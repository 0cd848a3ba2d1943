"""Executable plans: the step and plan models the planner model fills, and the
dependency graph their ``depends_on`` draws."""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic import BaseModel, Field, create_model, field_validator

from agent.plan.criteria import GoalCriteria
from agent.vfs.entries import PathError, validate_path
from agent.vfs.filenames import nfc

__all__ = [
    "MAX_INSTRUCTIONS_CHARS",
    "MAX_PLAN_STEPS",
    "MAX_STEP_ID_CHARS",
    "STEP_ID",
    "PlanDraft",
    "Step",
    "dependency_cycle",
    "plan_draft_for",
    "step_id_problem",
]

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
    criteria: GoalCriteria | None = Field(
        default=None,
        description="What the goal itself asks of each file, each criterion quoting the goal.",
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


def dependency_cycle(steps: list[Step]) -> list[str] | None:
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
