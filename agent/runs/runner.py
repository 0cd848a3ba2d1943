"""Running and resuming threads from Python: the calls the CLI and users share.

Where threads live and how a database is opened is ``agent.store.checkpointers``;
``open_checkpointer``, ``list_threads`` and ``db_location`` are re-exported here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from agent.context import Context, as_context
from agent.errors import ConfigError
from agent.graph.build import check_context
from agent.graph.result import SUBAGENT_KIND, Result, build_result, with_subagent_question
from agent.reflection.answers import parse_answer
from agent.state import bounded_message
from agent.store.checkpointers import db_location, open_checkpointer
from agent.store.lease import Lease, ahold, hold
from agent.store.threads import list_threads
from agent.tools.approvals import decisions_problem, pending_requests
from agent.vfs.user_files import check_user_files
from agent.vocabulary import WAITING, Status

# What build_graph returns, whatever its state schema: these functions pass it a Context.
Graph = CompiledStateGraph[Any, Context, Any, Any]


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def result_of(graph: Graph, thread_id: str) -> Result:
    """The thread's current :class:`Result`."""
    return _snapshot_result(graph.get_state(thread_config(thread_id)), thread_id)


def _snapshot_result(snapshot: StateSnapshot, thread_id: str) -> Result:
    """The :class:`Result` of a thread's snapshot, a pause inside a subagent's own graph
    included."""
    return build_result(_thread_values(snapshot), thread_id)


def _thread_values(snapshot: StateSnapshot) -> dict[str, Any]:
    """The thread's values as a caller reads them: paused, with the question, while a
    subagent's own graph waits on ``interrupt()`` (``with_subagent_question``)."""
    return with_subagent_question(snapshot.values or {}, snapshot.interrupts)


OnUpdate = Callable[[str, dict[str, Any]], None]


class NotAwaitingAnswer(ConfigError):
    """An answer sent to a thread that asked nothing: refused, never taken as a new goal."""


def answer_refusal(thread_id: str, status: str) -> str | None:
    """Why an answer cannot go to a thread in ``status``; None when it is waiting for one."""
    if status in WAITING:
        return None
    msg = f"thread {thread_id} is not waiting for an answer (its status is {status})"
    if status == Status.RUNNING:
        msg += f"; `deepreflect resume {thread_id}` with no answer continues its stopped run"
    return f"{msg}; `deepreflect run --thread {thread_id} GOAL` starts a new turn on it"


def execute(
    graph: Graph,
    payload: dict[str, Any] | None,
    thread_id: str,
    context: Context,
    on_update: OnUpdate | None = None,
) -> Result:
    """Run the graph on a thread until it stops or pauses, reporting each node's update.

    The thread is leased for the run: a second writer gets :class:`~agent.store.holders.ThreadBusy`.
    The planner keeps the run's Context in state, so a thread resumed from another process
    (the CLI) runs with the same models and budgets unless told otherwise.
    """
    with hold(_checkpointer_of(graph), thread_id) as lease:
        return _stream(graph, payload, thread_id, context, on_update, lease)


# durability="sync": each superstep's checkpoint is on disk before the next one starts, so a
# killed process loses only the steps that were running (LangGraph's default, "async", saves
# in the background and can lose supersteps that had finished).
STREAM_OPTIONS: dict[str, Any] = {"stream_mode": "updates", "durability": "sync"}


def _stream(
    graph: Graph,
    payload: dict[str, Any] | None,
    thread_id: str,
    context: Context,
    on_update: OnUpdate | None,
    lease: Lease,
) -> Result:
    """:func:`execute`'s work, for a caller that already holds the thread's lease."""
    config = thread_config(thread_id)
    for chunk in graph.stream(payload, config, context=context, **STREAM_OPTIONS):
        _reported(chunk, lease, on_update)
    return result_of(graph, thread_id)


async def _astream(
    graph: Graph,
    payload: Any,
    thread_id: str,
    context: Context,
    on_update: OnUpdate | None,
    lease: Lease,
) -> Result:
    """:func:`_stream` under ``astream``: the nodes run as coroutines on the caller's loop."""
    config = thread_config(thread_id)
    async for chunk in graph.astream(payload, config, context=context, **STREAM_OPTIONS):
        _reported(chunk, lease, on_update)
    return _snapshot_result(await graph.aget_state(config), thread_id)


