"""The graph: its wiring (:mod:`agent.graph.build`), its nodes, the turn they take in and
the ``Result`` they leave. ``build_graph`` loads on first use, so the light modules here
(``result``, ``turn``) import without LangGraph's graph machinery."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.graph.build import build_graph

__all__ = ["build_graph"]


def __getattr__(name: str) -> Any:
    if name == "build_graph":
        return importlib.import_module("agent.graph.build").build_graph
    msg = f"module 'agent.graph' has no attribute {name!r}"
    raise AttributeError(msg)
