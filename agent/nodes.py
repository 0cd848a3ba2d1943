"""The graph's nodes: each gathers inputs from state, calls pure functions, returns an update."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Send

from agent import reflection as rules
from agent.context import Context
from agent.controller import LoopConfig
from agent.errors import ErrorClass, classify, describe
from agent.models import Metered, load_model, merge_usage, total_tokens
from agent.plan import PlanDraft, merge_replan, parse_plan, ready_steps
from agent.prompts import render
from agent.result import build_result
from agent.state import CUT_KEY, MAX_GOAL_CHARS, SubagentTask
from agent.subagents import SubAgent, describe_registry
from agent.vfs import scratch_prefix, summarize_files
from agent.worker import StepWorker

# Nodes read the state as a mapping so a subclass of State (build_graph(state_schema=...))
# is not mistaken for a second, conflicting input schema.
StateView = Mapping[str, Any]
TERMINAL = ("success", "failed")


def as_context(value: Any) -> Context:
    """The run's Context, whether LangGraph passed a dataclass, a dict or nothing."""
    if isinstance(value, Context):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in dataclasses.fields(Context)}
        return Context(**{k: v for k, v in value.items() if k in known})
    return Context()


def goal_problem(goal: Any) -> str | None:
    """Why a goal cannot be planned, or None (seed 001: invalid input is rejected, not retried)."""
    if not isinstance(goal, str) or not goal.strip():
        return "the goal is empty"
    if len(goal) > MAX_GOAL_CHARS:
        return f"the goal is {len(goal)} characters; the limit is {MAX_GOAL_CHARS}"
    if "\x00" in goal or sum(not (c.isprintable() or c.isspace()) for c in goal) > len(goal) // 20:
        return "the goal looks like binary data, not text"
    return None


def _message_text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


def message_problem(message: BaseMessage) -> str | None:
    """Why a human message cannot be taken as a goal or an answer, or None. A message the
    ``messages`` reducer already cut to a placeholder is judged by its original size."""
    size = message.additional_kwargs.get(CUT_KEY)
    if isinstance(size, int):
        return f"the goal is {size} characters; the limit is {MAX_GOAL_CHARS}"
    return goal_problem(_message_text(message))


def config_problem(ctx: Context) -> dict[str, Any] | None:
    """The update that fails the run on an invalid Context (every problem, each naming its
    field), or None. Every node that reads the Context's numbers checks it first."""
    if problems := ctx.validate():
        return _failed("invalid_input", "configuration: " + "; ".join(problems))
    return None


def new_human_message(state: Mapping[str, Any]) -> HumanMessage | None:
    """The newest human message not yet taken in by the planner."""
    seen = (state.get("turn") or {}).get("human_id")
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            return None if message.id == seen else message
    return None


