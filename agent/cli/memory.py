"""``deepreflect memory ls|show|rm``: the memories threads share, in the store beside the
threads (``agent.store.memories``), yours by default (``--user``) or an assistant's."""

from __future__ import annotations

import argparse
import copy
import getpass
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags

if TYPE_CHECKING:
    from agent.context import Context

__all__ = ["add_parser", "cli_user", "login_name"]


def add_parser(sub: Any) -> None:
    """``memory`` with its actions ``ls``, ``show NAME`` and ``rm NAME...``."""
    memory = sub.add_parser("memory", help="list, show or delete the memories threads share")
    actions = memory.add_subparsers(
        dest="action", required=True, help="ls: list, show: print, rm: delete memories"
    )
    for name, text in (
        ("ls", "list the memories"),
        ("show", "print one memory"),
        ("rm", "delete memories"),
    ):
        action = actions.add_parser(name, help=text)
        if name == "show":
            action.add_argument("name", help="the memory, e.g. conventions.md")
        if name == "rm":
            action.add_argument("names", nargs="+", metavar="NAME", help="the memories")
        owner = action.add_mutually_exclusive_group()
        owner.add_argument("--user", help="whose memories (default: your login name)")
        owner.add_argument("--assistant", metavar="ID", help="an assistant's memories")
        flags.db(action)
        action.set_defaults(handler=cmd_memory)


def login_name() -> str:
    """The user the CLI keeps memories for when none is given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def cli_user(ctx: Context) -> Context:
    """``ctx`` with ``user_id`` set to the login name when the user set none (a copy, not
    ``dataclasses.replace``: that would run ``__post_init__`` again, and the environment
    would override a flag that set a field to its default)."""
    if ctx.user_id:
        return ctx
    named = copy.copy(ctx)
    named.user_id = login_name()
    return named


def cmd_memory(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.checkpointers import db_location
    from agent.store.memories import memory_namespace, open_memory_store

    user = (args.user or login_name()).strip()
    if args.assistant:
        namespace = memory_namespace("assistant", None, {"assistant_id": args.assistant})
    else:
        namespace = memory_namespace("user", user, {})
    if namespace is None:  # a blank --user or --assistant
        console.print(line(("invalid input", "red"), ": name a user or an assistant"))
        return 2
    owner = f"assistant {args.assistant}" if args.assistant else f"user {user}"
    with open_memory_store(db_location(args.db)) as store:
        if args.action == "ls":
            items = sorted(store.search(namespace, limit=1000), key=lambda i: i.key)
            if not items:
                console.print(line(f"no memories for {owner}"))
            for item in items:
                size = len(str(item.value.get("content", "")).encode())
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.updated_at.timestamp()))
                thread = item.value.get("thread_id") or "?"
                console.print(line(f"memories/{item.key}  {size} bytes  {when}  thread {thread}"))
            return 0
        if args.action == "show":
            found = store.get(namespace, _key(args.name))
            if found is None:
                console.print(line(("not found", "red"), f": no memory {args.name} for {owner}"))
                return 2
            console.print(str(found.value.get("content", "")), end="", markup=False)
            return 0
        missing = [n for n in args.names if store.get(namespace, _key(n)) is None]
        if missing:
            console.print(line(("not found", "red"), f": no memory {missing[0]} for {owner}"))
            return 2
        for name in args.names:
            store.delete(namespace, _key(name))
            console.print(line(("deleted", "red"), f" memories/{_key(name)} of {owner}"))
        return 0


def _key(name: str) -> str:
    return name.removeprefix("memories/")