def _reported(chunk: Mapping[str, Any], lease: Lease, on_update: OnUpdate | None) -> None:
    """One superstep's updates, to ``on_update``; a lost lease stops the run here."""
    lease.check()
    for node, update in chunk.items():
        if on_update is not None and isinstance(update, dict):
            on_update(node, update)


def stored_context(graph: Graph, thread_id: str) -> Context | None:
    """The Context a thread last ran with, if it was started through :func:`run`."""
    return _context_in(graph.get_state(thread_config(thread_id)).values)


def _context_in(values: Mapping[str, Any]) -> Context | None:
    stored = values.get("context")
    return _ctx(stored) if stored else None


def run(
    graph: Graph,
    goal: str,
    *,
    thread_id: str | None = None,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
    files: Mapping[str, str] | None = None,
) -> Result:
    """Start a turn on a thread (a new one unless ``thread_id`` is given) and run it to a stop.

    A Context that cannot run (an invalid field, a model string without a provider, a
    provider without its key) raises :class:`~agent.errors.ConfigError` with the fix before
    anything is stored; a run that fails or pauses says why in ``Result["message"]``.

    ``files`` are the user's files, ``{path: text}`` (``agent.load_files`` reads them from
    disk): every step can read them, a step can edit one, and on a thread that has some
    already they are added or replaced. A bad path, a binary content or a size over the
    limits raises :class:`~agent.vfs.user_files.UserFileError` (a ``ValueError``) naming the
    file, before anything runs.
    """
    payload = _goal_payload(goal, files)
    thread_id = thread_id or str(uuid.uuid4())
    ctx = _ctx(context)
    check_context(graph, ctx)
    return execute(graph, payload, thread_id, ctx, on_update)


async def arun(
    graph: Graph,
    goal: str,
    *,
    thread_id: str | None = None,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
    files: Mapping[str, str] | None = None,
) -> Result:
    """:func:`run` for async code: ``await arun(graph, goal)`` with an async checkpointer
    (``agent.open_async_checkpointer``, or any LangGraph async saver)."""
    payload = _goal_payload(goal, files)
    thread_id = thread_id or str(uuid.uuid4())
    ctx = _ctx(context)
    check_context(graph, ctx)
    async with ahold(_checkpointer_of(graph), thread_id) as lease:
        return await _astream(graph, payload, thread_id, ctx, on_update, lease)


def _goal_payload(goal: str, files: Mapping[str, str] | None = None) -> dict[str, Any]:
    # an oversized goal is cut before LangGraph stores its input (it is rejected anyway);
    # files are checked before too, so a refused one is never stored in the thread
    payload: dict[str, Any] = {"messages": [bounded_message(HumanMessage(goal))]}
    if files is not None:
        payload["files"] = check_user_files(files)
    return payload


def resume(
    graph: Graph,
    thread_id: str,
    answer: str | Mapping[str, Any] | None = None,
    *,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
) -> Result:
    """Answer a paused thread with a new user message, or, with no answer, continue it.

    ``answer`` is text, or an action (``{"action": "accept"}``, ``{"action": "stop"}``,
    ``{"action": "continue"}``, one of the escalation's ``suggested_responses`` values),
    which resumes the pending ``interrupt()`` with ``Command(resume=answer)``.

    With no answer an escalated thread pauses again on the same question without calling a
    model, and a thread whose process died mid-run carries on from its last checkpoint. An
    answer to a thread that is not waiting for one is refused (:class:`NotAwaitingAnswer`):
    taken as a message it would start a new goal. The thread's status is read under its
    lease: of two answers sent at once one runs and the other gets ``ThreadBusy``.
    """
    with hold(_checkpointer_of(graph), thread_id) as lease:
        snapshot = graph.get_state(thread_config(thread_id))
        payload, ctx = _resumed(snapshot, thread_id, answer, context)
        return _stream(graph, payload, thread_id, ctx, on_update, lease)


