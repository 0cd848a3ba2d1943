"""The graph's nodes. Each gathers its inputs from state, calls the pure functions that hold
the logic, and returns a ``Command``: the update and the one destination its decision names.

``planner``   take in the turn (``agent.graph.turn``), plan or replan when asked
              (``agent.plan.planner``), then fan the ready steps out to subagents
``subagent``  one step in the revise loop (``agent.controller.worker``)
``reflection`` the rules in order, the model only when none decides (``agent.reflection.rules``)
``escalate``  surface the question; the graph pauses after it
``finalize``  the final answer and the ``Result``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.pregel._read import ChannelRead
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

import agent.reflection.rules as rules
from agent.context import Context, as_context
from agent.controller.revise import LoopConfig
from agent.controller.worker import StepWorker
from agent.errors import ConfigError, ErrorClass, classify, describe
from agent.events import (
    check_event,
    decision_event,
    emit,
    plan_event,
    progress_message,
    step_event,
    told,
)
from agent.graph.final import final_message
from agent.graph.result import build_result
from agent.graph.roles import Roles
from agent.graph.turn import (
    acted_on,
    config_failure,
    failed,
    goal_problem,
    message_problem,
    new_human_message,
    take_in,
)
from agent.models.factory import JUDGE, Metered, merge_usage
from agent.plan.planner import apply_plan, ask_planner
from agent.plan.progress import ready_steps
from agent.prompts import render
from agent.reflection.answers import Answer, labels_text, parse_answer, review_request, typed_choice
from agent.reflection.budget import budget_of
from agent.reflection.model_view import (
    ReflectionAnswer,
    from_answer,
    reflection_messages,
    summary_changes,
)
from agent.reflection.situation import Situation, situation_from_state
from agent.state import MAX_GOAL_CHARS, SubagentTask
from agent.store.journal import journal_for
from agent.tools.approvals import (
    approval_payload,
    decided,
    interrupt_config,
    pending_requests,
    read_decisions,
)
from agent.tools.execute import CallScope
from agent.vfs.entries import merge_files, scratch_prefix
from agent.vfs.quoting import quote_data
from agent.vfs.user_entries import keep_origin, user_paths
from agent.vocabulary import Decision, StopReason

__all__ = [
    "MAX_GOAL_CHARS",
    "ESCALATE_DESTINATIONS",
    "PLANNER_DESTINATIONS",
    "REFLECTION_DESTINATIONS",
    "Planner",
    "Reflection",
    "Subagent",
    "as_context",
    "escalate",
    "finalize",
    "goal_problem",
    "message_problem",
    "new_human_message",
]

# Nodes read the state as a mapping so a subclass of State (build_graph(state_schema=...))
# is not mistaken for a second, conflicting input schema.
StateView = Mapping[str, Any]
PlannerRoute = Literal["subagent", "reflection", "escalate", "finalize"]
ReflectionRoute = Literal["planner", "escalate", "finalize"]
PLANNER_DESTINATIONS: tuple[PlannerRoute, ...] = ("subagent", "reflection", "escalate", "finalize")
REFLECTION_DESTINATIONS: tuple[ReflectionRoute, ...] = ("planner", "escalate", "finalize")
EscalateRoute = Literal["planner", "finalize"]
ESCALATE_DESTINATIONS: tuple[EscalateRoute, ...] = ("planner", "finalize")
ESCALATE_ROUTE: dict[str, EscalateRoute] = {
    "answer": "planner",
    "continue": "planner",
    "accept": "finalize",
    "stop": "finalize",
}
# a model error that choosing another model (or its key) fixes: the failure says how
MODEL_FIXES = (ErrorClass.PERMISSION_DENIED, ErrorClass.INVALID_INPUT)
# where each decision leads: the one table both reflection and forced escalations use
ROUTE: dict[Decision, ReflectionRoute] = {
    Decision.CONTINUE: "planner",
    Decision.REPLAN: "planner",
    Decision.END: "finalize",
    Decision.ESCALATE: "escalate",
    Decision.FAIL: "finalize",
}


class Planner:
    """Take in the turn, plan when asked, dispatch the ready steps."""

    def __init__(self, roles: Roles, databases: Mapping[str, str] | None = None) -> None:
        self.roles = roles
        self.databases = dict(databases or {})

    async def node(self, state: StateView, runtime: Runtime[Context]) -> Command[PlannerRoute]:
        ctx = as_context(runtime.context)
        taken = take_in(state, ctx)
        if taken.next in ("escalate", "finalize"):
            return Command(goto=taken.next, update=taken.update)
        update = dict(taken.update)
        current = with_update(state, update)
        if taken.next == "plan":
            planned = await self._plan(current, ctx)
            if isinstance(planned, Command):  # escalated or failed: the turn is still taken in
                return Command(goto=planned.goto, update=combined(update, planned.update))
            update = combined(update, planned)
            current = with_update(state, update)
            event = plan_event(current["plan"])
            emit(event)
            if ctx.chat_progress:
                told_id = f"progress-plan-{event['version']}-{int(current.get('step') or 0)}"
                plan_told = told(state.get("messages") or [], [progress_message(event, told_id)])
                update = combined(update, {"messages": plan_told})
        return dispatch(current, ctx, update)

    async def _plan(self, state: StateView, ctx: Context) -> dict[str, Any] | Command[Any]:
        """The plan update, or the command that escalates or fails instead."""
        request = state.get("plan_request") or {}
        asked = {"reason": str(request.get("reason", "")), "answer": str(request.get("answer", ""))}
        try:
            metered = self.roles.metered("planner", ctx, asked)
        except Exception as exc:  # no model to ask: a missing key, an unknown provider
            return model_failure(exc, "planner", state, ctx, {})
        try:
            outcome = await ask_planner(
                metered,
                state,
                self.roles.registry,
                **asked,
                max_plan_steps=ctx.max_plan_steps,
                planning=ctx.planning,
                databases=tuple(declared_databases(ctx, self.databases)),
            )
        except Exception as exc:
            return model_failure(exc, "planner", state, ctx, {"usage": metered.usage})
        update: dict[str, Any] = {"usage": metered.usage, "plan_request": None}
        if outcome.steps is None:
            return command_for(invalid_plan(outcome.errors), state, ctx, update)
        return update | apply_plan(state, outcome.steps)


def declared_databases(ctx: Context, declared: Mapping[str, str]) -> dict[str, str]:
    """The run's databases: the Context's, then build_graph's, which win on a shared name."""
    return ctx.declared_databases() | dict(declared)


