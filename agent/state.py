"""The graph's state: plain JSON-compatible data, with storage chosen per key.

Append-only logs and the filesystem use LangGraph's ``DeltaChannel``: a checkpoint stores
only the writes of its own step, so a run that writes N files stores O(N) bytes, not O(N²).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from agent.models import merge_usage
from agent.vfs import FileEntry, merge_files


def _append(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Reducer of the append-only logs; batching-invariant as ``DeltaChannel`` requires."""
    merged = list(current)
    for items in writes:
        merged.extend(items or [])
    return merged


def _files(current: dict[str, FileEntry], writes: Sequence[dict[str, Any]]) -> dict:
    return merge_files(current, writes)


def _usage(current: dict | None, update: dict | None) -> dict:
    return merge_usage(current, update)


class State(TypedDict, total=False):
    """The whole state of a deepreflect thread (design.md, State)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation: the goal, human answers, the escalation questions and final answer."""
    goal: str
    """The user goal for the current turn."""
    plan: dict[str, Any] | None
    """Current plan: ``{"version": int, "steps": [Step]}``."""
    plan_history: Annotated[list[dict[str, Any]], DeltaChannel(_append)]
    """Superseded plan versions, oldest first; never erased."""
    files: Annotated[dict[str, FileEntry], DeltaChannel(_files)]
    """The virtual filesystem; writing ``None`` to a path deletes it."""
    file_summaries: dict[str, dict[str, Any]]
    """What reflection last saw of ``files`` (status, bytes, age, check): Studio's readable view."""
    step: int
    """Planner rounds so far; ``age_steps`` of a file counts from it."""
    reflection_depth: int
    """Model-consulted reflections in this user turn; reset when a human answers."""
    decisions: Annotated[list[dict[str, Any]], DeltaChannel(_append)]
    """Every reflection decision: ``{round, decision, reason, by, forced}``."""
    escalation: dict[str, Any] | None
    """The pending question for a human, or None."""
    status: str
    """running, success, awaiting_input, budget_exhausted or failed."""
    stop_reason: str | None
    """Why the last run stopped (design.md, Terminal states)."""
    usage: Annotated[dict[str, dict[str, int]], _usage]
    """Tokens and model calls per role, summed over the thread."""
    trajectory: Annotated[list[dict[str, Any]], DeltaChannel(_append)]
    """Every action taken: actor, action, parameter summary, observation, check result."""
    dispatch: list[str]
    """Step ids the planner sent to subagents in this round."""
    turn: dict[str, Any]
    """Where the current user turn began (time, step, tokens, message) for its budgets."""
    context: dict[str, Any]
    """The Context the current turn runs with, so another process resumes it the same way."""
    result: dict[str, Any] | None
    """The final ``Result`` once a run ends."""


class InputState(TypedDict, total=False):
    """What a caller sends: a goal, or messages (Studio, the SDK, a human answer)."""

    messages: Annotated[list[AnyMessage], add_messages]
    goal: str


class SubagentTask(TypedDict):
    """What one subagent receives through ``Send``: its step and nothing more."""

    step: dict[str, Any]
    goal: str
    inputs: dict[str, str]
    """Contents of the step's dependencies' outputs, plus its own earlier files."""
    round: int
    token_allowance: int
    """Tokens this step may spend: what is left of the turn's budget, shared by the round."""
    time_allowance_s: float
    """Seconds left of the turn's time budget when the step was sent."""
