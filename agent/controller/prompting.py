"""The messages a step's model is given, each rendered from a prompt file in ``prompts/``:
the task (or its revision, with the critique's issues) and the two reminders the tool loop
may add to a draft.

A step is asked in one of two ways. Through its tools (``subagent_task``): the model lists,
reads and writes files by tool calls. Or directly (``subagent_direct``), when the model is
not given tool schemas and the step needs no tool but the file tools: its few small input
files are in the prompt and the model replies with the artifact in a code fence, as a user
asking the model plainly would (on Qwen2.5-Coder-1.5B the tool path cost ~4x the prompt
tokens and handed back the function unimplemented in 12 of 18 failed drafts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent.checks.citations import needs_sources
from agent.checks.shown import checks_listed, shown_check
from agent.controller.focus import Focus
from agent.prompts import render
from agent.tools.text_calls import fence_language
from agent.vfs.entries import Workspace, is_scratch, scratch_prefix

DIRECT_INPUT_FILES = 8
DIRECT_INPUT_CHARS = 12_000
"""A step with more input than this is read through ``read_file``, not put in its prompt."""


def readable_inputs(workspace: Workspace) -> list[str]:
    """The files the step is told it can read (its scratch space is listed apart)."""
    return [p for p in workspace.ls() if not is_scratch(p)]


def task_messages(
    step: Mapping[str, Any],
    *,
    goal: str,
    system_prompt: str,
    inputs: list[str],
    feedback: Mapping[str, Any] | None,
    folder: bool = False,
) -> list[BaseMessage]:
    """The conversation a draft starts from: the first draft's task, or a revision's;
    ``folder``: the run has a workspace folder, which the step explores with its tools."""
    step_id = str(step["step_id"])
    values = {
        "run_goal": run_goal(goal, str(step["instructions"])),
        "step_id": step_id,
        "instructions": step["instructions"],
        "expected_output": step["expected_output"],
        "done_when": json.dumps(shown_check(step.get("done_when"))),
        "scratch": scratch_prefix(step_id),
        "inputs": "\n".join(f"- {p}" for p in inputs) or "(none)",
    }
    if folder:
        values["inputs"] += "\n" + render("subagent_workspace").rstrip()
    if feedback is None:
        human = render("subagent_task", **values)
    else:
        issues = json.dumps(feedback.get("issues", []), indent=1)
        human = render("subagent_revision", **values, mode=feedback.get("mode"), issues=issues)
        human += repeated_note(feedback, str(step["expected_output"]))
    return [SystemMessage(system_prompt), HumanMessage(human)]


def direct_inputs(
    step: Mapping[str, Any], workspace: Workspace, *, extra_tools: bool, sourced: bool = False
) -> dict[str, str] | None:
    """The files to put in a direct prompt (the step's readable inputs, its own artifact
    aside), or None when the step needs its tools: extra tools (search, MCP, ...), a check
    that needs their results, or more input (its own draft included) than a prompt should
    carry. ``sourced``: a revision of a draft whose tools already returned its sources, which
    edits the text (the evidence lists the URLs the tools returned; the check still traces
    every citation to them). On the 1.5B, a report citing one URL no search returned was
    revised through the tools, searching again for 14 calls and 24k tokens, until the run's
    time budget ran out."""
    if workspace.folder is not None:
        return None  # a folder is explored through the tools, never pasted into a prompt
    traced = needs_sources(step.get("done_when"))  # its cited URLs come from its tools
    if (extra_tools or traced) and not (sourced and traced):  # only a traced check's revision
        return None
    path = step["expected_output"]
    paths = [p for p in readable_inputs(workspace) if p != path]
    files = {p: workspace.read(p) for p in paths[: DIRECT_INPUT_FILES + 1]}
    size = sum(map(len, files.values())) + len(workspace.contents().get(path, ""))
    if len(files) > DIRECT_INPUT_FILES or size > DIRECT_INPUT_CHARS:
        return None
    return files


def direct_messages(
    step: Mapping[str, Any],
    *,
    goal: str,
    system_prompt: str,
    files: Mapping[str, str],
    draft: str,
    feedback: Mapping[str, Any] | None,
    computed: bool = False,
    as_asked: bool = False,
) -> list[BaseMessage]:
    """The conversation of a draft asked directly: the task with its input files (and the
    file it edits as it is now: the user's ``stats.py`` to fix, which a model that never saw
    it rewrote without its ``mean``), and for a revision the current draft and the failing
    evidence, answered with the whole file in one fence (small models patch poorly).
    ``computed``: the reply is a program printing the file (:mod:`agent.controller.computed`),
    ``draft`` the program that printed the failing draft (the file it edits is in ``files``).
    ``as_asked``: a first draft of a step that is the whole goal is asked as the goal is
    written, its files after it (``Profile.goal_as_asked``)."""
    path = str(step["expected_output"])
    values = _direct_values(step, goal, files)
    first, revision = _COMPUTED if computed else _DIRECT
    if as_asked and feedback is None and not computed and goal.strip():
        if draft.strip():  # the file it edits, as it is now, is one of the files given
            values["files"] += _fenced(path, draft, "subagent_direct_file")
        human = render("subagent_as_asked", goal=goal.strip(), **values)
        return [SystemMessage(system_prompt), HumanMessage(human)]
    if computed:  # a program printing JSON copies JSON it is shown: the checks as lines
        values["done_when"] = checks_listed(step.get("done_when"))
    if feedback is None or (computed and not draft.strip()):
        if draft.strip() and not computed:
            values["files"] += _fenced(path, draft, "subagent_direct_current")
        if not computed:
            values["done_when_line"] = done_when_line(step.get("done_when"))
        human = render(first, **values)
    else:
        issues = "\n".join(_issue_line(i) for i in feedback.get("issues", []))
        human = render(
            revision,
            **values,
            language="python" if computed else fence_language(path),
            draft=_as_lines(draft),
            issues=issues or "(no detail)",
        ) + repeated_note(feedback, path)
    return [SystemMessage(system_prompt), HumanMessage(human)]


def focused_messages(
    step: Mapping[str, Any],
    *,
    goal: str,
    system_prompt: str,
    focus: Focus,
    feedback: Mapping[str, Any],
) -> list[BaseMessage]:
    """A revision asked for the failing functions only (:mod:`agent.controller.focus`):
    those functions, the evidence, and as context the user's version of them and what they
    call; the reply's functions are spliced into the file by code."""
    path = str(step["expected_output"])
    values = _direct_values(step, goal, {})
    names = ("functions " if len(focus.names) > 1 else "function ") + " and ".join(focus.names)
    given = render("subagent_focused_given", content=focus.given) if focus.given else ""
    helpers = (
        render("subagent_focused_helpers", expected_output=path, content=focus.helpers)
        if focus.helpers
        else ""
    )
    issues = "\n".join(_issue_line(i) for i in feedback.get("issues", []))
    human = render(
        "subagent_focused_revision",
        **values,
        names=names,
        current=focus.current,
        issues=issues or "(no detail)",
        given=given,
        helpers=helpers,
    ) + repeated_note(feedback, path)
    return [SystemMessage(system_prompt), HumanMessage(human)]


