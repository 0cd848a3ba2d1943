"""Threads as the read-only commands see them, read from their checkpoints without building
the graph (``deepreflect threads`` and ``show`` start in a fraction of a second), and
listing and deleting threads that no run holds.

A thread's state is its newest checkpoint's channel values, plus the keys ``agent/state.py``
stores as LangGraph ``DeltaChannel``\\ s (only their writes are in each checkpoint), which are
replayed here through the same reducers; a test checks that this view equals
``graph.get_state(...).values``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from agent.errors import ConfigError, describe
from agent.reducers import append_all, by_id, by_path, latest, summed
from agent.store.database_errors import is_database_error
from agent.store.lease import hold, lease_holder
from agent.store.savers import is_postgres_saver
from agent.vocabulary import Status

INTERRUPTED = "interrupted"
"""The shown status of a thread whose state says ``running`` but that no run holds: its
process was killed or its run raised, and ``deepreflect resume ID`` continues it."""
UNREADABLE = "unreadable"
"""The shown status of a thread whose newest checkpoint cannot be decoded."""


# The State keys kept as DeltaChannels, with their reducers (agent/reducers.py, shared with
# agent/state.py, which imports the graph) and value types; tests check the keys agree.
DELTA_KEYS: dict[str, tuple[Callable[[Any, Sequence[Any]], Any], type]] = {
    "messages": (by_id, list),
    "plan": (latest, dict),
    "plan_history": (append_all, list),
    "files": (by_path, dict),
    "file_summaries": (by_path, dict),
    "decisions": (append_all, list),
    "trajectory": (append_all, list),
    "approvals": (by_path, dict),
    "replay": (by_path, dict),
    "turn": (latest, dict),
    "context": (latest, dict),
    "result": (latest, dict),
    "usage": (summed, dict),
    "goal": (latest, str),
}


def plain_serde() -> SerializerProtocol:
    """LangGraph's serializer, except that LangGraph's and LangChain's own objects (messages,
    ``Send``, ``Interrupt``) are left as their stored fields: the read-only commands use
    neither, and reviving them would import most of LangChain (a second, for ``show``)."""
    from langgraph.checkpoint.serde import jsonplus

    fallback = jsonplus.JsonPlusSerializer()._unpack_ext_hook
    objects = (
        jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG,
        jsonplus.EXT_CONSTRUCTOR_POS_ARGS,
        jsonplus.EXT_CONSTRUCTOR_KW_ARGS,
        jsonplus.EXT_PYDANTIC_V1,
        jsonplus.EXT_PYDANTIC_V2,
    )

    def hook(code: int, data: bytes) -> Any:
        if code == jsonplus.EXT_DELTA_SNAPSHOT:
            return Snapshot(_unpack(data))
        if code in objects:
            module, _, fields = _unpack(data)[:3]
            if str(module).startswith(("langgraph.", "langchain_core.")):
                return fields
        return fallback(code, data)

    def _unpack(data: bytes) -> Any:
        return jsonplus.ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)

    _NON_STR_KEYS = jsonplus.ormsgpack.OPT_NON_STR_KEYS
    return jsonplus.JsonPlusSerializer(__unpack_ext_hook__=hook)


@dataclass(frozen=True)
class Snapshot:
    """A ``DeltaChannel`` snapshot as :func:`plain_serde` decodes it: its value, unrevived."""

    value: Any


def thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def thread_values(saver: BaseCheckpointSaver, thread_id: str) -> dict[str, Any] | None:
    """The thread's state as ``graph.get_state`` gives it; None when there is no such thread.

    Raises whatever decoding the checkpoint raises (a damaged thread).
    """
    saved = saver.get_tuple(thread_config(thread_id))  # type: ignore[arg-type]
    if saved is None:
        return None
    stored = saved.checkpoint["channel_values"]
    values = {k: v for k, v in stored.items() if not k.startswith(("__", "branch:"))}
    return values | delta_values(saver, saved, DELTA_KEYS)


def delta_values(saver: BaseCheckpointSaver, saved: Any, keys: Iterable[str]) -> dict[str, Any]:
    """The values of the delta ``keys`` in the checkpoint ``saved`` (a ``CheckpointTuple``):
    each stored snapshot, or its writes replayed."""
    stored = saved.checkpoint["channel_values"]
    written = saved.checkpoint["channel_versions"]
    wanted = [k for k in keys if k in DELTA_KEYS]
    replay = [k for k in wanted if k in written and k not in stored]
    histories = (
        saver.get_delta_channel_history(config=saved.config, channels=replay) if replay else {}
    )
    return {key: _delta_value(key, *DELTA_KEYS[key], stored, histories) for key in wanted}


def _delta_value(
    key: str,
    reducer: Callable[[Any, Sequence[Any]], Any],
    kind: type,
    stored: Mapping[str, Any],
    histories: Mapping[str, Any],
) -> Any:
    """What ``DeltaChannel(reducer)`` holds: its stored snapshot, or the nearest one (the
    seed) with the writes after it replayed, or nothing (empty)."""
    if key not in histories:
        return _seed(stored.get(key), reducer, kind)
    history = histories[key]
    base = _seed(history.get("seed"), reducer, kind)
    writes = [value for _, _, value in history["writes"]]
    return reducer(base, writes) if writes else base


def _seed(value: Any, reducer: Callable[[Any, Sequence[Any]], Any], kind: type) -> Any:
    """A stored DeltaChannel value (a snapshot, an older plain value, or nothing) as the
    channel reads it back: LangGraph's own ``from_checkpoint`` unwraps its snapshots."""
    if isinstance(value, Snapshot):
        return value.value
    from langgraph.channels.delta import DeltaChannel

    return DeltaChannel(reducer, kind).from_checkpoint(value).get()


