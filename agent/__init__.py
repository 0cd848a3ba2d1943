"""deepreflect: a LangGraph deep agent whose reflection loop knows when to stop.

The public names load on first use (PEP 562), so ``import agent.cli`` or ``agent.context``
does not pull LangGraph and LangChain in: ``deepreflect --help``, ``threads`` and ``show``
start in a fraction of a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.checkpointers import open_checkpointer
    from agent.context import Context
    from agent.export import artifacts
    from agent.graph import build_graph
    from agent.journal import declare_tool
    from agent.lease import LeaseLost, ThreadBusy
    from agent.models import ScriptedChatModel
    from agent.result import Result
    from agent.runner import aresume, arun, resume, run
    from agent.subagents import SubAgent
    from agent.user_files import UserFileError, load_files

# public name -> the module that defines it
_EXPORTS = {
    "Context": "agent.context",
    "Result": "agent.result",
    "artifacts": "agent.export",
    "ScriptedChatModel": "agent.models",
    "SubAgent": "agent.subagents",
    "LeaseLost": "agent.lease",
    "ThreadBusy": "agent.lease",
    "build_graph": "agent.graph",
    "declare_tool": "agent.journal",
    "open_checkpointer": "agent.checkpointers",
    "aresume": "agent.runner",
    "arun": "agent.runner",
    "resume": "agent.runner",
    "run": "agent.runner",
    "UserFileError": "agent.user_files",
    "load_files": "agent.user_files",
}

__all__ = [
    "Context",
    "Result",
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
