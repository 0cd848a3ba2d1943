"""The messages a step's model is given, each rendered from a prompt file in ``prompts/``:
the task (or its revision, with the critique's issues) and the two reminders the tool loop
may add to a draft."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agent.prompts import render
from agent.vfs.entries import Workspace, is_scratch, scratch_prefix


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
) -> list[BaseMessage]:
    """The conversation a draft starts from: the first draft's task, or a revision's."""
    step_id = str(step["step_id"])
    values = {
        "goal": goal,
        "step_id": step_id,
        "instructions": step["instructions"],
        "expected_output": step["expected_output"],
        "done_when": json.dumps(step.get("done_when")),
        "scratch": scratch_prefix(step_id),
        "inputs": "\n".join(f"- {p}" for p in inputs) or "(none)",
    }
    if feedback is None:
        human = render("subagent_task", **values)
    else:
        issues = json.dumps(feedback.get("issues", []), indent=1)
        human = render("subagent_revision", **values, mode=feedback.get("mode"), issues=issues)
    return [SystemMessage(system_prompt), HumanMessage(human)]


def no_tool_call_reminder(path: str) -> HumanMessage:
    """Seed 002: say exactly what is missing, once, rather than "not produced" later."""
    return HumanMessage(render("subagent_no_tool_call", path=path, tool="write_file"))


def unimplemented_reminder(path: str, names: str) -> HumanMessage:
    """The artifact left the functions ``names`` without a body: rewrite it."""
    return HumanMessage(render("subagent_unimplemented", path=path, names=names, tool="write_file"))
