"""The bounds every layer shares, each defined once: the Context's defaults, the revise loop's
and the graph's read them from here."""

from __future__ import annotations

MAX_REVISIONS = 2
"""Revisions a step may make after its first draft (``Context.max_revisions``,
``LoopConfig.max_revisions``)."""

MAX_TOOL_TURNS = 12
"""Model turns one draft may take with its tools (``build_graph(max_tool_turns=...)``)."""

TOOL_RESULT_CHARS = 20_000
"""A tool result longer than this goes to a scratch file; the model sees its head
(``Context.tool_result_chars``, :mod:`agent.controller.large_results`)."""

FRESH_DRAFTS = 3
"""Fresh drafts a step's revise loop may draw once revising stops helping
(``Context.fresh_drafts``, ``LoopConfig.fresh_drafts``)."""

REPEATED_TEMPERATURE = 0.7
"""The sampling temperature of a fresh draft, and of a revision asked again because it
repeated a draft that had already failed (``agent.controller.revise``): at the model's own
(greedy on our benchmarks), the same prompt would get the same draft back."""
