"""Shared pieces of the benchmarks: scripted plans, a SQLite graph, and the report table."""

from __future__ import annotations

import platform
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from agent import Context, ScriptedChatModel, build_graph
from agent.models.scripted import tool_call
from agent.store.sqlite_files import sqlite_saver

END = {"decision": "end", "reason": "all done", "final_answer": "Done."}


def chain(n: int) -> list[dict[str, Any]]:
    """A sequential plan of n steps, each writing one artifact checked as non-empty."""
    return [
        {
            "step_id": f"S{i}",
            "depends_on": [f"S{i - 1}"] if i > 1 else [],
            "action": "writer",
            "instructions": f"Write part {i}.",
            "expected_output": f"out/part{i:03d}.md",
            "done_when": {"kind": "non_empty"},
        }
        for i in range(1, n + 1)
    ]


def writer(size: int) -> Callable:
    """A subagent that writes ``size`` bytes to its step's artifact, then stops."""

    def respond(messages, metadata):
        if isinstance(messages[-1], ToolMessage):
            return "written"
        path = metadata["expected_output"]
        return tool_call("write_file", path=path, content=(path + "\n").ljust(size, "x"))

    return respond


def roles(plan: list[dict[str, Any]], size: int, reflections: Sequence[Any]) -> dict[str, Any]:
    return {
        "planner": ScriptedChatModel([{"steps": plan}]),
        "reflection": ScriptedChatModel(list(reflections)),
        "judge": ScriptedChatModel(responder=approve),  # prose is read by the judge
        "default": ScriptedChatModel(responder=writer(size)),
    }


def approve(messages: Any) -> dict[str, Any]:
    """A judge that finds no issue: the benchmarks measure the loop, not the prose."""
    return {"issues": [], "score": 1.0}


def sqlite_graph(models: dict[str, Any], **kwargs: Any):
    """A fresh SQLite file, opened as the CLI opens its threads file, and the deepreflect
    graph on it."""
    path = Path(tempfile.mkdtemp()) / "threads.sqlite"
    saver = sqlite_saver(path, write=True)  # as the CLI opens its threads file
    return build_graph(models=models, checkpointer=saver, retry_policy=None, **kwargs), saver.conn


def stored_bytes(conn: sqlite3.Connection) -> int:
    """Everything the checkpointer wrote: checkpoints, their metadata and pending writes."""
    checkpoints = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
    ).fetchone()[0]
    writes = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints + writes)


def sqlite_sizes(conn: sqlite3.Connection, path: Path) -> dict[str, int]:
    """What a run left in a SQLite file: the WAL before SQLite checkpoints it, the blobs
    LangGraph wrote, and the main file after ``PRAGMA wal_checkpoint(TRUNCATE)``."""
    wal = Path(f"{path}-wal")
    measured = {"wal": wal.stat().st_size if wal.exists() else 0, "blobs": stored_bytes(conn)}
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"file": path.stat().st_size, **measured}


CONTEXT = Context(model="scripted:happy", token_budget=10**9, max_steps=10_000)


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"


def report(title: str, rows: Sequence[Sequence[Any]], header: Sequence[str]) -> None:
    """Print a plain table: every figure next to its baseline and their ratio."""
    print(f"\n{title}  ({machine()})")
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        print("  ".join(str(cell).rjust(w) for cell, w in zip(row, widths, strict=True)))
