"""The graph's state: plain JSON-compatible data, with storage chosen per key.

Every key whose size grows with the plan or the files uses LangGraph's ``DeltaChannel``: a
checkpoint stores only the writes of its own step, and the value is rebuilt from them, so a
run that writes N files stores O(N) bytes, not O(N²). Append-only logs append; ``files`` and
``file_summaries`` merge by path (``None`` deletes); ``plan``, ``context``, ``turn`` and
``result``, written once in a while and read at every step, keep the latest write (``{}``
until the first one).
``messages`` is one of them too (a run's progress messages grow with its files): it keeps
every message, as ``add_messages`` does, but a human message longer than any goal or answer
the planner accepts is kept as a short placeholder, so a 10 MB paste is not stored again.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, convert_to_messages
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import Messages, add_messages
from typing_extensions import TypedDict

from agent.reducers import append_all, by_path, latest, summed, with_ids
from agent.vfs.entries import FileEntry

MAX_GOAL_CHARS = 20_000
"""The longest goal or answer a human message may carry; the planner rejects longer ones."""
PREVIEW_CHARS = 200
"""How much of an over-long human message its placeholder keeps, for a human to recognise."""
CUT_KEY = "deepreflect_cut_chars"
"""``additional_kwargs`` key of a placeholder: the size of the message it replaced."""


def message_size(message: BaseMessage) -> int:
    """Characters of a message's content (its JSON for a list of content blocks, so an
    attached image counts too); content that cannot be measured counts as too long."""
    if isinstance(message.content, str):
        return len(message.content)
    try:
        return len(json.dumps(message.content, ensure_ascii=False, default=str))
    except (ValueError, TypeError, RecursionError):
        return MAX_GOAL_CHARS + 1


def bounded_message(message: AnyMessage) -> AnyMessage:
    """``message`` itself, or for a human message over ``MAX_GOAL_CHARS`` a placeholder with
    the same id (so it replaces the original) holding its first ``PREVIEW_CHARS`` characters
    and, under ``CUT_KEY``, its size: the planner rejects it from that size."""
    if not isinstance(message, HumanMessage) or CUT_KEY in message.additional_kwargs:
        return message
    size = message_size(message)
    if size <= MAX_GOAL_CHARS:
        return message
    text = message.content if isinstance(message.content, str) else message.text
    note = f"\n[… cut: this message had {size} characters; at most {MAX_GOAL_CHARS} are accepted]"
    return HumanMessage(
        text[:PREVIEW_CHARS] + note,
        id=message.id,
        name=message.name,
        additional_kwargs={CUT_KEY: size},
    )


def bounded_messages(current: Messages, update: Messages) -> list[AnyMessage]:
    """Reducer of ``messages``: ``add_messages``, then over-long human messages cut.

    It runs when LangGraph applies a write, before the checkpoint that follows is saved; so
    of an oversized message only the copies LangGraph saves before any reducer runs remain
    (the run's input and the write of its ``__start__`` task), never one per checkpoint.
    """
    merged = cast(list[AnyMessage], add_messages(current, update))
    return [bounded_message(message) for message in merged]


def messages_delta(current: Messages, writes: list[Messages]) -> list[AnyMessage]:
    """``bounded_messages`` over a batch of writes (``DeltaChannel``'s reducer): folding
    them one by one is what makes two batches in turn equal one batch of both."""
    merged = cast(list[AnyMessage], current or [])
    for write in writes:
        listed = write if isinstance(write, list) else [write]
        update = cast(Messages, with_ids(convert_to_messages(listed), len(merged)))
        merged = bounded_messages(cast(Messages, merged), update)
    return merged


class State(TypedDict, total=False):
    """The whole state of a deepreflect thread (docs/architecture.md, State)."""

    messages: Annotated[list[AnyMessage], DeltaChannel(messages_delta)]
    """The conversation: the goal, human answers, the escalation questions and final answer;
    a human message over ``MAX_GOAL_CHARS`` is kept as a placeholder (``bounded_message``)."""
    goal: Annotated[str, DeltaChannel(latest)]
    """The user goal for the current turn (a ``DeltaChannel``: stored whole, a 2 KB goal was
    2 KB in every checkpoint, three per round)."""
    plan: Annotated[dict[str, Any], DeltaChannel(latest)]
    """Current plan: ``{"version": int, "steps": [Step]}``; ``{}`` before the first one."""
    plan_history: Annotated[list[dict[str, Any]], DeltaChannel(append_all)]
    """Superseded plan versions, oldest first; never erased."""
    files: Annotated[dict[str, FileEntry], DeltaChannel(by_path)]
    """The virtual filesystem; writing ``None`` to a path deletes it."""
    file_summaries: Annotated[dict[str, dict[str, Any]], DeltaChannel(by_path)]
    """What reflection last saw of ``files`` (status, bytes, step written, check): Studio's
    readable view. Reflection writes only the summaries that changed."""
    step: int
    """Planner rounds so far; ``age_steps`` of a file counts from it."""
    reflection_depth: int
    """Model-consulted reflections in this user turn; reset when a human answers."""
    decisions: Annotated[list[dict[str, Any]], DeltaChannel(append_all)]
    """Every reflection decision: ``{round, decision, reason, by, forced}``."""
    escalation: dict[str, Any] | None
    """The pending question for a human, or None."""
    status: str
    """A :class:`~agent.vocabulary.Status` value, stored as its plain string (a checkpoint
    would keep an enum member as an object)."""
    stop_reason: str | None
    """Why the last run stopped: a :class:`~agent.vocabulary.StopReason` value, stored as its
    plain string (docs/how-it-stops.md)."""
    usage: Annotated[dict[str, dict[str, int]], DeltaChannel(summed)]
    """Tokens and model calls per role, summed over the thread."""
    trajectory: Annotated[list[dict[str, Any]], DeltaChannel(append_all)]
    """Every action taken: actor, action, parameter summary, observation, check result."""
    dispatch: list[str]
    """Step ids the planner sent to subagents in this round."""
    plan_request: dict[str, Any] | None
    """Why the planner is to plan (``reason``) and the human's ``answer``, if any: set by
    whoever sends the thread to the planner for a (new) plan, cleared once it is planned."""
    approvals: Annotated[dict[str, dict[str, Any]], DeltaChannel(by_path)]
    """Tool calls waiting for, or decided by, a human (``agent.tools.approvals``), by request id:
    approvals bound to a call's exact arguments, and calls whose outcome is unknown."""
    replay: Annotated[dict[str, dict[str, Any]], DeltaChannel(by_path)]
    """Per step id, the model answers of a step that stopped to wait for a human, given back
    when it runs again (``agent.controller.replay``); cleared once the step has finished."""
    turn: Annotated[dict[str, Any], DeltaChannel(latest)]
    """Where the current user turn began (time, step, tokens, message) for its budgets."""
    context: Annotated[dict[str, Any], DeltaChannel(latest)]
    """The Context the current turn runs with, so another process resumes it the same way."""
    result: Annotated[dict[str, Any], DeltaChannel(latest)]
    """The ``Result`` once a run ends or pauses; ``{}`` before."""


class InputState(TypedDict, total=False):
    """What a caller sends: a goal, or messages (Studio, the SDK, a human answer), and the
    user's files."""

    messages: Annotated[list[AnyMessage], DeltaChannel(messages_delta)]
    goal: Annotated[str, DeltaChannel(latest)]
    files: dict[str, str]
    """The user's files, ``{path: text}``: checked like every VFS path and size-limited
    when the planner takes the turn in (``agent.vfs.user_files``), then kept as entries marked
    ``origin: "user"``; files sent on a later turn add to or replace them."""


class SubagentTask(TypedDict):
    """What one subagent receives through ``Send``: its step and nothing more."""

    step: dict[str, Any]
    readable: list[str]
    """Paths of the step's dependencies' outputs, the user's files and its own earlier files
    (contents are read from ``files`` when the step starts, never carried here)."""
    round: int
    token_allowance: int
    """Tokens this step may spend: what is left of the turn's budget, shared by the round."""
    time_allowance_s: float
    """Seconds left of the turn's time budget when the step was sent."""
