"""The graph LangGraph servers load (`langgraph dev`, LangGraph Server): no checkpointer,
since the server brings its own persistence. A paused thread waits on `interrupt()` in
`escalate`. Defaults of the run's Context come from `DEEPREFLECT_<FIELD>` environment
variables (`langgraph.json`'s `env`, e.g. `DEEPREFLECT_MODEL`), so a chat UI that cannot set
a run's context still gets a usable model; `DEEPREFLECT_MCP_CONFIG` names an MCP config file
whose servers' tools the subagents get (`agent.tools.mcp`)."""

from __future__ import annotations

import os

from langchain_core.tools import BaseTool

from agent import build_graph
from agent.tools.mcp import ENV_VAR, tools_from_config


def mcp_tools() -> dict[str, list[BaseTool]] | None:
    """The tools of the MCP config file `DEEPREFLECT_MCP_CONFIG` names, by role (None if
    unset); a bad file stops the server with its ConfigError."""
    path = os.environ.get(ENV_VAR, "").strip()
    return tools_from_config(path) if path else None


graph = build_graph(tools=mcp_tools())
