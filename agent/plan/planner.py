"""Asking the planner model for a plan: one retry with the validation errors (docs/architecture.md),
one more with an example plan when the retry repeats the invalid plan, then the merge with
the plan it replaces. No graph here: the planner node calls this."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agent.checks import describe_kinds
from agent.controller.subagents import SubAgent, describe_registry
from agent.errors import ErrorClass, classify
from agent.models.factory import Metered
from agent.models.profiles import DEFAULT, Profile
from agent.plan.criteria import GoalCriteria, merged, read_criteria, verified
from agent.plan.direct import direct_steps, is_artifact_path, role_for
from agent.plan.floor import without_floor
from agent.plan.needs import named_files
from agent.plan.open_values import unsourced_values
from agent.plan.progress import merge_replan, unchanged_given
from agent.plan.steps import MAX_INSTRUCTIONS_CHARS, PlanDraft, Step, plan_draft_for
from agent.plan.validation import parse_plan
from agent.prompts import render
from agent.vfs.entries import is_scratch, summarize_files
from agent.vfs.origin import given, is_user_file, planner_view
from agent.vfs.quoting import data_block
from agent.vocabulary import Planning

__all__ = ["PlanOutcome", "apply_plan", "ask_planner", "describe_databases", "example_plan"]


@dataclass
class PlanOutcome:
    """The planner's answer: valid steps, or the errors of its last attempt."""

    steps: list[Step] | None
    errors: list[str] = field(default_factory=list)
    fallback: str = ""
    """Why the plan was made in code although the model was asked (empty: it was not)."""
    criteria: GoalCriteria = field(default_factory=GoalCriteria)
    """What the goal asks of its files, verified against the goal (kept with the plan)."""
    dropped: list[str] = field(default_factory=list)
    """The criteria the model gave that the goal does not state (for the log)."""


async def ask_planner(
    metered: Metered,
    state: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    *,
    reason: str,
    answer: str,
    max_plan_steps: int,
    planning: str = Planning.UPFRONT,
    databases: Collection[str] = (),
    profile: Profile = DEFAULT,
    workspace: Sequence[str] = (),
) -> PlanOutcome:
    """Plan (or replan) the goal; an invalid answer is retried once with its errors.
    ``databases``: the names (never the paths) of the databases the user declared, which
    the planner is shown and its sql checks may name. The planner model plans every first
    plan unless ``profile`` plans in code; a plan made in code (one step per file the goal
    names) is also the fallback when the model's plans stayed invalid, said in ``fallback``.
    ``workspace``: the paths of the workspace folder, which the planner is shown."""
    files = state.get("files") or {}
    goal = str(state.get("goal", ""))
    told = f"{goal}\n\n{answer}" if answer.strip() else goal  # the answer states criteria too
    kept_criteria = read_criteria((state.get("plan") or {}).get("criteria"))

    def parsed(draft: PlanDraft) -> PlanOutcome:
        criteria, dropped = verified(draft.criteria or GoalCriteria(), told)
        criteria = merged(kept_criteria, criteria)
        steps, errors = parse_plan(
            draft,
            actions=registry,
            max_steps=max_plan_steps,
            databases=databases,
            files=(*(p for p in files if not is_scratch(p)), *workspace),
            asked=named_files(goal),
            # the human's answer states examples too ("split_words('Hi') == ['hi']")
            goal=told,
            kept=user_modules(files),
            repairs=profile.plan_repairs,
            criteria=criteria,
        )
        return PlanOutcome(steps, errors, criteria=criteria, dropped=dropped)

    first = not state.get("plan")
    direct = direct_steps(goal, files, registry, max_plan_steps, answer) if first else None

    def in_code(criteria: GoalCriteria | None = None) -> PlanOutcome | None:
        if direct is None:
            return None
        outcome = parsed(PlanDraft(steps=direct, criteria=criteria))
        return outcome if outcome.steps is not None else None

    if direct is not None and profile.plan_in_code:
        # the plan is code's; what the goal asks of its files is still the model's to read
        if (coded := in_code(await ask_criteria(metered, told, files))) is not None:
            return coded
    outcome = await _ask_model(metered, state, registry, parsed, reason, answer, max_plan_steps,
                               planning, databases, workspace)  # fmt: skip
    if outcome.steps is None and (coded := in_code()) is not None:
        listed = "; ".join(outcome.errors)[:600]
        coded.fallback = (
            f"the planner model's plan stayed invalid ({listed}): planned in code, one step "
            "per file the goal names"
        )
        return coded
    return outcome