class Nodes:
    """The five nodes and two routers, sharing the models and subagents ``build_graph`` got."""

    def __init__(
        self,
        *,
        registry: Mapping[str, SubAgent],
        models: Mapping[str, BaseChatModel | str] | None = None,
        max_tool_turns: int = 12,
        rules: Sequence[rules.Rule] = rules.RULES,
    ) -> None:
        self.rules = tuple(rules)
        self.registry = dict(registry)
        self.models = dict(models or {})
        self.max_tool_turns = max_tool_turns

    # -------------------------------------------------------------------- models
    def model_for(self, role: str, ctx: Context) -> BaseChatModel:
        """Per-role model: explicit override, the subagent's own, default, then Context."""
        if role in self.models:
            return load_model(self.models[role], role)
        spec = self.registry.get(role)
        if spec and spec.get("model") is not None:
            return load_model(spec["model"], role)
        if "default" in self.models:
            return load_model(self.models["default"], role)
        by_role = {
            "planner": ctx.planner_model,
            "critic": ctx.critic_model,
            "reflection": None,
        }
        chosen = by_role.get(role, ctx.subagent_model) or ctx.model
        return load_model(chosen, role)

    def _metered(self, role: str, ctx: Context) -> Metered:
        return Metered(self.model_for(role, ctx), role, ctx.structured_output)

    # -------------------------------------------------------------------- planner
    def planner(self, state: StateView, runtime: Runtime[Context]) -> dict[str, Any]:
        """Plan, replan, take in a human answer, or just dispatch the next ready steps."""
        ctx = as_context(runtime.context)
        if (failure := config_problem(ctx)) is not None:
            return failure
        human = new_human_message(state)
        plan = state.get("plan")
        if state.get("escalation") and human is None:
            return {}  # resumed without an answer: pause again on the same question, no model
        if plan is None:
            return self._first_plan(state, ctx, human)
        if human is not None:
            return self._take_answer(state, ctx, human)
        decisions = state.get("decisions") or []
        if decisions and decisions[-1]["decision"] == "replan":
            return self._replan(state, ctx, reason=decisions[-1]["reason"], answer="")
        return self._dispatch(state, ctx, plan, state.get("files") or {})

    def _new_turn(
        self, state: StateView, ctx: Context, human: HumanMessage | None
    ) -> dict[str, Any]:
        """Budgets and depth count per user turn; a human answer starts a new one."""
        turn = {
            "started_at": time.time(),
            "start_step": int(state.get("step") or 0),
            "start_tokens": total_tokens(state.get("usage")),
            "human_id": human.id if human else None,
        }
        return {
            "turn": turn,
            "context": dataclasses.asdict(ctx),
            "reflection_depth": 0,
            "status": "running",
            "stop_reason": None,
            "escalation": None,
        }

    def _first_plan(self, state: StateView, ctx: Context, human: HumanMessage | None) -> dict:
        update: dict[str, Any] = {}
        if human is not None:
            goal: Any = _message_text(human)
            problem = message_problem(human)
        else:
            goal = state.get("goal")
            problem = goal_problem(goal)
        if problem:
            # nothing of a rejected goal is kept: a goal sent as `goal` is cleared, one sent
            # as a message is already a bounded placeholder (agent.state.bounded_messages)
            return ({"goal": ""} if human is None else {}) | _failed("invalid_input", problem)
        if human is None:
            human = HumanMessage(goal, id=str(uuid.uuid4()))
            update["messages"] = [human]
        update |= {"goal": goal, **self._new_turn(state, ctx, human)}
        merged = {**state, **update}
        return {**update, **self._replan(merged, ctx, reason="", answer="")}

    def _take_answer(self, state: StateView, ctx: Context, human: HumanMessage) -> dict[str, Any]:
        text = _message_text(human)
        if problem := message_problem(human):
            if state.get("escalation"):  # keep the thread paused on its question; lose nothing
                turn = {**(state.get("turn") or {}), "human_id": human.id}
                note = AIMessage(f"That answer was not accepted ({problem}); please answer again.")
                return {"turn": turn, "messages": [note]}
            return _failed("invalid_input", f"request rejected: {problem}")
        update = self._new_turn(state, ctx, human)
        if (state.get("status") in TERMINAL) and not state.get("escalation"):
            update["goal"] = text  # a follow-up request after a finished run is a new goal
        merged = {**state, **update}
        asked = (state.get("escalation") or {}).get("question", "")
        reason = f"the human answered the question {asked!r}" if asked else "a new request"
        return {**update, **self._replan(merged, ctx, reason=reason, answer=text)}

    def _replan(self, state: Mapping[str, Any], ctx: Context, *, reason: str, answer: str) -> dict:
        files = state.get("files") or {}
        old = state.get("plan")
        metered = self._metered("planner", ctx)
        system = render(
            "planner", actions=describe_registry(self.registry), max_plan_steps=ctx.max_plan_steps
        )
        human = render(
            "planner_input",
            goal=state.get("goal", ""),
            answer=answer,
            reason=reason,
            plan=json.dumps(old, indent=1) if old else "",
            files=json.dumps(summarize_files(files, int(state.get("step") or 0)), indent=1),
        )
        messages: list[BaseMessage] = [SystemMessage(system), HumanMessage(human)]
        errors: list[str] = []
        steps = None
        try:
            for _attempt in range(2):  # design.md: one retry with the errors, then escalate
                draft, raw = metered.structured(messages, PlanDraft)
                if draft is None:
                    errors = [f"the answer is not a valid plan: {raw}"]
                else:
                    steps, errors = parse_plan(
                        draft, actions=self.registry, max_steps=ctx.max_plan_steps
                    )
                if steps is not None:
                    break
                messages += [
                    AIMessage(raw[:2000] if draft is None else draft.model_dump_json()[:4000]),
                    HumanMessage(
                        render("planner_retry", errors="\n".join(f"- {e}" for e in errors))
                    ),
                ]
        except Exception as exc:
            return {"usage": metered.usage, **_model_failure(exc, "planner", state)}
        update: dict[str, Any] = {"usage": metered.usage}
        if steps is None:
            decision = rules.Decision(
                "escalate",
                "invalid_plan: " + "; ".join(errors)[:400],
                forced=True,
                counts_depth=False,
                stop_reason="invalid_plan",
                question="The planner could not produce a valid plan after one retry ("
                + "; ".join(errors)[:300]
                + "). Can you clarify or narrow the goal?",
                suggested_responses=["narrow the goal to: <goal>", "stop here"],
            )
            return update | _escalate_now(decision, state)
        plan, stale = merge_replan(old, steps, files)
        update["plan"] = plan
        if old:
            update["plan_history"] = [old]
        file_update = {p: {**files[p], "status": "active"} for p in stale}
        if file_update:
            update["files"] = file_update
        files = {**files, **file_update}
        return update | self._dispatch(state, ctx, plan, files)

    def _dispatch(
        self, state: Mapping[str, Any], ctx: Context, plan: Mapping[str, Any], files: Mapping
    ) -> dict[str, Any]:
        ready = ready_steps(plan, files)[: ctx.max_parallel]
        return {"dispatch": [s["step_id"] for s in ready], "step": int(state.get("step") or 0) + 1}

    def route_after_planner(self, state: StateView, runtime: Runtime[Context]) -> Any:
        """Fan ready steps out with ``Send``; otherwise reflect, pause or finish."""
        if state.get("status") == "failed":
            return "finalize"
        if state.get("escalation"):
            return "escalate"
        plan = state.get("plan") or {"steps": []}
        files = state.get("files") or {}
        by_id = {s["step_id"]: s for s in plan["steps"]}
        ctx = as_context(runtime.context)
        spent = total_tokens(state.get("usage")) - int(
            (state.get("turn") or {}).get("start_tokens", 0)
        )
        dispatch = [by_id[sid] for sid in state.get("dispatch") or [] if sid in by_id]
        if not dispatch:
            return "reflection"
        allowance = max(1, (ctx.token_budget - spent) // len(dispatch))
        started = float((state.get("turn") or {}).get("started_at") or time.time())
        time_left = max(1.0, ctx.time_budget_s - (time.time() - started))
        return [
            Send("subagent", self._task(step, state, files, allowance, time_left))
            for step in dispatch
        ]

    def _task(
        self,
        step: Mapping[str, Any],
        state: Mapping[str, Any],
        files: Mapping,
        allowance: int,
        time_left: float,
    ) -> SubagentTask:
        by_id = {s["step_id"]: s for s in state["plan"]["steps"]}
        readable = [by_id[d]["expected_output"] for d in step["depends_on"] if d in by_id]
        own = [step["expected_output"]] + [
            p for p in files if p.startswith(scratch_prefix(step["step_id"]))
        ]
        inputs = {p: files[p]["content"] for p in readable + own if p in files}
        return {
            "step": dict(step),
            "goal": state.get("goal", ""),
            "inputs": inputs,
            "round": int(state.get("step") or 0),
            "token_allowance": allowance,
            "time_allowance_s": time_left,
        }

    # -------------------------------------------------------------------- subagent
    def subagent(self, state: SubagentTask, runtime: Runtime[Context]) -> dict[str, Any]:
        """One step, one subagent: the revise loop, then the files and what it did."""
        ctx = as_context(runtime.context)
        step = state["step"]
        if problems := ctx.validate():  # a run resumed mid-round with a bad Context
            return {"trajectory": [_config_error_event(state, problems)]}
        spec = self.registry[step["action"]]
        judge, judge_usage = self._metered("critic", ctx).observed()
        worker = StepWorker(
            step=step,
            goal=state["goal"],
            inputs=state["inputs"],
            round_no=state["round"],
            system_prompt=spec["prompt"],
            model=self._metered(step["action"], ctx),
            judge=judge,
            extra_tools=list(spec.get("tools") or []),
            loop_config=LoopConfig(
                max_rounds=ctx.max_revisions,
                min_gain=ctx.min_gain,
                token_budget=max(1, int(state["token_allowance"])),
                timeout_s=state.get("time_allowance_s") or ctx.time_budget_s,
            ),
            max_tool_turns=self.max_tool_turns,
        )
        run = worker.execute()
        usage = merge_usage(run.usage, judge_usage.usage)
        return {"files": run.files, "trajectory": run.trajectory, "usage": usage}

    # -------------------------------------------------------------------- reflection
    def situation(self, state: StateView, ctx: Context) -> rules.Situation:
        """Everything the reflection rules need, gathered once from state."""
        turn = state.get("turn") or {}
        decisions = state.get("decisions") or []
        start = int(turn.get("start_step", 0))
        step = int(state.get("step") or 0)
        return rules.Situation(
            goal=state.get("goal", ""),
            plan=state.get("plan"),
            files=state.get("files") or {},
            step=step,
            depth=int(state.get("reflection_depth") or 0),
            cap=ctx.depth_cap(),
            dispatched=list(state.get("dispatch") or []),
            previous_defects=list(decisions[-1].get("defects", [])) if decisions else [],
            turn_events=[e for e in state.get("trajectory") or [] if e.get("round", 0) > start],
            exhausted=rules.budget_exhausted(
                turn=turn,
                tokens_used=total_tokens(state.get("usage")),
                step=step,
                token_budget=ctx.token_budget,
                time_budget_s=ctx.time_budget_s,
                max_steps=ctx.max_steps,
            ),
            strict_end=ctx.strict_end,
        )

    def reflection(self, state: StateView, runtime: Runtime[Context]) -> dict[str, Any]:
        """Decide continue, replan, end or escalate: rules first, the model only if needed."""
        ctx = as_context(runtime.context)
        if (failure := config_problem(ctx)) is not None:
            return failure
        s = self.situation(state, ctx)
        update: dict[str, Any] = {}
        decision = rules.decide_by_rule(s, self.rules)
        if decision is None:
            metered = self._metered("reflection", ctx)
            try:
                decision = self._ask_model(metered, s)
            except Exception as exc:
                return {"usage": metered.usage, **_model_failure(exc, "reflection", state)}
            update["usage"] = metered.usage
            decision = rules.validate_decision(decision, s)
        update["file_summaries"] = summarize_files(s.files, s.step)
        return update | _apply(decision, s, state)

    def _ask_model(self, metered: Metered, s: rules.Situation) -> rules.Decision:
        situation = json.dumps(rules.reflection_input(s), indent=1)
        messages: list[BaseMessage] = [
            SystemMessage(render("reflection")),
            HumanMessage(render("reflection_input", situation=situation)),
        ]
        answer, raw = metered.structured(messages, rules.ReflectionAnswer)
        if answer is None:  # one retry with the error, then a failed round (never an end)
            messages += [AIMessage(raw[:1000]), HumanMessage(render("reflection_retry", error=raw))]
            answer, raw = metered.structured(messages, rules.ReflectionAnswer)
        if answer is None:
            return rules.failed_round(s, raw)
        return rules.from_answer(answer)

    def route_after_reflection(self, state: StateView) -> str:
        """Follow the decision just logged."""
        decision = (state.get("decisions") or [{}])[-1].get("decision")
        if state.get("status") == "failed" or decision in ("end", "fail"):
            return "finalize"
        if decision == "escalate" or state.get("escalation"):
            return "escalate"
        return "planner"

    # -------------------------------------------------------------------- escalate / finalize
    def escalate(self, state: StateView) -> dict[str, Any]:
        """Surface the question; the graph pauses after this node until a human answers."""
        payload = state.get("escalation") or {}
        question = payload.get("question", "How should I proceed?")
        suggestions = payload.get("suggested_responses") or []
        text = question + "".join(f"\n- {s}" for s in suggestions)
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        status = payload.get("status", "awaiting_input")
        update = {
            "status": status,
            "stop_reason": payload.get("stop_reason"),
            # a fixed id: pausing again on the same question replaces, not repeats, the message
            "messages": [AIMessage(text, id=f"escalation-{digest}")],
        }
        return update | {"result": build_result({**state, **update}, _thread_id())}

    def finalize(self, state: StateView) -> dict[str, Any]:
        """The final answer as an AI message and the ``Result`` in state."""
        if state.get("status") == "failed":
            text = f"The run failed ({state.get('stop_reason')}): " + (
                (state.get("decisions") or [{}])[-1].get("reason", "")
                if state.get("decisions")
                else ""
            )
            update: dict[str, Any] = {"messages": [AIMessage(text.strip())], "dispatch": []}
            return update | {"result": build_result({**state, **update}, _thread_id())}
        answer = (state.get("decisions") or [{}])[-1].get("final_answer") or "Done."
        update = {
            "status": "success",
            "stop_reason": "end",
            "messages": [AIMessage(answer)],
            "dispatch": [],
        }
        return update | {"result": build_result({**state, **update}, _thread_id())}


def _thread_id() -> str | None:
    """The running thread's id, so the ``Result`` stored in state names it."""
    try:
        return get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a run (unit tests of a node)
        return None


def _apply(d: rules.Decision, s: rules.Situation, state: Mapping[str, Any]) -> dict[str, Any]:
    entry = rules.log_entry(d, s)
    if d.final_answer:
        entry["final_answer"] = d.final_answer
    update: dict[str, Any] = {"decisions": [entry], "reflection_depth": entry["depth"]}
    if d.decision == "escalate":
        update["escalation"] = rules.escalation_payload(d, s)
    elif d.decision == "fail":
        update |= {"status": "failed", "stop_reason": d.stop_reason}
    return update


def _escalate_now(d: rules.Decision, state: Mapping[str, Any]) -> dict[str, Any]:
    """An escalation decided outside reflection (an invalid plan, an unknown error)."""
    s = rules.Situation(
        goal=state.get("goal", ""),
        plan=state.get("plan"),
        files=state.get("files") or {},
        step=int(state.get("step") or 0),
        depth=int(state.get("reflection_depth") or 0),
        cap=10,
        dispatched=[],
        previous_defects=[],
        turn_events=[],
    )
    return {
        "decisions": [rules.log_entry(d, s)],
        "escalation": rules.escalation_payload(d, s),
    }


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


def _failed(stop_reason: str, reason: str) -> dict[str, Any]:
    return {
        "status": "failed",
        "stop_reason": stop_reason,
        "decisions": [
            {
                "round": None,
                "decision": "fail",
                "reason": reason,
                "by": "rule",
                "forced": True,
                "stop_reason": stop_reason,
            }
        ],
    }


def _model_failure(exc: Exception, role: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """Transient errors are re-raised for the RetryPolicy; the rest stop or escalate."""
    error_class = classify(exc)
    if error_class is ErrorClass.TRANSIENT:
        raise exc
    evidence = f"{role} model: {describe(exc)}"
    if error_class in (
        ErrorClass.PERMISSION_DENIED,
        ErrorClass.POLICY_REJECTED,
        ErrorClass.INVALID_INPUT,
    ):
        return _failed(error_class.value, evidence)
    decision = rules.Decision(
        "escalate",
        evidence,
        forced=True,
        counts_depth=False,
        stop_reason="unknown_error",
        question=f"The {role} model failed with an unexpected error ({evidence}). Retry?",
        suggested_responses=["retry", "stop here"],
    )
    return _escalate_now(decision, state)
