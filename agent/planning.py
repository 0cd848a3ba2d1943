"""Asking the planner model for a plan: one retry with the validation errors (docs/architecture.md),
then the merge with the plan it replaces. No graph here: the planner node calls this."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agent.checks import describe_kinds
from agent.models import Metered
from agent.plan import Step, merge_replan, parse_plan, plan_draft_for
from agent.prompts import render
from agent.quoting import data_block
from agent.subagents import SubAgent, describe_registry
from agent.user_files import planner_view
from agent.vfs import summarize_files

__all__ = ["PlanOutcome", "ask_planner", "apply_plan", "describe_databases"]


@dataclass
class PlanOutcome:
    """The planner's answer: valid steps, or the errors of its last attempt."""

    steps: list[Step] | None
    errors: list[str] = field(default_factory=list)


async def ask_planner(
    metered: Metered,
    state: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    *,
    reason: str,
    answer: str,
    max_plan_steps: int,
    planning: str = "upfront",
    databases: Collection[str] = (),
) -> PlanOutcome:
    """Plan (or replan) the goal; an invalid answer is retried once with its errors.
    ``databases``: the names (never the paths) of the databases the user declared, which
    the planner is shown and its sql checks may name."""
    files = state.get("files") or {}
    old = state.get("plan")
    system = render(
        "planner",
        actions=describe_registry(registry),
        check_kinds=describe_kinds(),
        databases=describe_databases(databases),
        max_plan_steps=max_plan_steps,
        planning=render(f"planning_{planning}"),
    )
    human = render(
        "planner_input",
        goal=state.get("goal", ""),
        answer=answer,
        reason=reason,
        plan=json.dumps(old, indent=1) if old else "",
        files=data_block(summarize_files(files, int(state.get("step") or 0))),
        user_files=planner_view(files),
    )
    messages: list[BaseMessage] = [SystemMessage(system), HumanMessage(human)]
    outcome = PlanOutcome(None)
    for _attempt in range(2):  # docs/architecture.md: one retry with the errors, then escalate
        draft, raw = await metered.astructured(messages, plan_draft_for(tuple(sorted(registry))))
        if draft is None:
            outcome = PlanOutcome(None, [f"the answer is not a valid plan: {raw}"])
        else:
            steps, errors = parse_plan(
                draft, actions=registry, max_steps=max_plan_steps, databases=databases
            )
            outcome = PlanOutcome(steps, errors)
        if outcome.steps is not None:
            return outcome
        shown = raw[:2000] if draft is None else draft.model_dump_json()[:4000]
        retry = render("planner_retry", errors="\n".join(f"- {e}" for e in outcome.errors))
        messages += [AIMessage(shown), HumanMessage(retry)]
    return outcome


def describe_databases(names: Collection[str]) -> str:
    """The planner prompt's line on the databases a sql check may name."""
    if not names:
        return render("planner_no_databases").rstrip()
    return render("planner_databases", names=", ".join(sorted(names))).rstrip()


def apply_plan(state: Mapping[str, Any], steps: list[Step]) -> dict[str, Any]:
    """The update for a new plan version: history kept, stale artifacts re-opened."""
    files = state.get("files") or {}
    old = state.get("plan")
    plan, stale = merge_replan(old, steps, files)
    update: dict[str, Any] = {"plan": plan}
    if old:
        update["plan_history"] = [old]
    if stale:
        update["files"] = {p: {**files[p], "status": "active"} for p in stale}
    return update