async def _ask_model(
    metered: Metered,
    state: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    parsed: Callable[[PlanDraft], PlanOutcome],
    reason: str,
    answer: str,
    max_plan_steps: int,
    planning: str,
    databases: Collection[str],
    workspace: Sequence[str] = (),
) -> PlanOutcome:
    """The planner model's plan: one retry with the errors, one more with an example plan
    when the retry repeated the invalid plan word for word."""
    messages = _planner_messages(
        state, registry, reason, answer, max_plan_steps, planning, databases, workspace
    )
    outcome = PlanOutcome(None)
    answers: list[str] = []
    # docs/architecture.md: one retry with the errors, then escalate; a retry that repeats
    # the invalid plan word for word (a greedy small model does) earns one more, shown an
    # example of a valid plan for the goal: the errors alone did not move it
    for attempt in range(3):
        draft, raw = await metered.astructured(messages, plan_draft_for(tuple(sorted(registry))))
        if draft is None:
            outcome = PlanOutcome(None, [f"the answer is not a valid plan: {raw}"])
        else:
            outcome = parsed(draft)
        if outcome.steps is not None:
            return outcome
        shown = raw[:2000] if draft is None else draft.model_dump_json()[:4000]
        repeated = shown in answers
        answers.append(shown)
        if attempt == 2 or (attempt == 1 and not repeated):
            break
        retry = _retry_prompt(outcome.errors, state, registry, draft, repeated=repeated)
        messages += [AIMessage(shown), HumanMessage(retry)]
    return outcome


async def ask_criteria(
    metered: Metered, goal: str, files: Mapping[str, Any]
) -> GoalCriteria | None:
    """What the goal asks of its files, asked of the planner model alone (when the plan is
    made in code): criteria under a schema, verified like a plan's; None when the answer
    does not parse (the plan then has the goal's literals only)."""
    messages = [
        SystemMessage(render("criteria")),
        HumanMessage(render("criteria_input", goal=goal, user_files=planner_view(files))),
    ]
    try:
        answer, _raw = await metered.astructured(messages, GoalCriteria)
    except Exception as exc:
        if classify(exc) is ErrorClass.TRANSIENT:
            raise
        return None
    return answer


def _planner_messages(
    state: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    reason: str,
    answer: str,
    max_plan_steps: int,
    planning: str,
    databases: Collection[str],
    workspace: Sequence[str] = (),
) -> list[BaseMessage]:
    """The planner's first prompt: the actions, check kinds and databases it may use, then
    the goal, the answer or reason for replanning, the current plan and the files."""
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
        plan=json.dumps(_as_planned(old), indent=1) if old else "",
        files=data_block(summarize_files(files, int(state.get("step") or 0))),
        user_files=planner_view(files) + workspace_view(workspace),
    )
    return [SystemMessage(system), HumanMessage(human)]


WORKSPACE_SHOWN = 300
"""Paths of the workspace folder the planner is shown; steps find the rest with glob."""


def workspace_view(paths: Sequence[str]) -> str:
    """The planner prompt's lines on the workspace folder ("" without one)."""
    if not paths:
        return ""
    shown = "\n".join(f"- {p}" for p in paths[:WORKSPACE_SHOWN])
    text = render("planner_workspace", count=len(paths), shown=min(len(paths), WORKSPACE_SHOWN),
                  paths=shown)  # fmt: skip
    return "\n\n" + text.rstrip()


