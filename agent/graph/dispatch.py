"""Sending the ready steps of the plan to subagents: from the planner after it planned (or
on a resume), and from reflection when it decides to continue, which then needs no planner
superstep (a checkpoint and its writes fewer per round)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Command, Send

from agent.context import Context
from agent.events import emit, step_event
from agent.graph.inputs import StateView
from agent.plan.progress import ready_steps
from agent.reflection.budget import budget_of
from agent.state import SubagentTask
from agent.vfs.entries import finished_artifacts, scratch_prefix
from agent.vfs.origin import user_paths

__all__ = ["dispatch", "send_ready", "subagent_task"]


def send_ready(state: StateView, ctx: Context, update: dict[str, Any]) -> Command[Any] | None:
    """Send each ready step (at most ``max_parallel``) to a subagent, or None if none is
    ready. ``state`` is the state as ``update`` leaves it."""
    plan = state.get("plan") or {"steps": []}
    files = state.get("files") or {}
    ready = ready_steps(plan, files)[: ctx.max_parallel]
    if not ready:
        return None
    step = int(state.get("step") or 0) + 1
    left = budget_of(state, ctx, step=step)
    allowance, seconds = left.token_allowance(len(ready)), left.time_allowance()
    sends = [
        Send("subagent", subagent_task(s, state, files, step, allowance, seconds)) for s in ready
    ]
    for s in ready:
        emit(step_event(s, step))
    return Command(
        goto=sends, update=update | {"dispatch": [s["step_id"] for s in ready], "step": step}
    )


def dispatch(state: StateView, ctx: Context, update: dict[str, Any]) -> Command[Any]:
    """The ready steps sent to subagents, or reflection if none is ready (a round with no
    step run, counted like any other)."""
    if (sent := send_ready(state, ctx, update)) is not None:
        return sent
    step = int(state.get("step") or 0) + 1
    return Command(goto="reflection", update=update | {"dispatch": [], "step": step})


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
