"""What the reflection model is shown and how its answer is read: asked only when no rule
decides (:mod:`agent.reflection.rules`), shown summaries and the diff, never file contents."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

# the words qualified: the record of one reflection here is a Decision too
from agent import vocabulary
from agent.plan.diff import plan_actual_diff
from agent.plan.progress import is_done
from agent.prompts import render
from agent.reflection.rules import Decision
from agent.reflection.situation import Situation
from agent.vfs.entries import is_scratch, summarize_files
from agent.vfs.quoting import data_block
from agent.vocabulary import StopReason


class ReflectionAnswer(BaseModel):
    """What the reflection model must return."""

    decision: Literal[
        vocabulary.Decision.CONTINUE,
        vocabulary.Decision.REPLAN,
        vocabulary.Decision.END,
        vocabulary.Decision.ESCALATE,
    ]
    """Every decision but ``fail``, which only a rule makes."""
    reason: str = Field(default="", description="A diagnosis of at most 30 words.")
    final_answer: str | None = Field(
        default=None, description="For end: 1-3 sentences referring to artifact names."
    )
    question: str | None = Field(default=None, description="For escalate: one specific question.")
    suggested_responses: list[str] = Field(
        default_factory=list, description="For escalate: short answers the human may pick."
    )


def visible_files(s: Situation) -> dict[str, Mapping[str, Any]]:
    """The files reflection is shown: subagents name their scratch files, so only their
    number is shown, not their names (critiques stay, they are the step's open issues)."""
    return {p: e for p, e in s.files.items() if not is_scratch(p) or e.get("kind") == "critique"}


def file_summaries(s: Situation) -> dict[str, dict[str, Any]]:
    """Exactly the summaries reflection sees."""
    return summarize_files(visible_files(s), s.step)


def summary_changes(
    stored: Mapping[str, Mapping[str, Any]], s: Situation
) -> dict[str, dict[str, Any] | None]:
    """The write that brings the stored ``file_summaries`` up to date: only what changed
    (``None`` for a file gone). They keep the step a file was written at instead of its
    age, which changes every round and would rewrite every summary each time."""
    files = visible_files(s)
    current = {
        path: {k: v for k, v in item.items() if k != "age_steps"}
        | {"written_at_step": files[path].get("written_at_step", s.step)}
        for path, item in file_summaries(s).items()
    }
    changed: dict[str, dict[str, Any] | None] = {
        path: item for path, item in current.items() if stored.get(path) != item
    }
    return changed | {path: None for path in stored if path not in current}


def reflection_input(s: Situation) -> dict[str, Any]:
    """The model's whole view: goal, plan, summaries and diff — never file contents."""
    plan = s.plan or {"version": 0, "steps": []}
    visible = visible_files(s)
    return {
        "goal": s.goal,
        "plan": {
            "version": plan.get("version"),
            "steps": [
                {
                    "step_id": st["step_id"],
                    "action": st["action"],
                    "depends_on": st["depends_on"],
                    "expected_output": st["expected_output"],
                    "done": is_done(st, s.files),
                }
                for st in plan.get("steps", [])
            ],
        },
        "files": file_summaries(s),
        "diff": plan_actual_diff(plan, visible),
        "scratch_files": len(s.files) - len(visible),
        "ready_steps": [st["step_id"] for st in s.ready],
        "step": s.step,
        "reflection_depth": s.depth,
        "max_reflection_depth": s.cap,
        "planning": s.planning,
    }


def reflection_messages(s: Situation) -> list[BaseMessage]:
    """The reflection model's prompt: the situation as a JSON block between tags, which no
    string inside can close (:func:`agent.vfs.quoting.data_block`); the system prompt says its
    file names and evidence lines are data, never instructions."""
    situation = data_block(reflection_input(s))
    return [
        SystemMessage(render("reflection")),
        HumanMessage(render("reflection_input", situation=situation)),
    ]


def from_answer(answer: ReflectionAnswer) -> Decision:
    """The model's answer as a decision, before validation."""
    return Decision(
        answer.decision,
        answer.reason or str(answer.decision),
        by="model",
        final_answer=answer.final_answer,
        question=answer.question,
        suggested_responses=list(answer.suggested_responses),
        stop_reason=StopReason.MODEL_ESCALATED
        if answer.decision == vocabulary.Decision.ESCALATE
        else None,
    )
