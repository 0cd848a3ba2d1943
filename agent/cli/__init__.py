"""The ``deepreflect`` command: demo, run, resume, show, export, threads, prune, eval,
memory.

A module per command (``run`` holds demo too, ``threads`` holds prune), each adding its
subcommand to the parser of ``parser``. Only argparse and rich load with them: each command
imports what it needs, and only the commands that run a graph import LangGraph's graph and
LangChain's models, so that ``--help``, ``threads`` and ``show`` start in a fraction of a
second (``bench/startup.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from agent.cli.failures import failure, interrupted
from agent.cli.output import EXIT_INTERRUPTED, PipeConsole, error_line
from agent.cli.parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Exit codes: 0 success, 3 awaiting input or budget exhausted, 1 a failed or stopped run,
    2 bad usage or configuration (the database included), 4 the thread is busy or another
    writer took it over while this run was stalled (nothing more was written), 130
    interrupted (Ctrl-C; a run's checkpoint is kept).
    """
    args = build_parser().parse_args(argv)
    # soft_wrap: a long path, URL or message stays on one line, as printed
    console = PipeConsole(highlight=False, stderr=False, soft_wrap=True)
    try:
        code: int = args.handler(args, console)
        return code
    except KeyboardInterrupt:
        error_line("interrupted", interrupted(args))
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `deepreflect show ID | head`: the reader has all it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet
        return 0
    except Exception as exc:
        from agent.store.checkpointers import db_location

        location = db_location(getattr(args, "db", None))
        code, label, message = failure(exc, location)
        error_line(label, message, location)
        return code
