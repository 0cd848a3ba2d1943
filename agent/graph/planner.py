"""The ``planner`` node: take in the turn (``agent.graph.turn``), plan or replan when asked
(``agent.plan.planner``), then send each ready step to a subagent, or go to reflection when
none is ready."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from agent.context import Context, as_context
from agent.events import emit, plan_event, progress_message, step_event, told
from agent.graph.inputs import StateView, declared_databases, workspace_folder
from agent.graph.memories import memories_taken_in
from agent.graph.model_errors import last_attempt, model_failure
from agent.graph.pauses import invalid_plan, question_first
from agent.graph.roles import Roles, learnt_update
from agent.graph.routes import PlannerRoute, command_for
from agent.graph.turn import take_in
from agent.graph.updates import combined, with_update
from agent.models.profiles import profile_for
from agent.plan.planner import apply_plan, ask_planner
from agent.plan.progress import ready_steps
from agent.reflection.budget import budget_of
from agent.state import SubagentTask
from agent.vfs.entries import PathError, finished_artifacts, scratch_prefix
from agent.vfs.origin import user_paths
from agent.vocabulary import Decision

__all__ = ["Planner", "dispatch", "subagent_task"]


class Planner:
    """Take in the turn, plan when asked, dispatch the ready steps."""

    def __init__(
        self,
        roles: Roles,
        databases: Mapping[str, str] | None = None,
        attempts: int = 1,
        workspace: str | None = None,
    ) -> None:
        self.roles = roles
        self.databases = dict(databases or {})
        self.workspace = workspace  # build_graph's folder; the Context's wins
        self.attempts = attempts  # the graph's RetryPolicy: the last one pauses, not raises

    async def node(self, state: StateView, runtime: Runtime[Context]) -> Command[PlannerRoute]:
        ctx = as_context(runtime.context)
        taken = take_in(state, ctx)
        if taken.next in ("escalate", "finalize"):
            return Command(goto=taken.next, update=taken.update)
        update = dict(taken.update)
        if taken.next == "plan":
            update = combined(
                update, await memories_taken_in(with_update(state, update), runtime, ctx)
            )
            last = last_attempt(runtime, self.attempts)
            planned = await self._plan(with_update(state, update), ctx, last)
            if isinstance(planned, Command):  # escalated or failed: the turn is still taken in
                return Command(goto=planned.goto, update=combined(update, planned.update))
            update = announced(state, ctx, combined(update, planned))
        return dispatch(with_update(state, update), ctx, update)

    async def _plan(
        self, state: StateView, ctx: Context, last: bool
    ) -> dict[str, Any] | Command[Any]:
        """The plan update, or the command that escalates or fails instead."""
        request = state.get("plan_request") or {}
        asked = {"reason": str(request.get("reason", "")), "answer": str(request.get("answer", ""))}
        try:
            trajectory = state.get("trajectory")
            metered = self.roles.metered("planner", ctx, asked, trajectory=trajectory)
        except Exception as exc:  # no model to ask: a missing key, an unknown provider
            return model_failure(exc, "planner", state, ctx, {}, last=last)
        profile = profile_for(ctx.profile, metered.model)
        try:
            outcome = await ask_planner(
                metered,
                state,
                self.roles.registry,
                **asked,
                max_plan_steps=ctx.max_plan_steps,
                planning=ctx.planning,
                databases=tuple(declared_databases(ctx, self.databases)),
                profile=profile,
                workspace=await asyncio.to_thread(folder_paths, ctx, self.workspace),
            )
        except Exception as exc:
            usage = {"usage": metered.usage} | learnt_update(metered)
            return model_failure(exc, "planner", state, ctx, usage, last=last)
        update: dict[str, Any] = {"usage": metered.usage, "plan_request": None}
        update |= learnt_update(metered)
        if outcome.steps is None:
            return command_for(invalid_plan(outcome.errors), state, ctx, update)
        question = outcome.criteria.question if profile.model_questions else None
        if question and not state.get("plan") and not asked["answer"].strip():
            # the goal asks the user first: no step may guess the answer (the plan waits)
            pause = question_first(question.quote or question.text)
            return command_for(pause, state, ctx, update | {"plan_request": None})
        if outcome.fallback:  # never a silent default: the log says the plan is code's
            update["decisions"] = [fallback_entry(state, outcome.fallback)]
        answered = bool(asked["answer"].strip())
        return update | apply_plan(state, outcome.steps, outcome.criteria, answered=answered)


def folder_paths(ctx: Context, default: str | None) -> list[str]:
    """The workspace folder's paths for the planner; none without a folder, or when it
    cannot be walked (the steps' tools then say why)."""
    try:
        folder = workspace_folder(ctx, default)
        return folder.paths() if folder is not None else []
    except PathError:
        return []


def fallback_entry(state: StateView, reason: str) -> dict[str, Any]:
    """The ``decisions`` entry of a plan made in code because the planner model's stayed
    invalid: a rule's replan, counted nowhere (reflection did not run)."""
    return {
        "round": int(state.get("step") or 0),
        "decision": str(Decision.REPLAN),
        "reason": reason,
        "by": "rule",
        "forced": True,
        "depth": int(state.get("reflection_depth") or 0),
        "defects": [],
    }


def announced(state: StateView, ctx: Context, update: dict[str, Any]) -> dict[str, Any]:
    """``update`` after the new plan went out as an event (and as a chat message when the
    Context asks for progress in the chat)."""
    current = with_update(state, update)
    event = plan_event(current["plan"])
    emit(event)
    if not ctx.chat_progress:
        return update
    told_id = f"progress-plan-{event['version']}-{int(current.get('step') or 0)}"
    plan_told = told(state.get("messages") or [], [progress_message(event, told_id)])
    return combined(update, {"messages": plan_told})


def dispatch(state: StateView, ctx: Context, update: dict[str, Any]) -> Command[PlannerRoute]:
    """Send each ready step (at most ``max_parallel``) to a subagent, or reflect if none."""
    plan = state.get("plan") or {"steps": []}
    files = state.get("files") or {}
    ready = ready_steps(plan, files)[: ctx.max_parallel]
    step = int(state.get("step") or 0) + 1
    update = update | {"dispatch": [s["step_id"] for s in ready], "step": step}
    if not ready:
        return Command(goto="reflection", update=update)
    left = budget_of(state, ctx, step=step)
    allowance, seconds = left.token_allowance(len(ready)), left.time_allowance()
    sends = [
        Send("subagent", subagent_task(s, state, files, step, allowance, seconds)) for s in ready
    ]
    for s in ready:
        emit(step_event(s, step))
    return Command(goto=sends, update=update)


def subagent_task(
    step: Mapping[str, Any],
    state: StateView,
    files: Mapping[str, Any],
    round_no: int,
    allowance: int,
    seconds: float,
) -> SubagentTask:
    """What one subagent gets: its step and the paths of the files it may read.

    Paths, not contents, and not the goal: a ``Send`` is stored with the checkpoint (twice:
    as a write and as a pending task), so contents in it would store each input again for
    every step reading it. The subagent reads the contents from the ``files`` channel and
    the goal from ``goal`` when it starts.

    Besides its dependencies' outputs and the user's files, a step reads the finished
    artifacts of earlier plans that this plan does not write again: on the 1.5B a replan
    kept only ``textkit/__init__.py``, and its check could not import the finished
    ``textkit/words.py`` it had no step for."""
    by_id = {s["step_id"]: s for s in state["plan"]["steps"]}
    readable = [by_id[d]["expected_output"] for d in step["depends_on"] if d in by_id]
    own = [step["expected_output"]] + [
        p for p in files if p.startswith(scratch_prefix(step["step_id"]))
    ]
    planned = {s["expected_output"] for s in by_id.values()}
    earlier = [p for p in finished_artifacts(files) if p not in planned]
    paths = dict.fromkeys(readable + user_paths(files) + earlier + own)  # and the user's
    return {
        "step": dict(step),
        "readable": [p for p in paths if p in files],
        "round": round_no,
        "token_allowance": allowance,
        "time_allowance_s": seconds,
    }
