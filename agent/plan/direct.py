"""Plans a goal without asking the planner model, when the goal is small enough for one
step per file it names (issue 22: "a goal small enough for one step gets a one-step plan").

On the 1.5B the planner model was the product's weakest link: asked for ``inventory.json``
it planned eight steps, four of them writing the file, with a schema check contradicting
the goal; asked to fix ``stats.py`` it echoed the role descriptions as instructions. The
plain model asked once solved those goals. When the goal names the files it wants, the
plan is already written in the goal: one step per file, each told to do what the goal asks
and write its file, proven by the evidence floor (:mod:`agent.plan.floor`). The model
planner is kept for everything else: goals that name no file, or more than a few, name a
test file (tests and the module need the planner's dependencies). A goal that asks the user
first pauses on that question before any plan (:func:`goal_question`, the planner node), and
is planned here once answered, each step told the answer.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from agent.controller.subagents import SubAgent
from agent.plan.needs import is_test_file, named_files
from agent.plan.steps import MAX_INSTRUCTIONS_CHARS, Step
from agent.prompts import render
from agent.vfs.entries import PathError, is_scratch, validate_path
from agent.vfs.origin import is_user_file
from agent.vfs.quoting import quote_data

__all__ = [
    "ARTIFACT_EXTENSIONS",
    "MAX_DIRECT_STEPS",
    "direct_steps",
    "goal_outputs",
    "goal_question",
    "is_artifact_path",
    "role_for",
]

MAX_DIRECT_STEPS = 3
# what a file a goal asks for ends with; a name such as "os.path" or "e.g" is not one
ARTIFACT_EXTENSIONS = frozenset(
    ".py .sql .json .md .txt .rst .html .csv .yaml .yml .toml .js .ts .sh .ini .cfg .xml".split()
)
PROSE_EXTENSIONS = frozenset({".md", ".txt", ".rst", ".html", ""})  # a writer's; else a coder's
# the goal wants the human's answer before the work: a step cannot know it
_ASKS_HUMAN = re.compile(
    r"\b(?:ask|check with|confirm with|consult)\s+(?:the\s+|a\s+)?"
    r"(?:user|human|operator|owner|team|me|us)\b",
    re.IGNORECASE,
)


# words after which "ask the user" is still the goal's own instruction to the agent
_INSTRUCTING = frozenset("and then first please always also so now but or".split())
_YOU = re.compile(r"\byou\s+(?:must|should|need\s+to|have\s+to)\s*$", re.IGNORECASE)
_LAST_WORD = re.compile(r"(\w+)\W*$")


def _instruction(goal: str) -> re.Match[str] | None:
    """The first "ask the user" that instructs the agent: at a clause's start (after the
    text's start, punctuation or a line break), after a joining word ("and then ask the
    user"), or after "you must". A goal describing a program ("a CLI that should ask the
    user for a name", "a function to ask the user") or forbidding it ("do not ask the
    user") asks the human nothing."""
    for found in _ASKS_HUMAN.finditer(goal):
        before = goal[: found.start()]
        clause = re.split(r"[.!?:;,\n]", before)[-1]
        if not clause.strip() or _YOU.search(clause):
            return found
        last = _LAST_WORD.search(clause)
        if last is not None and last.group(1).lower() in _INSTRUCTING:
            return found
    return None


def asks_human(goal: str) -> bool:
    """Whether the goal tells the agent to ask the user something before doing it."""
    return _instruction(goal) is not None


def goal_question(goal: str) -> str | None:
    """The sentence of the goal that tells the agent to ask the user (what the first pause
    quotes), or None when it asks nothing. On the 1.5B the model planner, given such a goal,
    planned a step writing a made-up ``user_answer.txt`` and the run ended ``success`` on a
    guessed region: the question goes to the human before any step runs."""
    found = _instruction(goal)
    if found is None:
        return None
    start = max(goal.rfind(mark, 0, found.start()) for mark in (". ", "! ", "? ", "\n"))
    ends = [i for mark in (". ", "! ", "? ", "\n") if (i := goal.find(mark, found.end())) >= 0]
    end = min(ends) + 1 if ends else len(goal)
    return goal[start + 1 if start >= 0 else 0 : end].strip()


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
    kind and the goal allow. A goal that asks the user is planned once the human answered
    (``answer``), which every step is told."""
    if not goal.strip() or not registry or (asks_human(goal) and not answer.strip()):
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