def combined(first: Mapping[str, Any], then: Any) -> dict[str, Any]:
    """Two updates of one node as one: ``then`` wins, but ``files`` merge path by path and
    ``messages`` keep both (the turn's files and the files a replan re-opens, say)."""
    update = {**first, **(then or {})}
    for key in ("files", "messages"):
        if key in first and key in (then or {}):
            joined = {**first[key], **then[key]} if key == "files" else [*first[key], *then[key]]
            update[key] = joined
    return update


def with_update(state: StateView, update: Mapping[str, Any]) -> dict[str, Any]:
    """The state as the node's ``update`` will leave it: ``files`` merged path by path, as
    its channel merges them, every other key replaced."""
    current = {**state, **update}
    if "files" in update:
        current["files"] = merge_files(state.get("files") or {}, [update["files"]])
    return current


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
    """What one subagent gets: its step, the goal, and the paths of the files it may read.

    Paths, not contents: a ``Send`` is stored with the checkpoint (twice: as a write and as a
    pending task), so contents in it would store each input again for every step reading
    it. The subagent reads the contents from the ``files`` channel when it starts."""
    by_id = {s["step_id"]: s for s in state["plan"]["steps"]}
    readable = [by_id[d]["expected_output"] for d in step["depends_on"] if d in by_id]
    own = [step["expected_output"]] + [
        p for p in files if p.startswith(scratch_prefix(step["step_id"]))
    ]
    paths = dict.fromkeys(readable + user_paths(files) + own)  # every step reads the user's
    return {
        "step": dict(step),
        "goal": state.get("goal", ""),
        "readable": [p for p in paths if p in files],
        "round": round_no,
        "token_allowance": allowance,
        "time_allowance_s": seconds,
    }


