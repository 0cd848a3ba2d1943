"""What a node reads beyond the state it is called with: the running task's channels and
thread id, and the databases a run may query."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.pregel._read import ChannelRead

from agent.context import Context
from agent.vfs.folder import Folder

__all__ = [
    "StateView",
    "current_channel",
    "current_files",
    "current_text",
    "declared_databases",
    "workspace_folder",
    "plan_version",
    "thread_id",
]

# Nodes read the state as a mapping so a subclass of State (build_graph(state_schema=...))
# is not mistaken for a second, conflicting input schema.
StateView = Mapping[str, Any]


def current_channel(name: str) -> Mapping[str, Any]:
    """A state key as the running task sees it ({} outside a run or when unset)."""
    value = _current(name)
    return value if isinstance(value, Mapping) else {}


def current_text(name: str) -> str:
    """A text state key (``goal``) as the running task sees it ("" outside a run or unset):
    a ``Send`` payload does not carry it, which would store it again for every step."""
    value = _current(name)
    return value if isinstance(value, str) else ""


def current_list(name: str) -> list[Any]:
    """A list-valued state key (``trajectory``) as the running task sees it ([] outside a
    run or when unset)."""
    value = _current(name)
    return list(value) if isinstance(value, list) else []


def _current(name: str) -> Any:
    try:
        return ChannelRead.do_read(get_config(), select=name)
    except (RuntimeError, KeyError):
        return None


def current_files() -> Mapping[str, Any]:
    """The ``files`` channel as the running task sees it ({} outside a run)."""
    return current_channel("files")


def thread_id() -> str | None:
    """The running thread's id, so the ``Result`` stored in state names it."""
    try:
        return get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a run (unit tests of a node)
        return None


def plan_version(state: StateView) -> int:
    """The current plan's version (0 before the first plan)."""
    return int((state.get("plan") or {}).get("version") or 0)


def declared_databases(ctx: Context, declared: Mapping[str, str]) -> dict[str, str]:
    """The run's databases: the Context's, then build_graph's, which win on a shared name."""
    return ctx.declared_databases() | dict(declared)


def workspace_folder(ctx: Context, default: str | None) -> Folder | None:
    """The run's workspace folder: the Context's, else build_graph's; None without one.

    Raises:
        FolderError: the folder is missing or not a folder (said with its path)."""
    path = ctx.workspace if isinstance(ctx.workspace, str) and ctx.workspace else default
    return Folder.open(path) if path else None
