"""``deepreflect apply THREAD``: the files a thread wrote for its workspace folder, written
back into the folder with a diff, refusing any file changed on disk since the thread read it
(:mod:`agent.runs.apply`)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import reading, thread_state

EXIT_CONFLICT = 1
"""Files changed on disk since the thread read them: nothing was written."""
_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "apply",
        help="write a thread's files back into its workspace folder (--workdir), with a diff",
    )
    p.add_argument("thread_id", help="the thread, as `deepreflect threads` lists it")
    p.add_argument(
        "--force",
        action="store_true",
        help="write files changed on disk since the thread read them too (else nothing is "
        "written while one is)",
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        help="the folder to write into (default: the one the thread ran with)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    flags.db(p)
    p.set_defaults(handler=cmd_apply)


def cmd_apply(args: argparse.Namespace, console: Console) -> int:
    from agent.errors import ConfigError
    from agent.runs.apply import (
        ApplyConflict,
        apply_changes,
        planned_changes,
        thread_workspace,
        workspace_files,
    )
    from agent.runs.progress import line
    from agent.vfs.entries import PathError

    with reading(args.db, args.thread_id) as saver:
        values = thread_state(saver, args.thread_id, args.db)
    files: Mapping[str, Any] = values.get("files") or {}
    folder = thread_workspace(
        values if not args.workdir else {"context": {"workspace": args.workdir}}
    )
    where = folder.root
    try:
        changes = planned_changes(files, folder)
    except PathError as exc:
        raise ConfigError(f"cannot apply into {where}: {exc}") from exc
    if not workspace_files(files):
        console.print(line("  nothing to apply: the thread has no done file for the folder"))
        return 0
    for change in changes:
        _print_change(console, change)
    if args.dry_run:
        return 0
    try:
        written = apply_changes(changes, folder, force=args.force)
    except ApplyConflict as exc:
        console.print(line((str(exc), "bold red")))
        return EXIT_CONFLICT
    except (PathError, OSError) as exc:
        raise ConfigError(f"cannot apply into {where}: {exc}") from exc
    console.print(line((f"applied {len(written)} file(s) to {folder.root}", "bold")))
    return 0


def _print_change(console: Console, change: Any) -> None:
    """One file: its state, then its diff (the file's text made safe for a terminal)."""
    from agent.runs.progress import line

    if change.unchanged:
        console.print(line(("  unchanged ", "dim"), change.path))
        return
    state = (
        "conflict " if change.conflict else ("new      " if change.before is None else "changed  ")
    )
    note = f" ({change.conflict})" if change.conflict else ""
    console.print(line((f"  {state}", "bold"), change.path, (note, "red")))
    for text in change.diff().splitlines():
        console.print(line((text, _STYLES.get(text[:1], ""))))