async def aresume(
    graph: Graph,
    thread_id: str,
    answer: str | Mapping[str, Any] | None = None,
    *,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
) -> Result:
    """:func:`resume` for async code, with an async checkpointer."""
    async with ahold(_checkpointer_of(graph), thread_id) as lease:
        snapshot = await graph.aget_state(thread_config(thread_id))
        payload, ctx = _resumed(snapshot, thread_id, answer, context)
        return await _astream(graph, payload, thread_id, ctx, on_update, lease)


def _resumed(
    snapshot: StateSnapshot,
    thread_id: str,
    answer: str | Mapping[str, Any] | None,
    context: Context | Mapping[str, Any] | None,
) -> tuple[Any, Context]:
    """What resuming the thread sends, and with which Context (given, else the stored one)."""
    if not snapshot.values:
        msg = f"thread {thread_id!r} does not exist"
        raise ConfigError(msg)
    values = _thread_values(snapshot)
    refusal = answer_refusal(thread_id, str(values.get("status") or Status.RUNNING))
    if answer is not None and refusal:
        raise NotAwaitingAnswer(refusal)
    payload = _resume_payload(snapshot, values, thread_id, answer)
    ctx = _ctx(context) if context is not None else _context_in(values)
    return payload, ctx or Context()


def _checkpointer_of(graph: Graph) -> Any:
    """The graph's checkpointer: threads are saved state, so run/resume need one (the graph
    ``graphs/deep_agent.py`` serves has none; its server brings its own)."""
    if not isinstance(graph.checkpointer, BaseCheckpointSaver):
        msg = (
            "run() and resume() keep the thread in a checkpointer, and this graph has none: "
            "build it with build_graph(checkpointer=...), e.g. agent.open_checkpointer(), "
            "or langgraph's InMemorySaver() for a thread that lives as long as the process"
        )
        raise ConfigError(msg)
    return graph.checkpointer


def _resume_payload(
    snapshot: StateSnapshot,
    values: Mapping[str, Any],
    thread_id: str,
    answer: str | Mapping[str, Any] | None,
) -> Any:
    """Text goes in as a new message (cut like any message when oversized); an action resumes
    the pending interrupt; nothing continues the thread as it is. A subagent's own graph
    gets the answer, whatever it is, as its interrupt's value."""
    if answer is None:
        return None
    pending = values.get("escalation") or {}
    if pending.get("kind") == SUBAGENT_KIND:
        return Command(resume={pending["interrupt_id"]: answer})
    if pending.get("kind") == "approval":
        if (decided := _decisions(snapshot, answer)) is not None:
            return decided
    if isinstance(answer, str):
        return {"messages": [bounded_message(HumanMessage(answer))]}
    parse_answer(answer)  # an unknown action is a clear error before anything runs
    value = list(answer) if isinstance(answer, list) else dict(answer)  # a chat UI's decisions
    if not any(task.interrupts for task in snapshot.tasks):
        msg = f"thread {thread_id!r} is not paused on a question; {value!r} answers none"
        raise ConfigError(msg)
    return Command(resume=value)


def _decisions(snapshot: StateSnapshot, answer: str | Mapping[str, Any] | list[Any]) -> Any:
    """The resume of a thread waiting on tool calls (``agent.tools.approvals``): decisions go to
    its interrupt, checked first; "approve" / "reject" decide every call. Other text is a
    new message (a change of plan); ``{"action": "stop"}`` stops the run (None: neither)."""
    if isinstance(answer, str):
        word = answer.strip().lower()
        return Command(resume=word) if word in ("approve", "reject") else None
    if isinstance(answer, Mapping) and "action" in answer and "decisions" not in answer:
        return None  # an escalation action (stop, accept): parse_answer checks it
    version = (snapshot.values.get("plan") or {}).get("version")
    requests = pending_requests(snapshot.values.get("approvals"), version)
    if problem := decisions_problem(answer, requests):
        raise ConfigError(problem)
    return Command(resume=answer if isinstance(answer, list) else dict(answer))


def _ctx(context: Context | Mapping[str, Any] | None) -> Context:
    return as_context(context)


__all__ = [
    "Graph",
    "aresume",
    "arun",
    "NotAwaitingAnswer",
    "answer_refusal",
    "db_location",
    "execute",
    "list_threads",
    "open_checkpointer",
    "result_of",
    "resume",
    "run",
    "stored_context",
    "thread_config",
]
