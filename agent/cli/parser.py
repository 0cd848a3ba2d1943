"""The ``deepreflect`` argument parser: each command module adds its own subcommand.

Every subcommand sets ``handler``, the function ``main`` calls with the parsed arguments.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from typing import NoReturn

from agent.cli import apply, export, memory, resume, run, show, threads
from agent.cli import eval as eval_command
from agent.suggestions import did_you_mean

_UNKNOWN = re.compile(r"unrecognized arguments: (\S+)")
_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)'")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors suggest the flag or choice meant (argparse's own
    ``suggest_on_error`` exists only from Python 3.14); its subcommands are of this class."""

    def error(self, message: str) -> NoReturn:
        super().error(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        if match := _UNKNOWN.search(message):
            word = match.group(1).split("=", 1)[0]
            if owners := _commands_taking(self, word):  # a real flag, of another command
                return f" ({word} is an option of {' and '.join(owners)}, not of this command)"
            flags = {f for a in _actions(self) for f in a.option_strings if f.startswith("--")}
            return did_you_mean(word, sorted(flags)) if word.startswith("-") else ""
        if match := _CHOICE.search(message):
            for action in _actions(self):
                if match.group(1) in action.option_strings and action.choices is not None:
                    return did_you_mean(match.group(2), [str(c) for c in action.choices])
        return ""


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Every argument of ``parser`` and of its subcommands."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _actions(child)


def _commands_taking(parser: argparse.ArgumentParser, flag: str) -> list[str]:
    """The subcommands (``deepreflect run``, ...) that take ``flag``."""
    owners = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if any(flag in a.option_strings for a in _actions(child)):
                    owners.append(f"deepreflect {name}")
    return sorted(set(owners))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    apply.add_parser(sub)
    threads.add_parsers(sub)  # threads, prune
    eval_command.add_parser(sub)
    memory.add_parser(sub)  # memory ls, show, rm
    return parser