def current_files() -> Mapping[str, Any]:
    """The ``files`` channel as the running task sees it ({} outside a run)."""
    return current_channel("files")


def current_channel(name: str) -> Mapping[str, Any]:
    """A state key as the running task sees it ({} outside a run or when unset)."""
    try:
        value = ChannelRead.do_read(get_config(), select=name)
    except (RuntimeError, KeyError):
        return {}
    return value if isinstance(value, Mapping) else {}


def call_scope(runtime: Runtime[Context], interrupt_on: Mapping[str, Any]) -> CallScope:
    """Where a subagent's tool calls happen: its thread, turn and plan, the thread's journal
    (beside its checkpoints, ``agent.store.journal``) and approvals, and the tools to approve."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        configurable = {}
    turn = current_channel("turn")
    return CallScope(
        thread_id=str(configurable.get("thread_id") or ""),
        turn=str(turn.get("human_id") or turn.get("started_at") or ""),
        plan_version=int(current_channel("plan").get("version") or 0),
        journal=journal_for(configurable.get(CONFIG_KEY_CHECKPOINTER), runtime.store),
        approvals=current_channel("approvals"),
        interrupt_on=interrupt_on,
    )


def task_inputs(task: SubagentTask, files: Mapping[str, Any]) -> dict[str, str]:
    """The contents of the files a subagent task may read."""
    return {p: files[p]["content"] for p in task.get("readable", ()) if p in files}


class Subagent:
    """One step, one subagent: the revise loop, then the files and what it did."""

    def __init__(
        self,
        roles: Roles,
        max_tool_turns: int,
        interrupt_on: Mapping[str, Mapping[str, Any]] | None = None,
        databases: Mapping[str, str] | None = None,
    ) -> None:
        self.roles = roles
        self.max_tool_turns = max_tool_turns
        self.interrupt_on = dict(interrupt_on or {})
        self.databases = dict(databases or {})

    async def node(self, state: SubagentTask, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = as_context(runtime.context)
        step = state["step"]
        if problems := ctx.validate():  # a run resumed mid-round with a bad Context
            return {"trajectory": [_config_error_event(state, problems)]}
        spec = self.roles.registry[step["action"]]
        try:
            model = self.roles.metered(step["action"], ctx)
            judge, judge_usage = self.roles.metered(JUDGE, ctx).observed()
        except Exception as exc:  # no model to ask: a missing key, an unknown provider
            if classify(exc) is ErrorClass.TRANSIENT:
                raise
            return {"trajectory": [_model_error_event(state, exc)]}
        worker = StepWorker(
            step=step,
            goal=state["goal"],
            inputs=task_inputs(state, current_files()),
            round_no=state["round"],
            system_prompt=spec["prompt"],
            model=model,
            judge=judge,
            extra_tools=list(spec.get("tools") or []),
            loop_config=LoopConfig(
                max_revisions=ctx.max_revisions,
                min_gain=ctx.min_gain,
                token_budget=max(1, int(state["token_allowance"])),
                timeout_s=state.get("time_allowance_s") or ctx.time_budget_s,
            ),
            max_tool_turns=self.max_tool_turns,
            scope=call_scope(runtime, self._interrupt_on(ctx)),
            tool_calling=ctx.tool_calling,
            replay=current_channel("replay").get(step["step_id"]),
            databases=declared_databases(ctx, self.databases),
        )
        run = await worker.aexecute()
        usage = merge_usage(run.usage, judge_usage.usage)
        files = keep_origin(run.files, current_files())
        update: dict[str, Any] = {"files": files, "trajectory": run.trajectory, "usage": usage}
        if ctx.chat_progress and (told := told_checks(run.trajectory)):
            update["messages"] = told
        if run.approvals:
            update["approvals"] = run.approvals
        if run.replay:
            update["replay"] = run.replay
        return update

    def _interrupt_on(self, ctx: Context) -> dict[str, Mapping[str, Any]]:
        """build_graph's ``interrupt_on`` plus the Context's tool names (all decisions)."""
        added = interrupt_config({name: True for name in ctx.approval_tools()})
        return added | self.interrupt_on


def told_checks(trajectory: Sequence[Mapping[str, Any]]) -> list[AIMessage]:
    """Each check a step ran, as the chat's progress message: one per draft, each id fixed
    by the round, the step and the check's place in it (a re-run replaces, never adds)."""
    told: list[AIMessage] = []
    for event in trajectory:
        if event.get("action") != "check":
            continue
        report = {**(event.get("check") or {}), "evidence": event.get("observation", "")}
        checked = check_event(str(event["step_id"]), int(event.get("revision") or 0), report)
        told_id = f"progress-check-{event.get('round')}-{event['step_id']}-{len(told)}"
        told.append(progress_message(checked, told_id))
    return told


