"""The ``subagent`` node: one plan step in the revise loop (``agent.controller.worker``),
then the files it wrote and what it did."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.context import Context, as_context
from agent.controller.habits import as_learnt, learnt_from
from agent.controller.revise import LoopConfig
from agent.controller.subagents import SubAgent
from agent.controller.worker import StepRun, StepWorker
from agent.errors import ErrorClass, classify
from agent.events import check_event, progress_message
from agent.graph.inputs import (
    current_channel,
    current_files,
    current_list,
    current_text,
    declared_databases,
    workspace_folder,
)
from agent.graph.memories import run_memory, save_step_memories
from agent.graph.model_errors import model_error_event
from agent.graph.roles import Roles
from agent.models.factory import JUDGE, Metered, merge_usage, model_key
from agent.models.profiles import profile_for
from agent.plan.direct import is_whole_goal
from agent.state import SubagentTask
from agent.store.journal import journal_for
from agent.tools.approvals import interrupt_config
from agent.tools.command import EXECUTE, execute_available, execute_tool
from agent.tools.execute import CallScope
from agent.vfs.folder import Folder, FolderError
from agent.vfs.origin import given_module, keep_base, keep_origin

__all__ = [
    "Subagent",
    "call_scope",
    "role_tools",
    "step_update",
    "task_inputs",
    "told_checks",
]


class Subagent:
    """One step, one subagent: the revise loop, then the files and what it did."""

    def __init__(
        self,
        roles: Roles,
        max_tool_turns: int,
        interrupt_on: Mapping[str, Mapping[str, Any]] | None = None,
        databases: Mapping[str, str] | None = None,
        workspace: str | None = None,
        checkpointer: object | None = None,
    ) -> None:
        self.roles = roles
        self.checkpointer = checkpointer
        """build_graph's checkpointer, beside which the tool journal lives; None under
        ``langgraph dev`` and LangGraph Server, whose store then keeps it."""
        self.max_tool_turns = max_tool_turns
        self.interrupt_on = dict(interrupt_on or {})
        self.databases = dict(databases or {})
        self.workspace = workspace  # build_graph's folder; the Context's wins

    async def node(self, state: SubagentTask, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = as_context(runtime.context)
        if problems := ctx.validate():  # a run resumed mid-round with a bad Context
            return {"trajectory": [config_error_event(state, problems)]}
        spec = self.roles.registry[state["step"]["action"]]
        try:
            model = self.roles.metered(state["step"]["action"], ctx)
            judge, judge_usage = self.roles.metered(JUDGE, ctx).observed()
        except Exception as exc:  # no model to ask: a missing key, an unknown provider
            if classify(exc) is ErrorClass.TRANSIENT:
                raise
            return {"trajectory": [model_error_event(state, exc)]}
        try:
            folder = workspace_folder(ctx, self.workspace)
        except FolderError as exc:  # the folder went away since the run started
            return {"trajectory": [config_error_event(state, [str(exc)])]}
        # whether commands may run here probes the sandbox (files, processes): off the loop
        tools = await asyncio.to_thread(role_tools, spec, ctx)
        worker = self._worker(state, spec, runtime, ctx, model, judge, tools, folder)
        run = await worker.aexecute()
        await save_step_memories(runtime, ctx, run.files, str(state["step"]["step_id"]))
        return step_update(run, merge_usage(run.usage, judge_usage.usage), ctx)

    def _worker(
        self,
        task: SubagentTask,
        spec: SubAgent,
        runtime: Runtime[Context],
        ctx: Context,
        model: Metered,
        judge: Runnable,
        tools: list[BaseTool],
        folder: Folder | None = None,
    ) -> StepWorker:
        """The step's worker: its subagent's prompt and ``tools``, the revise loop's bounds from
        the Context and the task's allowances, and where its tool calls happen."""
        step = task["step"]
        profile = profile_for(ctx.profile, model.model)  # the model the step already has
        learnt = learnt_from(current_list("trajectory"), model_key(model.model))
        loop_config = LoopConfig(
            max_revisions=ctx.max_revisions,
            fresh_drafts=ctx.fresh_drafts,
            min_gain=ctx.min_gain,
            token_budget=max(1, int(task["token_allowance"])),
            timeout_s=task.get("time_allowance_s") or ctx.time_budget_s,
        )
        return StepWorker(
            step=step,
            goal=current_text("goal"),
            inputs=task_inputs(task, current_files()),
            round_no=task["round"],
            system_prompt=spec["prompt"],
            model=model,
            judge=judge,
            extra_tools=tools,
            loop_config=as_learnt(loop_config, learnt, allowed=profile.fresh_drafts_first),
            max_tool_turns=self.max_tool_turns,
            scope=call_scope(runtime, self._interrupt_on(ctx), self.checkpointer),
            tool_calling=ctx.tool_calling,
            replay=current_channel("replay").get(step["step_id"]),
            databases=declared_databases(ctx, self.databases),
            computed_data=profile.computed_data,
            unchanged_fails=profile.unchanged_fails,
            as_asked=profile.goal_as_asked and is_whole_goal(step),
            as_given=given_module(current_files(), str(step["expected_output"])),
            tool_result_chars=ctx.tool_result_chars,
            memory=run_memory(runtime, ctx) is not None,
            graph=spec.get("graph"),
            folder=folder,
        )

    def _interrupt_on(self, ctx: Context) -> dict[str, Mapping[str, Any]]:
        """build_graph's ``interrupt_on`` plus the Context's tool names (all decisions)."""
        added = interrupt_config({name: True for name in ctx.approval_tools()})
        return added | self.interrupt_on