def feedback_evidence(feedback: Mapping[str, Any]) -> str:
    """The failing evidence a revision is given, as one text (what :func:`focus_for` reads)."""
    return "\n".join(str(i.get("evidence", "")) for i in feedback.get("issues", []))


_DIRECT = ("subagent_direct", "subagent_direct_revision")
_COMPUTED = ("subagent_computed", "subagent_computed_revision")


def _direct_values(step: Mapping[str, Any], goal: str, files: Mapping[str, str]) -> dict[str, str]:
    """What every prompt of a step asked directly is filled with: the goal, the step, its
    check and its input files in fences."""
    return {
        "run_goal": run_goal(goal, str(step["instructions"])),
        "instructions": step["instructions"],
        "expected_output": str(step["expected_output"]),
        "done_when": json.dumps(shown_check(step.get("done_when"))),
        "files": "".join(_fenced(p, text, "subagent_direct_file") for p, text in files.items()),
    }


def run_goal(goal: str, instructions: str) -> str:
    """The goal line a step's prompt opens with, or nothing when it would say nothing new:
    no goal, or a goal the instructions already hold whole (a task asked as its own goal)."""
    goal = goal.strip()
    if not goal or goal in instructions:
        return ""
    return render("subagent_run_goal", goal=goal)


def done_when_line(spec: Any) -> str:
    """What a first draft is told of its check, or nothing when the check shows no more
    than its kind (``{"kind": "python"}`` tells the model nothing it can act on)."""
    shown = shown_check(spec)
    if isinstance(shown, dict) and set(shown) <= {"kind"}:
        return ""
    return render("subagent_done_when_line", done_when=json.dumps(shown))


def repeated_note(feedback: Mapping[str, Any], path: str) -> str:
    """What a revision asked again is told: its answer was a draft that already failed."""
    return render("subagent_repeated", expected_output=path) if feedback.get("repeated") else ""


def _as_lines(text: str) -> str:
    """``text`` ending with a newline (unless empty), so the fence that follows closes."""
    return text if text.endswith("\n") or not text else text + "\n"


def _fenced(path: str, content: str, prompt: str) -> str:
    return render(prompt, path=path, language=fence_language(path), content=_as_lines(content))


def _issue_line(issue: Mapping[str, Any]) -> str:
    """One issue as a line the model reads: where, what shows it, what to change."""
    where = f" at {issue['location']}" if issue.get("location") else ""
    line = f"- {issue.get('severity', 'issue')}{where}: {issue.get('evidence', '')}"
    return line + (f" Suggestion: {issue['suggestion']}" if issue.get("suggestion") else "")


def no_tool_call_reminder(path: str, *, direct: bool = False) -> HumanMessage:
    """Say exactly what is missing, once, rather than "not produced" later (a draft asked
    directly was asked for a fence, not a tool call)."""
    if direct:
        return HumanMessage(render("subagent_no_fence", path=path))
    return HumanMessage(render("subagent_no_tool_call", path=path, tool="write_file"))


def unimplemented_reminder(path: str, names: str) -> HumanMessage:
    """The artifact left the functions ``names`` without a body: rewrite it."""
    return HumanMessage(render("subagent_unimplemented", path=path, names=names, tool="write_file"))