def shown_status(saver: BaseCheckpointSaver, thread_id: str, status: str | None) -> str:
    """``status``, except that a ``running`` thread no run holds is ``interrupted``."""
    status = status or Status.RUNNING
    if status != Status.RUNNING:
        return status
    return Status.RUNNING if lease_holder(saver, thread_id) else INTERRUPTED


@dataclass(frozen=True)
class ThreadRow:
    """One line of ``deepreflect threads``."""

    thread_id: str
    created: float | None
    updated: float | None
    status: str
    goal: str
    """The goal, or for an ``unreadable`` thread what went wrong."""


def checkpoint_time(checkpoint_id: str) -> float | None:
    """When a checkpoint was written (Unix seconds), from its uuid6 id; None if not uuid6."""
    try:
        value = int(checkpoint_id.replace("-", ""), 16)
    except ValueError:
        return None
    if (value >> 76) & 0xF != 6:
        return None
    ticks = (value >> 80) << 12 | ((value >> 64) & 0x0FFF)  # 100 ns since 1582-10-15
    return (ticks - 0x01B21DD213814000) / 1e7


# Each thread's first and newest checkpoint id (uuid6: they carry their time), newest first.
_THREAD_SPANS = (
    "SELECT thread_id, min(checkpoint_id), max(checkpoint_id) FROM checkpoints "
    "GROUP BY thread_id ORDER BY max(checkpoint_id) DESC"
)


def thread_spans(checkpointer: BaseCheckpointSaver) -> list[tuple[str, str, str]]:
    """``(thread_id, first checkpoint id, newest checkpoint id)`` of every thread, newest
    first, without decoding any checkpoint (so an undecodable one hides nothing)."""
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            rows = cur.execute(_THREAD_SPANS).fetchall()
    elif is_postgres_saver(checkpointer):
        rows = _postgres_rows(checkpointer, _THREAD_SPANS)
    else:
        spans: dict[str, tuple[str, str]] = {}
        for item in checkpointer.list(None):
            configurable = item.config["configurable"]
            first, last = spans.get(configurable["thread_id"], (None, None))
            cid = str(configurable["checkpoint_id"])
            spans[configurable["thread_id"]] = (min(first or cid, cid), max(last or cid, cid))
        rows = sorted(((t, a, b) for t, (a, b) in spans.items()), key=lambda r: r[2], reverse=True)
    return [(str(t), str(first), str(last)) for t, first, last in rows]


def list_threads(checkpointer: BaseCheckpointSaver) -> list[str]:
    """Thread ids known to a checkpointer, newest first.

    SQLite and PostgreSQL are asked for the ids alone: listing checkpoints would decode every
    checkpoint of every thread, and one that cannot be decoded would hide all the others.
    """
    return [thread_id for thread_id, _, _ in thread_spans(checkpointer)]


def _postgres_rows(saver: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on a PostgresSaver's connection (or its pool), as tuples."""
    from psycopg import Connection
    from psycopg.rows import tuple_row

    if isinstance(saver.conn, Connection):
        with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
            return cur.execute(sql).fetchall()
    with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
        return cur.execute(sql).fetchall()


def thread_rows(saver: BaseCheckpointSaver) -> list[ThreadRow]:
    """Every thread, newest first; one that cannot be decoded is listed as ``unreadable``
    instead of hiding the others."""
    rows = []
    for thread_id, first, last in thread_spans(saver):
        created, updated = checkpoint_time(first), checkpoint_time(last)
        try:
            saved = saver.get_tuple(thread_config(thread_id))  # type: ignore[arg-type]
        except Exception as exc:
            if is_database_error(exc):
                raise  # the database, not this thread
            reason = describe(exc, limit=60)
            rows.append(ThreadRow(thread_id, created, updated, UNREADABLE, reason))
            continue
        values = saved.checkpoint["channel_values"] if saved else {}
        status = shown_status(saver, thread_id, values.get("status"))
        goal = delta_values(saver, saved, ["goal"]).get("goal", "") if saved else ""
        goal = " ".join(str(goal).split())
        rows.append(ThreadRow(thread_id, created, updated, status, goal))
    return rows


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` or ``1d12h``; ConfigError else."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhdw])", text.strip().lower())
    if not parts or re.sub(r"[\d.\s]+[smhdw]", "", text.strip().lower()):
        msg = f"--older-than wants a duration such as 7d, 12h or 30m, not {text!r}"
        raise ConfigError(msg)
    return sum(float(n) * _UNITS[unit] for n, unit in parts)


def delete_thread(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Delete a thread's checkpoints and writes, under its lease: a thread a run or resume
    holds is refused with :class:`~agent.store.holders.ThreadBusy` and nothing is deleted."""
    with hold(saver, thread_id):
        saver.delete_thread(thread_id)


def stale_threads(saver: BaseCheckpointSaver, older_than_s: float) -> list[str]:
    """Threads whose newest checkpoint is older than ``older_than_s`` seconds."""
    cutoff = time.time() - older_than_s
    stale = []
    for thread_id, _, last in thread_spans(saver):
        updated = checkpoint_time(last)
        if updated is not None and updated < cutoff:
            stale.append(thread_id)
    return stale