class Reflection:
    """Decide continue, replan, end or escalate: rules first, the model only if needed."""

    def __init__(self, roles: Roles, rules_in_order: Sequence[rules.Rule]) -> None:
        self.roles = roles
        self.rules = tuple(rules_in_order)

    async def node(self, state: StateView, runtime: Runtime[Context]) -> Command[ReflectionRoute]:
        ctx = as_context(runtime.context)
        if (failure := config_failure(ctx)) is not None:
            return Command(goto="finalize", update=failure)
        s = situation_from_state(state, ctx)
        update: dict[str, Any] = {}
        if requests := pending_requests(state.get("approvals"), plan_version(state)):
            # before any rule: a step waits for a human, whatever the others did
            return command_for(approval_decision(requests), state, ctx, update, situation=s)
        decision = rules.decide_by_rule(s, self.rules)
        if decision is None:
            try:
                metered = self.roles.metered("reflection", ctx)
            except Exception as exc:  # no model to ask: a missing key, an unknown provider
                return model_failure(exc, "reflection", state, ctx, update)
            try:
                decision = await ask_reflection(metered, s)
            except Exception as exc:
                return model_failure(exc, "reflection", state, ctx, {"usage": metered.usage})
            update["usage"] = metered.usage
            decision = rules.validate_decision(decision, s)
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


def command_for(
    d: rules.Decision,
    state: StateView,
    ctx: Context,
    update: dict[str, Any],
    *,
    situation: Situation | None = None,
) -> Command[ReflectionRoute]:
    """The one place a decision becomes an update and a destination, for reflection and
    for escalations decided elsewhere (an invalid plan, a model error)."""
    s = situation or situation_from_state(state, ctx)
    entry = rules.log_entry(d, s)
    if d.final_answer:
        entry["final_answer"] = d.final_answer
    update = update | {"decisions": [entry], "reflection_depth": entry["depth"]}
    event = decision_event(entry)
    emit(event)
    if ctx.chat_progress:  # before the pause's message: the question stays the last one
        told_id = f"progress-decision-{len(state.get('decisions') or []) + 1}"
        decision_told = told(state.get("messages") or [], [progress_message(event, told_id)])
        update = combined(update, {"messages": decision_told})
    if d.decision == "escalate":
        payload = rules.escalation_payload(d, s)
        if d.stop_reason == StopReason.AWAITING_APPROVAL:  # the requests, in LangChain's HITL shape
            payload |= approval_payload(
                pending_requests(state.get("approvals"), plan_version(state))
            )
        else:  # the question as a review card: approve accepts, reject's reason answers
            payload |= review_request(payload)
        update = combined(update, paused(state, payload))
    elif d.decision == "fail":
        update |= {"status": "failed", "stop_reason": entry.get("stop_reason")}
    elif d.decision == "replan":
        update["plan_request"] = {"reason": d.reason, "answer": ""}
    return Command(goto=ROUTE[d.decision], update=update)


def plan_version(state: StateView) -> int:
    """The current plan's version (0 before the first plan)."""
    return int((state.get("plan") or {}).get("version") or 0)


