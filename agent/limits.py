"""The bounds every layer shares, each defined once: the Context's defaults, the revise loop's
and the graph's read them from here."""

from __future__ import annotations

MAX_REVISIONS = 2
"""Revisions a step may make after its first draft (``Context.max_revisions``,
``LoopConfig.max_revisions``)."""

MAX_TOOL_TURNS = 12
"""Model turns one draft may take with its tools (``build_graph(max_tool_turns=...)``)."""
