"""deepreflect: a LangGraph deep agent whose reflection loop knows when to stop."""

from agent.checkpointers import open_checkpointer
from agent.context import Context
from agent.export import artifacts
from agent.graph import build_graph
from agent.lease import ThreadBusy
from agent.models import ScriptedChatModel
from agent.result import Result
from agent.runner import resume, run
from agent.subagents import SubAgent

__all__ = [
    "Context",
    "Result",
    "artifacts",
    "ScriptedChatModel",
    "SubAgent",
    "ThreadBusy",
    "build_graph",
    "open_checkpointer",
    "resume",
    "run",
]


def __getattr__(name: str) -> object:
    """``agent.eval`` without a separate import, loaded only when first used (it is not
    needed to run a graph)."""
    if name == "eval":
        import importlib

        return importlib.import_module("agent.eval")
    msg = f"module 'agent' has no attribute {name!r}"
    raise AttributeError(msg)