def approval_decision(requests: Sequence[Mapping[str, Any]]) -> rules.Decision:
    """Pause on every pending tool-call request at once (``agent.tools.approvals``)."""
    payload = approval_payload(requests)
    return rules.Decision(
        Decision.ESCALATE,
        payload["question"],
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.AWAITING_APPROVAL,
        question=payload["question"],
    )


def invalid_plan(errors: list[str]) -> rules.Decision:
    """docs/architecture.md: an invalid plan is retried once with its errors, then escalated."""
    shown = "; ".join(errors)
    return rules.Decision(
        Decision.ESCALATE,
        "invalid_plan: " + quote_data("errors", shown, 400),
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.INVALID_PLAN,
        question="The planner could not produce a valid plan after one retry ("
        + quote_data("errors", shown, 300)
        + "). Can you clarify or narrow the goal?",
        suggested_responses=["narrow the goal to: <goal>", "stop here"],
    )


def model_failure(
    exc: Exception, role: str, state: StateView, ctx: Context, update: dict[str, Any]
) -> Command[ReflectionRoute]:
    """Transient errors are re-raised for the RetryPolicy; the rest stop or escalate."""
    error_class = classify(exc)
    if error_class is ErrorClass.TRANSIENT:
        raise exc
    evidence = f"{role} model: {describe(exc)}"
    permanent = (ErrorClass.PERMISSION_DENIED, ErrorClass.POLICY_REJECTED, ErrorClass.INVALID_INPUT)
    if error_class in permanent:
        failure = failed(error_class.value, evidence)
        if error_class in MODEL_FIXES:  # the model or its key is wrong: say how to choose another
            failure["decisions"][-1]["fix"] = render("model_error_fix").strip()
        return Command(goto="finalize", update=update | failure)
    decision = rules.Decision(
        Decision.ESCALATE,
        evidence,
        forced=True,
        counts_depth=False,
        stop_reason=StopReason.UNKNOWN_ERROR,
        question=f"The {role} model failed with an unexpected error "
        f"({quote_data('error', evidence, 300)}). Retry?",
        suggested_responses=["retry", "stop here"],
    )
    return command_for(decision, state, ctx, update)


def paused(state: StateView, payload: dict[str, Any]) -> dict[str, Any]:
    """What a thread holds while it waits for a human: the escalation, its status, the
    question as an AI message and the ``Result`` (written before ``escalate`` pauses, since a
    node that calls ``interrupt()`` writes nothing until it is resumed)."""
    # every label a human may type, each shown literally (a label may hold markdown)
    always = payload.get("kind") != "approval"
    labels = labels_text(payload.get("suggested_responses"), always=always)
    text = payload.get("question", "How should I proceed?") + (f"\n{labels}" if labels else "")
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    # each pause a message of its own, after the human's words (a chat UI draws the question's
    # card under the last one); the same id when a node re-runs, so a replay adds nothing
    pause = len(state.get("decisions") or []) + 1
    update: dict[str, Any] = {
        "escalation": payload,
        "status": payload.get("status", "awaiting_input"),
        "stop_reason": payload.get("stop_reason"),
        "messages": [AIMessage(text, id=f"escalation-{pause}-{digest}")],
    }
    return update | {"result": build_result({**state, **update}, _thread_id())}


def escalate(state: StateView) -> Command[EscalateRoute]:
    """Pause with the escalation as the ``interrupt()`` payload (Studio, agent-chat-ui and
    the SDKs show it); resumed, act on the answer. No answer pauses again, no model called."""
    payload = dict(state.get("escalation") or {})
    if payload.get("kind") == "approval":
        return _decide_requests(state, payload)
    if "action_requests" not in payload:  # paused before the question had its card
        payload |= review_request(payload)
    suggested = payload.get("suggested_responses") or []
    answer = _usable(interrupt(payload), suggested)
    while answer is None:
        answer = _usable(interrupt(payload), suggested)
    return Command(goto=ESCALATE_ROUTE[answer.action], update=acted_on(answer, state))


