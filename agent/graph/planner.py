"""The ``planner`` node: take in the turn (``agent.graph.turn``), plan or replan when asked
(``agent.plan.planner``), then send each ready step to a subagent, or go to reflection when
none is ready."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import Context, as_context
from agent.events import emit, plan_event, progress_message, told
from agent.graph.dispatch import dispatch
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
from agent.vfs.entries import PathError
from agent.vocabulary import Decision

__all__ = ["Planner"]


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
