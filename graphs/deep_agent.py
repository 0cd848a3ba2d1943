"""The graph LangGraph servers load (`langgraph dev`, LangGraph Server): no checkpointer,
since the server brings its own persistence; the thread pauses after `escalate`."""

from agent import build_graph

graph = build_graph()
