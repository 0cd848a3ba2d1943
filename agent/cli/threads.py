"""``deepreflect threads`` and ``deepreflect prune``: the threads listed, or deleted.

A thread a run holds is never deleted: it is named, the others go, and the exit code is 4.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import not_found, reading, where, writing
from agent.cli.output import EXIT_BUSY, error_line

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


def add_parsers(sub: Any) -> None:
    """``threads`` (with ``--delete``) and ``prune``."""
    threads = sub.add_parser("threads", help="list the threads in the database (or delete some)")
    threads.add_argument(
        "--delete", nargs="+", metavar="ID", help="delete these threads' checkpoints"
    )
    flags.db(threads)
    threads.set_defaults(handler=cmd_threads)

    prune = sub.add_parser("prune", help="delete the threads not updated for a while")
    prune.add_argument(
        "--older-than", required=True, metavar="DURATION", help="e.g. 7d, 12h, 30m, 2w"
    )
    flags.db(prune)
    prune.set_defaults(handler=cmd_prune)


def _when(seconds: float | None) -> str:
    return "?" if seconds is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def cmd_threads(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.database_errors import NoThreads
    from agent.store.threads import thread_rows

    if args.delete:
        return _cmd_delete(args, console)
    try:
        with reading(args.db) as saver:
            rows = thread_rows(saver)
    except NoThreads as exc:
        console.print(line(f"no threads: {exc}"))
        return 0
    if not rows:
        console.print(line(f"no threads in {where(args.db)} yet: `deepreflect demo` starts one"))
        return 0
    width = max(len("thread"), *(len(row.thread_id) for row in rows))
    header = f"{'thread':<{width}}  {'created':<16}  {'updated':<16}  {'status':<16}  goal"
    console.print(line((header, "bold")))
    for row in rows:
        goal = row.goal if len(row.goal) <= 60 else row.goal[:59] + "…"
        console.print(
            line(
                f"{row.thread_id:<{width}}  {_when(row.created):<16}  {_when(row.updated):<16}  "
                f"{row.status:<16}  {goal}"
            )
        )
    return 0


def _cmd_delete(args: argparse.Namespace, console: Console) -> int:
    """``threads --delete ID...``: every id must exist (else nothing is deleted); a thread a
    run holds is refused (exit 4) and the others are deleted."""
    from agent.store.threads import thread_rows

    with writing(args.db) as saver:
        rows = {row.thread_id: row for row in thread_rows(saver)}
        missing = [thread_id for thread_id in args.delete if thread_id not in rows]
        if missing:
            raise not_found(missing[0], args.db)
        return _delete(console, saver, [rows[t] for t in dict.fromkeys(args.delete)])


def _delete(console: Console, saver: BaseCheckpointSaver, rows: Sequence[Any]) -> int:
    """Delete each thread of ``rows`` (``ThreadRow``), saying which were deleted and which a
    run holds; exit 4 when any was busy."""
    from agent.runs.progress import line
    from agent.store.fencing import LeaseLost
    from agent.store.holders import ThreadBusy
    from agent.store.threads import delete_thread

    busy = 0
    for row in rows:
        try:
            delete_thread(saver, row.thread_id)
        except (ThreadBusy, LeaseLost) as exc:
            busy += 1
            error_line("not deleted", str(exc))
            continue
        console.print(
            line(
                ("deleted", "red"),
                f" {row.thread_id}  {row.status}, updated {_when(row.updated)}: {row.goal[:60]}",
            )
        )
    return EXIT_BUSY if busy else 0


def cmd_prune(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.database_errors import NoThreads
    from agent.store.threads import parse_duration, stale_threads, thread_rows

    older_than = parse_duration(args.older_than)
    try:
        with writing(args.db) as saver:
            stale = set(stale_threads(saver, older_than))
            rows = [row for row in thread_rows(saver) if row.thread_id in stale]
            if not rows:
                console.print(
                    line(f"no thread in {where(args.db)} is older than {args.older_than}")
                )
                return 0
            code = _delete(console, saver, rows)
    except NoThreads as exc:
        console.print(line(f"nothing to prune: {exc}"))
        return 0
    console.print(line(f"pruned the threads not updated for {args.older_than}"))
    return code