def role_tools(spec: SubAgent, ctx: Context) -> list[BaseTool]:
    """The subagent's own tools, and ``execute`` when the Context gives it to this role, it
    has none of that name, and commands may run here."""
    tools = list(spec.get("tools") or [])
    wanted = spec["name"] in ctx.execute_role_names()
    if wanted and all(t.name != EXECUTE for t in tools) and execute_available():
        tools.append(execute_tool(timeout_s=ctx.execute_timeout_s))
    return tools


def step_update(run: StepRun, usage: dict[str, dict[str, int]], ctx: Context) -> dict[str, Any]:
    """What a finished (or waiting) step writes: its files, keeping the user's mark on the
    ones it edited, its trajectory and usage, and what it waits on."""
    before = current_files()
    files = keep_base(keep_origin(run.files, before), before)
    update: dict[str, Any] = {"files": files, "trajectory": run.trajectory, "usage": usage}
    if ctx.chat_progress and (told := told_checks(run.trajectory)):
        update["messages"] = told
    if run.approvals:
        update["approvals"] = run.approvals
    if run.replay:
        update["replay"] = run.replay
    return update


def task_inputs(task: SubagentTask, files: Mapping[str, Any]) -> dict[str, str]:
    """The contents of the files a subagent task may read."""
    return {p: files[p]["content"] for p in task.get("readable", ()) if p in files}


def call_scope(
    runtime: Runtime[Context], interrupt_on: Mapping[str, Any], checkpointer: object | None = None
) -> CallScope:
    """Where a subagent's tool calls happen: its thread, turn and plan, the thread's journal
    (beside ``checkpointer``'s checkpoints, else in the run's store: ``agent.store.journal``)
    and approvals, and the tools to approve."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        configurable = {}
    turn = current_channel("turn")
    return CallScope(
        thread_id=str(configurable.get("thread_id") or ""),
        turn=str(turn.get("human_id") or turn.get("started_at") or ""),
        plan_version=int(current_channel("plan").get("version") or 0),
        journal=journal_for(checkpointer, runtime.store),
        approvals=current_channel("approvals"),
        interrupt_on=interrupt_on,
    )


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


def config_error_event(task: SubagentTask, problems: list[str]) -> dict[str, Any]:
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
