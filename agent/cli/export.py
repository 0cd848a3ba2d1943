"""``deepreflect export``: a thread's artifacts written to a folder, byte for byte.

``run``, ``demo`` and ``resume`` export the same way with ``--out DIR`` once the run stops.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import reading, thread_state

if TYPE_CHECKING:
    from agent.runs.runner import Graph


def add_parser(sub: Any) -> None:
    exp = sub.add_parser("export", help="write a thread's artifacts to a folder, byte for byte")
    exp.add_argument("thread_id", help="the thread, as `deepreflect threads` lists it")
    exp.add_argument("dir", help="the folder to write into (created if missing)")
    exp.add_argument("--all", action="store_true", help="every file, with a status manifest")
    exp.add_argument("--force", action="store_true", help="overwrite files that exist")
    flags.db(exp)
    exp.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    with reading(args.db, args.thread_id) as saver:
        values = thread_state(saver, args.thread_id, args.db)
    export(console, values, args.dir, include_all=args.all, force=args.force)
    return 0


def export(
    console: Console, values: Mapping[str, Any], folder: str, *, include_all: bool, force: bool
) -> None:
    """Write the thread's done files (or ``include_all``) into ``folder``, a line each; a
    file that cannot be written is a usage error."""
    from agent.errors import ConfigError
    from agent.runs.export import ExportClash, ExportError, export_files
    from agent.runs.progress import line

    try:
        written = export_files(
            values.get("files") or {}, folder, include_all=include_all, force=force
        )
    except ExportClash as exc:
        msg = f"{exc.target} exists with other content; pass --force to overwrite it"
        raise ConfigError(msg) from exc
    except ExportError as exc:
        raise ConfigError(str(exc)) from exc
    except OSError as exc:  # a folder that cannot be made or written: said without errno
        where = f" {exc.filename}" if exc.filename else ""
        msg = f"cannot export into {folder}:{where} {exc.strerror or exc}"
        raise ConfigError(msg) from exc
    files = values.get("files") or {}
    for path in written:
        rel = path.relative_to(Path(folder).resolve()).as_posix()
        console.print(line(f"  {files[rel].get('status', '?'):>7} {rel} -> {path}"))
    if not written:
        console.print(line("  no done artifacts to export (--all exports every file)"))


def export_out(args: argparse.Namespace, graph: Graph, thread_id: str) -> None:
    """``--out DIR``: the run's done artifacts written to DIR once it stops (on stderr with
    ``--json``, which keeps stdout for the Result)."""
    from agent.runs.runner import thread_config

    if not getattr(args, "out", None):
        return
    console = Console(stderr=args.json, highlight=False, soft_wrap=True)
    values = graph.get_state(thread_config(thread_id)).values
    export(console, values, args.out, include_all=False, force=args.force)
