"""The ``deepreflect`` argument parser: each command module adds its own subcommand.

Every subcommand sets ``handler``, the function ``main`` calls with the parsed arguments.
"""

from __future__ import annotations

import argparse

from agent.cli import eval as eval_command
from agent.cli import export, memory, resume, run, show, threads


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepreflect",
        description="A deep agent whose reflection loop knows when to stop.",
        epilog="Every run setting also defaults from DEEPREFLECT_<FIELD> (DEEPREFLECT_MODEL, "
        "DEEPREFLECT_MAX_PARALLEL, ...); a flag wins over the environment.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run.add_parsers(sub)  # demo, run
    resume.add_parser(sub)
    show.add_parser(sub)
    export.add_parser(sub)
    threads.add_parsers(sub)  # threads, prune
    eval_command.add_parser(sub)
    memory.add_parser(sub)  # memory ls, show, rm
    return parser
