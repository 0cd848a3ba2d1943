"""Running and resuming threads from Python: the calls the CLI and users share."""

from __future__ import annotations

import os
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from agent.context import Context
from agent.errors import ConfigError
from agent.result import Result, build_result

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection

DEFAULT_DB = ".deepreflect/threads.sqlite"
# What build_graph returns, whatever its state schema: these functions pass it a Context.
Graph = CompiledStateGraph[Any, Context, Any, Any]


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
            msg = "PostgreSQL threads need `pip install 'deepreflect[postgres]'`"
            raise ConfigError(msg) from exc
        import psycopg

        with ExitStack() as stack:
            try:
                pg_saver = stack.enter_context(PostgresSaver.from_conn_string(location))
                _setup_postgres(pg_saver)
            except psycopg.Error as exc:
                msg = f"cannot use PostgreSQL at {_redact(location)}: {str(exc).strip()}"
                raise ConfigError(msg) from exc
            yield pg_saver
        return
    path = Path(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    try:
        _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        saver = SqliteSaver(conn)
        _retry_locked(saver.setup)
        yield saver
    finally:
        conn.close()


# Any fixed 64-bit key ("deeprflc"): processes opening one database take turns at setup().
_PG_SETUP_LOCK = 0x6465_6570_7266_6C63


def _redact(url: str) -> str:
    """The URL without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        url = urlunsplit(parts._replace(netloc=netloc))
    return re.sub(r"(password=)[^&]*", r"\1***", url)


def _setup_postgres(saver: PostgresSaver, wait_s: float = 60) -> None:
    """``setup()`` by one process at a time: workers starting at once on a fresh database
    otherwise race to create the tables and record the migrations (duplicate key errors).

    The lock is polled, never waited for in the server: a migration creates an index
    CONCURRENTLY, which waits for every open transaction, a blocked lock request included.
    """
    from psycopg.rows import tuple_row

    # from_conn_string: one connection, not a pool, in autocommit: the lock is per session
    conn = cast("Connection[Any]", saver.conn)
    deadline = time.monotonic() + wait_s
    locked = False
    while not locked and time.monotonic() < deadline:
        with conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute("SELECT pg_try_advisory_lock(%s)", (_PG_SETUP_LOCK,)).fetchone()
        locked = bool(row and row[0])
        if not locked:
            time.sleep(0.05)
    try:
        saver.setup()
    finally:
        if locked:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))


def _retry_locked(action: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    """Run ``action``, retrying "database is locked" for up to ``timeout_s`` seconds.

    SQLite skips the busy timeout where waiting could deadlock: switching a new database to
    WAL while another process holds the write lock (creating the tables) fails at once, so
    processes opening a fresh database together would otherwise race.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def result_of(graph: Graph, thread_id: str) -> Result:
    """The thread's current :class:`Result`."""
    snapshot = graph.get_state(thread_config(thread_id))
    return build_result(snapshot.values, thread_id)


OnUpdate = Callable[[str, dict[str, Any]], None]


def execute(
    graph: Graph,
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
    # durability="sync": each superstep's checkpoint is on disk before the next one starts,
    # so a killed process loses only the steps that were running (LangGraph's default,
    # "async", saves in the background and can lose supersteps that had finished).
    stream = graph.stream(
        payload, config, context=context, stream_mode="updates", durability="sync"
    )
    for chunk in stream:
        for node, update in chunk.items():
            if on_update is not None and isinstance(update, dict):
                on_update(node, update)
    return result_of(graph, thread_id)


def stored_context(graph: Graph, thread_id: str) -> Context | None:
    """The Context a thread last ran with, if it was started through :func:`run`."""
    snapshot = graph.get_state(thread_config(thread_id))
    stored = snapshot.values.get("context")
    return _ctx(stored) if stored else None


def run(
    graph: Graph,
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
    graph: Graph,
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
