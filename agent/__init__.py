"""deepreflect: a LangGraph deep agent whose reflection loop knows when to stop.

The public names load on first use (PEP 562), so ``import agent.cli`` or ``agent.context``
does not pull LangGraph and LangChain in: ``deepreflect --help``, ``threads`` and ``show``
start in a fraction of a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.context import Context
    from agent.controller.subagents import SubAgent
    from agent.errors import ConfigError
    from agent.graph.build import build_graph
    from agent.graph.result import Result
    from agent.models.scripted import ScriptedChatModel
    from agent.runs.apply import apply
    from agent.runs.export import artifacts
    from agent.runs.runner import aresume, arun, resume, run
    from agent.store.checkpointers import open_checkpointer
    from agent.store.effects import declare_tool
    from agent.store.fencing import LeaseLost
    from agent.store.holders import ThreadBusy
    from agent.vfs.host_disk import load_files
    from agent.vfs.user_files import UserFileError

# public name -> the module that defines it
_EXPORTS = {
    "Context": "agent.context",
    "ConfigError": "agent.errors",
    "Result": "agent.graph.result",
    "apply": "agent.runs.apply",
    "artifacts": "agent.runs.export",
    "ScriptedChatModel": "agent.models.scripted",
    "SubAgent": "agent.controller.subagents",
    "LeaseLost": "agent.store.fencing",
    "ThreadBusy": "agent.store.holders",
    "build_graph": "agent.graph.build",
    "declare_tool": "agent.store.effects",
    "open_checkpointer": "agent.store.checkpointers",
    "aresume": "agent.runs.runner",
    "arun": "agent.runs.runner",
    "resume": "agent.runs.runner",
    "run": "agent.runs.runner",
    "UserFileError": "agent.vfs.user_files",
    "load_files": "agent.vfs.host_disk",
}

__all__ = [
    "Context",
    "ConfigError",
    "Result",
    "apply",
    "artifacts",
    "ScriptedChatModel",
    "SubAgent",
    "LeaseLost",
    "ThreadBusy",
    "build_graph",
    "declare_tool",
    "open_checkpointer",
    "aresume",
    "arun",
    "resume",
    "run",
    "UserFileError",
    "load_files",
]


def __getattr__(name: str) -> Any:
    """Each public name (and ``agent.eval``) imported when first used, then kept."""
    if name == "eval":
        return importlib.import_module("agent.eval")
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    msg = f"module 'agent' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, "eval"])
