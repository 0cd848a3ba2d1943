"""The ``reflection`` node: the rules in order (``agent.reflection.rules``), the model only
when none decides; the decision becomes the route (``agent.graph.routes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

import agent.reflection.rules as rules
from agent.context import Context, as_context
from agent.graph.inputs import StateView, plan_version
from agent.graph.model_errors import last_attempt, model_failure
from agent.graph.pauses import approval_decision
from agent.graph.roles import Roles, learnt_update, role_profile
from agent.graph.routes import ReflectionRoute, command_for
from agent.graph.turn import config_failure
from agent.models.factory import JUDGE, Metered
from agent.models.profiles import profile_for
from agent.prompts import render
from agent.reflection.model_view import (
    ReflectionAnswer,
    from_answer,
    reflection_messages,
    summary_changes,
)
from agent.reflection.situation import Situation, situation_from_state
from agent.tools.approvals import pending_requests

__all__ = ["Reflection", "ask_reflection"]


class Reflection:
    """Decide continue, replan, end or escalate: rules first, the model only if needed."""

    def __init__(
        self, roles: Roles, rules_in_order: Sequence[rules.Rule], attempts: int = 1
    ) -> None:
        self.roles = roles
        self.rules = tuple(rules_in_order)
        self.attempts = attempts  # the graph's RetryPolicy: the last one pauses, not raises

    async def node(self, state: StateView, runtime: Runtime[Context]) -> Command[ReflectionRoute]:
        ctx = as_context(runtime.context)
        if (failure := config_failure(ctx)) is not None:
            return Command(goto="finalize", update=failure)
        s = situation_from_state(
            state,
            ctx,
            judge_proves=role_profile(self.roles, JUDGE, ctx).judge_proves,
            planner_reads=role_profile(self.roles, "planner", ctx).planner_reads,
        )
        update: dict[str, Any] = {}
        if requests := pending_requests(state.get("approvals"), plan_version(state)):
            # before any rule: a step waits for a human, whatever the others did
            return command_for(approval_decision(requests), state, ctx, update, situation=s)
        decision = rules.decide_by_rule(s, self.rules)
        model_ends = True  # an end by rule stands on its evidence
        last = last_attempt(runtime, self.attempts)
        if decision is None:
            try:
                trajectory = state.get("trajectory")
                metered = self.roles.metered("reflection", ctx, trajectory=trajectory)
            except Exception as exc:  # no model to ask: a missing key, an unknown provider
                return model_failure(exc, "reflection", state, ctx, update, last=last)
            try:
                decision = await ask_reflection(metered, s)
            except Exception as exc:
                usage = {"usage": metered.usage} | learnt_update(metered)
                return model_failure(exc, "reflection", state, ctx, usage, last=last)
            update["usage"] = metered.usage
            update |= learnt_update(metered)
            decision = rules.validate_decision(decision, s)
            model_ends = profile_for(ctx.profile, metered.model).model_ends
        decision = rules.held_to_evidence(decision, s)
        if not model_ends:  # the profile takes no end on the model's word alone
            decision = rules.unjudged_end(decision)
        update["file_summaries"] = summary_changes(state.get("file_summaries") or {}, s)
        return command_for(decision, state, ctx, update, situation=s)


async def ask_reflection(metered: Metered, s: Situation) -> rules.Decision:
    """The reflection model's decision; malformed twice is a failed round, never an end."""
    messages = reflection_messages(s)
    answer, raw = await metered.astructured(messages, ReflectionAnswer)
    if answer is None:  # one retry with the error
        messages += [AIMessage(raw[:1000]), HumanMessage(render("reflection_retry", error=raw))]
        answer, raw = await metered.astructured(messages, ReflectionAnswer)
    if answer is None:
        return rules.failed_round(s, raw)
    return from_answer(answer)