def _as_planned(plan: Mapping[str, Any]) -> Mapping[str, Any]:
    """The current plan with each check as the planner chose it (the floor is raised again
    on the answer: ``agent.plan.floor``)."""
    steps = plan.get("steps")
    if not isinstance(steps, list):
        return plan
    shown = [
        {**s, "done_when": without_floor(s.get("done_when"))} if isinstance(s, Mapping) else s
        for s in steps
    ]
    return {**plan, "steps": shown}


def _retry_prompt(
    errors: list[str],
    state: Mapping[str, Any],
    registry: Mapping[str, SubAgent],
    draft: PlanDraft | None,
    *,
    repeated: bool,
) -> str:
    """The retry's prompt: the errors, and an example plan when the answer repeated an
    earlier invalid one (``draft``: that answer, None when it did not parse)."""
    listed = "\n".join(f"- {e}" for e in errors)
    if not repeated:
        return render("planner_retry", errors=listed)
    example = example_plan(str(state.get("goal", "")), registry, draft)
    return render(
        "planner_retry_example",
        errors=listed,
        actions=", ".join(sorted(registry)),
        check_kinds=describe_kinds(),
        example=example,
    )


DEFAULT_EXAMPLE_OUTPUT = "answer.md"


def example_plan(goal: str, registry: Mapping[str, SubAgent], draft: PlanDraft | None) -> str:
    """A one-step plan for ``goal`` as JSON (``prompts/planner_example.txt``): the step
    does the goal and writes the file the invalid draft or the goal names (else
    ``answer.md``), with an action the draft used when it is registered."""
    used = [s.action for s in draft.steps] if draft is not None else []
    named = [s.expected_output for s in draft.steps] if draft is not None else []
    named += named_files(goal)
    output = next((p for p in named if is_artifact_path(p)), DEFAULT_EXAMPLE_OUTPUT)
    action = next((a for a in used if a in registry), role_for(output, registry))
    instructions = " ".join(goal.split())[:MAX_INSTRUCTIONS_CHARS] or "Do what the goal asks."
    return render(
        "planner_example",
        action=json.dumps(action),
        instructions=json.dumps(instructions),
        expected_output=json.dumps(output),
    ).strip()


def describe_databases(names: Collection[str]) -> str:
    """The planner prompt's line on the databases a sql check may name."""
    if not names:
        return render("planner_no_databases").rstrip()
    return render("planner_databases", names=", ".join(sorted(names))).rstrip()


def apply_plan(
    state: Mapping[str, Any],
    steps: list[Step],
    criteria: GoalCriteria | None = None,
    *,
    answered: bool = False,
) -> dict[str, Any]:
    """The update for a new plan version: history kept, stale artifacts re-opened (and
    those holding a value the goal leaves open that no source gives, which a human may just
    have given: :mod:`agent.plan.open_values`, or a user's file no step changed), the goal's
    criteria kept with the plan (a replan starts from them). ``answered``: the plan is made
    with a human's answer; the plan (and every later one) says so, since a human has then
    read the goal's words (``agent.reflection.situation.Situation.words_read``)."""
    files = state.get("files") or {}
    old = state.get("plan")
    # a file holding a guess, or still as the user gave it, is written again
    reopen = [*unsourced_values(str(state.get("goal") or ""), files), *unchanged_given(old, files)]
    plan, stale = merge_replan(old, steps, files, reopen=reopen if old else ())
    if criteria is not None and (criteria.files or criteria.question):
        plan = {**plan, "criteria": criteria.model_dump(mode="json", exclude_defaults=True)}
    if answered or (old or {}).get("answered"):
        plan = {**plan, "answered": True}
    update: dict[str, Any] = {"plan": plan}
    if old:
        update["plan_history"] = [old]
    if stale:
        update["files"] = {p: {**files[p], "status": "active"} for p in stale}
    return update


def user_modules(files: Mapping[str, Any]) -> dict[str, str]:
    """Each of the user's Python modules as the user gave it (``agent.vfs.origin.given``):
    what a step rewriting it must keep (``agent.plan.kept``)."""
    return {
        path: given(entry)
        for path, entry in files.items()
        if path.lower().endswith(".py") and is_user_file(entry)
    }
