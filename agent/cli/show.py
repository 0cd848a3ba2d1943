"""``deepreflect show``: a thread's goal, history and Result, or one of its files.

It reads the database without the graph, so that it starts without LangGraph or LangChain.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import reading, thread_state
from agent.cli.output import print_json
from agent.vocabulary import Status

if TYPE_CHECKING:
    from agent.graph.result import Result


def add_parser(sub: Any) -> None:
    show = sub.add_parser("show", help="a thread's status, plan, artifacts and decisions")
    show.add_argument("thread_id", help="the thread, as `deepreflect threads` lists it")
    show.add_argument("--file", help="print this file's content, as the thread holds it")
    flags.db(show, json_flag=True)
    show.set_defaults(handler=cmd_show)


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from agent.errors import ConfigError
    from agent.graph.result import build_result
    from agent.store.lease import lease_holder
    from agent.store.threads import shown_status

    with reading(args.db, args.thread_id) as saver:
        values = thread_state(saver, args.thread_id, args.db)
        status = shown_status(saver, args.thread_id, values.get("status"))
        holder = lease_holder(saver, args.thread_id) if status == Status.RUNNING else None
    if args.file is not None:
        entry = (values.get("files") or {}).get(args.file)
        if entry is None:
            msg = f"thread {args.thread_id!r} has no file {args.file!r}"
            raise ConfigError(msg)
        sys.stdout.write(str(entry.get("content") or ""))
        return 0
    result = build_result(values, args.thread_id)
    if args.json:
        print_json(result)
        return 0
    _print_thread(console, values, result, status, holder)
    return 0


def _print_thread(
    console: Console, values: Mapping[str, Any], result: Result, status: str, holder: str | None
) -> None:
    """The goal, the history and the Result; a thread whose run died is said to be
    interrupted, with the command that continues it."""
    from agent.runs.progress import history, line, print_result
    from agent.store.threads import INTERRUPTED

    console.print(line(("goal", "bold"), f": {_goal_of(values)}"))
    for text in history(values):
        console.print(line(text))
    if status == INTERRUPTED:  # the state says running, and no run holds it
        result = {**result, "status": INTERRUPTED, "stop_reason": "its run stopped unfinished"}
    elif holder:
        result = {**result, "stop_reason": holder}
    print_result(console, result)
    if status == INTERRUPTED:
        console.print()
        console.print(
            line(
                "its process was killed or its run failed; the checkpoint is kept: ",
                (f"deepreflect resume {result['thread_id']}", "bold"),
                " continues it",
            )
        )


def _goal_of(values: Mapping[str, Any]) -> str:
    """The thread's goal; for a run that failed before it took its goal, its first message."""
    if values.get("goal"):
        return str(values["goal"])
    for message in values.get("messages") or []:
        kind = message.get("type") if isinstance(message, Mapping) else getattr(message, "type", "")
        if kind == "human":
            content = message.get("content") if isinstance(message, Mapping) else message.content
            return str(content)[:300] or "(an empty goal)"
    return "(no goal was recorded: the run failed before it started)"
