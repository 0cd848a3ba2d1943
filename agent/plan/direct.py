"""A plan made in code: one step per file the goal names, each told to do what the goal
asks and write its file, proven by the evidence floor (:mod:`agent.plan.floor`).

Two uses, both decided outside this module: the first plan of a model whose profile plans in
code (a small local model planned eight steps for one JSON file, four of them writing it;
:mod:`agent.models.profiles`), and the fallback of every profile when the planner model's
plans stay invalid through its retries. Goals that name no file, more than a few, or a test
file (tests and the module need the planner's dependencies) get no plan here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from agent.controller.subagents import SubAgent
from agent.plan.needs import named_files
from agent.plan.steps import MAX_INSTRUCTIONS_CHARS, Step
from agent.prompts import render
from agent.vfs.entries import PathError, is_scratch, validate_path
from agent.vfs.filenames import is_test_file
from agent.vfs.origin import is_user_file
from agent.vfs.quoting import quote_data

__all__ = [
    "ARTIFACT_EXTENSIONS",
    "MAX_DIRECT_STEPS",
    "direct_steps",
    "goal_outputs",
    "is_artifact_path",
    "is_whole_goal",
    "role_for",
]

MAX_DIRECT_STEPS = 3
# what a file a goal asks for ends with; a name such as "os.path" or "e.g" is not one
ARTIFACT_EXTENSIONS = frozenset(
    ".py .sql .json .md .txt .rst .html .csv .yaml .yml .toml .js .ts .sh .ini .cfg .xml".split()
)
PROSE_EXTENSIONS = frozenset({".md", ".txt", ".rst", ".html", ""})  # a writer's; else a coder's


def goal_outputs(goal: str, files: Mapping[str, Any]) -> list[str]:
    """The files the goal asks for: the artifact files it names that are not in the thread,
    or, when every file it names is the user's, the user's files it names (to edit)."""
    named = [p for p in named_files(goal) if _is_artifact(p)]
    new = [p for p in named if p not in files]
    if new:
        return new
    return [p for p in named if is_user_file(files.get(p)) and not is_test_file(p)]


def direct_steps(
    goal: str,
    files: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    max_steps: int,
    answer: str = "",
) -> list[Step] | None:
    """One step per file the goal asks for, each depending on the steps before it (a module
    may import its sibling), or None when the goal needs the planner model (module
    docstring). The checks are ``non_empty``: the floor raises them to what the artifact's
    kind and the goal's criteria allow. A human's ``answer`` is told to every step."""
    if not goal.strip() or not registry:
        return None
    outputs = goal_outputs(goal, files)
    limit = min(MAX_DIRECT_STEPS, max_steps)
    if not outputs or len(outputs) > limit or any(is_test_file(p) for p in outputs):
        return None
    steps = []
    for n, path in enumerate(outputs):
        others = [p for p in outputs if p != path]
        instructions = render(
            "planner_direct_step",
            path=path,
            others=render("planner_direct_others", files=", ".join(others), path=path)
            if others
            else "",
        ).strip()
        if answer.strip():
            told = render("planner_direct_answer", answer=quote_data("answer", answer, 600))
            instructions = f"{instructions} {told.strip()}"
        steps.append(
            Step(
                step_id=f"S{n + 1}",
                depends_on=[f"S{k + 1}" for k in range(n)],
                action=_action(path, goal, registry),
                instructions=instructions[:MAX_INSTRUCTIONS_CHARS],
                expected_output=path,
            )
        )
    return steps


def is_whole_goal(step: Mapping[str, Any]) -> bool:
    """Whether ``step`` is a plan made in code of one step that is the whole goal: its
    instructions say only to do what the goal asks (no sibling, no human's answer told),
    so the goal's own words are the step's task."""
    path = str(step.get("expected_output") or "")
    alone = render("planner_direct_step", path=path, others="").strip()
    return not step.get("depends_on") and str(step.get("instructions") or "") == alone


def _action(path: str, goal: str, registry: Mapping[str, SubAgent]) -> str:
    """The role whose own tools the goal names (a report from "the search tool" needs the
    role that has it), else the writer for prose and the coder for anything else."""
    words = set(re.findall(r"[a-z0-9_]+", goal.lower()))
    for name, spec in registry.items():
        tools = {str(getattr(t, "name", "")).lower() for t in spec.get("tools") or ()}
        if any(t in words or t.replace("_", " ") in goal.lower() for t in tools if t):
            return name
    return role_for(path, registry)


def role_for(path: str, registry: Mapping[str, SubAgent]) -> str:
    """The writer for prose, the coder for anything else (else the first registered role)."""
    role = "writer" if posixpath.splitext(path)[1].lower() in PROSE_EXTENSIONS else "coder"
    return role if role in registry else next(iter(registry), role)


def _is_artifact(path: str) -> bool:
    """A file a step may write whose name says it is an artifact (module constant)."""
    return posixpath.splitext(path)[1].lower() in ARTIFACT_EXTENSIONS and is_artifact_path(path)


def is_artifact_path(path: str) -> bool:
    """Whether a step may write ``path``: a VFS path as given, not scratch space."""
    try:
        return validate_path(path) == path and not is_scratch(path)
    except PathError:
        return False