def _decide_requests(state: StateView, payload: Mapping[str, Any]) -> Command[EscalateRoute]:
    """Resumed on pending tool calls: record the decisions and run the waiting steps again
    (their approved calls run; rejected ones tell the model why). ``{"action": "stop"}``
    stops the run; anything that decides nothing asks again."""
    requests = pending_requests(state.get("approvals"), plan_version(state))
    while True:
        value = interrupt(dict(payload))
        if isinstance(value, str):  # a choice's label: "approve all", "stop here"
            value = typed_choice(value, payload.get("suggested_responses")) or value
        stop = _usable(value) if isinstance(value, Mapping) and "action" in value else None
        if stop is not None and stop.action in ("stop", "accept"):
            return Command(goto="finalize", update=acted_on(stop, state))
        decisions = read_decisions(value, requests)
        if decisions is not None:
            break
    update = {"approvals": decided(requests, decisions), "escalation": None, "status": "running"}
    return Command(goto="planner", update=update | {"stop_reason": None})


def _usable(value: Any, suggested: Any = None) -> Answer | None:
    """The resume value as an answer, or None to pause again. An unknown action pauses
    again too: LangGraph replays resume values, so raising here would replay the error on
    every later resume and the thread could never be answered (``agent.resume`` refuses such
    a value before it is sent, with the error)."""
    try:
        return parse_answer(value, suggested)
    except ConfigError:
        return None


def finalize(state: StateView) -> dict[str, Any]:
    """The final answer as an AI message and the ``Result`` in state."""
    last = (state.get("decisions") or [{}])[-1]
    files, plan = state.get("files") or {}, state.get("plan")
    update: dict[str, Any] = {"dispatch": []}
    if state.get("status") == "failed":
        text = f"The run failed ({state.get('stop_reason')}): {last.get('reason', '')}".strip()
        if fix := failure_fix(state, last):
            text += f"\n\n{fix}"
        update["messages"] = [AIMessage(text)]
    elif state.get("stop_reason") == "accepted_by_human":
        done = [p for p, e in files.items() if e.get("status") == "done"]
        text = "Accepted as they are." + (
            f" Artifacts done: {', '.join(sorted(done))}." if done else ""
        )
        update["messages"] = [AIMessage(final_message(text, plan, files))]
    else:
        answer = final_message(last.get("final_answer") or "Done.", plan, files)
        update |= {"status": "success", "stop_reason": "end", "messages": [AIMessage(answer)]}
    return update | {"result": build_result({**state, **update}, _thread_id())}


def _thread_id() -> str | None:
    """The running thread's id, so the ``Result`` stored in state names it."""
    try:
        return get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a run (unit tests of a node)
        return None


def _model_error_event(task: SubagentTask, exc: Exception) -> dict[str, Any]:
    """What a subagent records when its model cannot even be made; reflection fails the run
    on its class (``rule_fatal_error``), and the observation says how to choose another."""
    error_class = classify(exc)
    event = {
        "round": task["round"],
        "step_id": task["step"]["step_id"],
        "actor": task["step"]["action"],
        "action": "error",
        "error_class": error_class.value,
        "observation": f"{task['step']['action']} model: {describe(exc)}",
    }
    if error_class in MODEL_FIXES:
        event["fix"] = render("model_error_fix").strip()
    return event


def failure_fix(state: StateView, decision: Mapping[str, Any]) -> str:
    """How to fix what failed the run, when it is known: on the failing decision, or on the
    error event of the step it names (a subagent whose model could not be made)."""
    if decision.get("fix"):
        return str(decision["fix"])
    reason = str(decision.get("reason") or "")
    for event in reversed(state.get("trajectory") or []):
        named = reason.startswith(f"step {event.get('step_id')}: ")
        if event.get("action") == "error" and event.get("fix") and named:
            return str(event["fix"])
    return ""


def _config_error_event(task: SubagentTask, problems: list[str]) -> dict[str, Any]:
    """What a subagent records instead of working when the Context is invalid; reflection
    then fails the run (it checks the Context too)."""
    return {
        "round": task["round"],
        "step_id": task["step"]["step_id"],
        "actor": task["step"]["action"],
        "action": "error",
        "error_class": ErrorClass.INVALID_INPUT.value,
        "observation": "configuration: " + "; ".join(problems),
    }
