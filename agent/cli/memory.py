"""``deepreflect memory ls|show|rm``: the memories threads share, in the store beside the
threads (``agent.store.memories``).

It acts on your namespace, the one ``deepreflect run`` reads and writes: the user
``$DEEPREFLECT_USER_ID``, else your login name. Another namespace (``--user NAME``,
``--assistant ID``) is refused unless ``--other-owner`` says so on purpose, and ``ls
--all-namespaces`` lists every one: the store holds other people's memories too (a shared
PostgreSQL database, a team's ``.deepreflect``), and a typo must not show or delete them.
This guards against mistakes, not against someone who can open the file: the CLI has no
login of its own, so the owner is whoever the environment says, as it is for a run.
"""

from __future__ import annotations

import argparse
import copy
import getpass
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

    from agent.context import Context

__all__ = ["Owner", "add_parser", "chosen_owner", "cli_user", "login_name", "own_owner"]


def add_parser(sub: Any) -> None:
    """``memory`` with its actions ``ls``, ``show NAME`` and ``rm NAME...``."""
    memory = sub.add_parser("memory", help="list, show or delete the memories threads share")
    actions = memory.add_subparsers(
        dest="action", required=True, help="ls: list, show: print, rm: delete memories"
    )
    for name, text in (
        ("ls", "list your memories"),
        ("show", "print one of your memories"),
        ("rm", "delete your memories"),
    ):
        action = actions.add_parser(name, help=text)
        if name == "show":
            action.add_argument("name", help="the memory, e.g. conventions.md")
        if name == "rm":
            action.add_argument("names", nargs="+", metavar="NAME", help="the memories")
        owner = action.add_mutually_exclusive_group()
        owner.add_argument(
            "--user", help="whose memories (default and only one allowed: yours, as runs use)"
        )
        owner.add_argument("--assistant", metavar="ID", help="an assistant's memories")
        if name == "ls":
            owner.add_argument(
                "--all-namespaces",
                action="store_true",
                help="list the memories of every user and assistant in the store",
            )
        action.add_argument(
            "--other-owner",
            action="store_true",
            help="act on the namespace --user or --assistant names although it is not yours",
        )
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


@dataclass(frozen=True)
class Owner:
    """A memory namespace and how the CLI names it to the user."""

    scope: str
    name: str
    namespace: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.scope} {self.name}"


def own_owner() -> Owner:
    """Your namespace: the one a run of this CLI uses (``$DEEPREFLECT_USER_ID``, else the
    login name)."""
    from agent.context import Context
    from agent.errors import ConfigError
    from agent.store.memories import memory_namespace

    user = str(cli_user(Context()).user_id)
    namespace = memory_namespace("user", user, {})
    if namespace is None:  # a blank variable reads as unset, so only a blank login name
        raise ConfigError("no user to keep memories for: set DEEPREFLECT_USER_ID")
    return Owner("user", user.strip(), namespace)


def chosen_owner(user: str | None, assistant: str | None, *, other_owner: bool) -> Owner | str:
    """The namespace ``--user`` / ``--assistant`` name (yours when neither does), or why
    the CLI refuses it: blank, or someone else's without ``--other-owner``."""
    from agent.store.memories import memory_namespace

    own = own_owner()
    if user is None and assistant is None:
        return own
    scope, name = ("assistant", assistant) if assistant is not None else ("user", user)
    name = str(name).strip()
    configurable = {"assistant_id": name} if scope == "assistant" else {}
    namespace = memory_namespace(scope, name if scope == "user" else None, configurable)
    if namespace is None:
        return "name a user or an assistant"
    named = Owner(scope, name, namespace)
    if namespace == own.namespace or other_owner:
        return named
    return (
        f"the memories of {named} are not yours: `deepreflect memory` acts for {own}, as "
        "`deepreflect run` does ($DEEPREFLECT_USER_ID, else your login name); add "
        "--other-owner to act on them"
    )


def cmd_memory(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.checkpointers import db_location
    from agent.store.memories import open_memory_store

    if args.other_owner and args.user is None and args.assistant is None:
        msg = "--other-owner needs the namespace it is for: --user NAME or --assistant ID"
        console.print(line(("invalid input", "red"), f": {msg}"))
        return 2
    if getattr(args, "all_namespaces", False):
        with open_memory_store(db_location(args.db)) as store:
            _list_all(store, console)
        return 0
    owner = chosen_owner(args.user, args.assistant, other_owner=args.other_owner)
    if isinstance(owner, str):
        what = "invalid input" if owner.startswith("name ") else "permission denied"
        console.print(line((what, "red"), f": {owner}"))
        return 2
    with open_memory_store(db_location(args.db)) as store:
        if args.action == "ls":
            items = _sorted(store.search(owner.namespace, limit=1000))
            if not items:
                console.print(line(f"no memories for {owner}"))
            for item in items:
                console.print(line(_described(item)))
            return 0
        if args.action == "show":
            found = store.get(owner.namespace, _key(args.name))
            if found is None:
                console.print(line(("not found", "red"), f": no memory {args.name} for {owner}"))
                return 2
            console.print(str(found.value.get("content", "")), end="", markup=False)
            return 0
        missing = [n for n in args.names if store.get(owner.namespace, _key(n)) is None]
        if missing:
            console.print(line(("not found", "red"), f": no memory {missing[0]} for {owner}"))
            return 2
        for name in args.names:
            store.delete(owner.namespace, _key(name))
            console.print(line(("deleted", "red"), f" memories/{_key(name)} of {owner}"))
        return 0


def _list_all(store: BaseStore, console: Console) -> None:
    """Every namespace's memories, each line led by its owner."""
    from agent.runs.progress import line
    from agent.store.memories import NAMESPACE_ROOT, owner_of

    found = False
    for namespace in sorted(store.list_namespaces(prefix=(NAMESPACE_ROOT,), limit=1000)):
        owner = owner_of(namespace)
        if owner is None:
            continue
        for item in _sorted(store.search(namespace, limit=1000)):
            found = True
            console.print(line((f"{owner[0]} {owner[1]}", "bold"), "  ", _described(item)))
    if not found:
        console.print(line("no memories in the store"))


def _sorted(items: Iterable[Item]) -> list[Item]:
    return sorted(items, key=lambda i: i.key)


def _described(item: Item) -> str:
    """One memory as ``ls`` prints it: its path, size, date and the thread that wrote it."""
    size = len(str(item.value.get("content", "")).encode())
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.updated_at.timestamp()))
    thread = item.value.get("thread_id") or "?"
    return f"memories/{item.key}  {size} bytes  {when}  thread {thread}"


def _key(name: str) -> str:
    return name.removeprefix("memories/")
