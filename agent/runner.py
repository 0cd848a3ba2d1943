"""Running and resuming threads from Python: the calls the CLI and users share."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from agent.context import Context
from agent.errors import ConfigError
from agent.result import Result, build_result

DEFAULT_DB = ".deepreflect/threads.sqlite"


def db_location(db: str | None = None) -> str:
    """Where threads live: ``--db``, then ``DEEPREFLECT_DB``, then ``.deepreflect/``."""
    return db or os.environ.get("DEEPREFLECT_DB") or DEFAULT_DB


@contextmanager
def open_checkpointer(db: str | None = None) -> Iterator[BaseCheckpointSaver]:
    """A checkpointer for ``db``: a SQLite file path, or a ``postgresql://`` URL."""
    location = db_location(db)
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError as exc:
            msg = "PostgreSQL threads need `pip install langgraph-checkpoint-postgres`"
            raise ConfigError(msg) from exc
        with PostgresSaver.from_conn_string(location) as saver:
            _setup_postgres(saver)
            yield saver
        return
    path = Path(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


# Any fixed 64-bit key ("deeprflc"): processes opening one database take turns at setup().
_PG_SETUP_LOCK = 0x6465_6570_7266_6C63


def _setup_postgres(saver: BaseCheckpointSaver) -> None:
    """``setup()`` under an advisory lock: workers starting at once on a fresh database would
    otherwise race to create the tables and record the migrations (duplicate key errors)."""
    conn = saver.conn  # type: ignore[attr-defined]  # autocommit, so the lock is per session
    conn.execute("SELECT pg_advisory_lock(%s)", (_PG_SETUP_LOCK,))
    try:
        saver.setup()
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))


def thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def result_of(graph: CompiledStateGraph, thread_id: str) -> Result:
    """The thread's current :class:`Result`."""
    snapshot = graph.get_state(thread_config(thread_id))
    return build_result(snapshot.values, thread_id)


OnUpdate = Callable[[str, dict[str, Any]], None]


def execute(
    graph: CompiledStateGraph,
    payload: dict[str, Any] | None,
    thread_id: str,
    context: Context,
    on_update: OnUpdate | None = None,
) -> Result:
    """Run the graph on a thread until it stops or pauses, reporting each node's update.

    The planner keeps the run's Context in state, so a thread resumed from another process
    (the CLI) runs with the same models and budgets unless told otherwise.
    """
    config = thread_config(thread_id)
    for chunk in graph.stream(payload, config, context=context, stream_mode="updates"):
        for node, update in chunk.items():
            if on_update is not None and isinstance(update, dict):
                on_update(node, update)
    return result_of(graph, thread_id)


def stored_context(graph: CompiledStateGraph, thread_id: str) -> Context | None:
    """The Context a thread last ran with, if it was started through :func:`run`."""
    snapshot = graph.get_state(thread_config(thread_id))
    stored = snapshot.values.get("context")
    return _ctx(stored) if stored else None


def run(
    graph: CompiledStateGraph,
    goal: str,
    *,
    thread_id: str | None = None,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
) -> Result:
    """Start a turn on a thread (a new one unless ``thread_id`` is given) and run it to a stop."""
    thread_id = thread_id or str(uuid.uuid4())
    payload = {"messages": [HumanMessage(goal)]}
    return execute(graph, payload, thread_id, _ctx(context), on_update)


def resume(
    graph: CompiledStateGraph,
    thread_id: str,
    answer: str | None = None,
    *,
    context: Context | Mapping[str, Any] | None = None,
    on_update: OnUpdate | None = None,
) -> Result:
    """Answer a paused thread with a new user message, or, with no answer, continue it.

    With no answer an escalated thread pauses again on the same question without calling a
    model, and a thread whose process died mid-run carries on from its last checkpoint.
    """
    if not graph.get_state(thread_config(thread_id)).values:
        msg = f"thread {thread_id!r} does not exist"
        raise ConfigError(msg)
    payload = {"messages": [HumanMessage(answer)]} if answer is not None else None
    ctx = _ctx(context) if context is not None else stored_context(graph, thread_id)
    return execute(graph, payload, thread_id, ctx or Context(), on_update)


def _ctx(context: Context | Mapping[str, Any] | None) -> Context:
    from agent.nodes import as_context

    return as_context(context)


def list_threads(checkpointer: BaseCheckpointSaver) -> list[str]:
    """Thread ids known to a checkpointer, newest first."""
    seen: dict[str, None] = {}
    for item in checkpointer.list(None):
        thread_id = item.config["configurable"]["thread_id"]
        seen.setdefault(thread_id, None)
    return list(seen)
