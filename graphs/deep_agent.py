"""The graph LangGraph servers load (`langgraph dev`, LangGraph Server): no checkpointer,
since the server brings its own persistence. A paused thread waits on `interrupt()` in
`escalate`. Defaults of the run's Context come from `DEEPREFLECT_<FIELD>` environment
variables (`langgraph.json`'s `env`, e.g. `DEEPREFLECT_MODEL`), so a chat UI that cannot set
a run's context still gets a usable model."""

from agent import build_graph

graph = build_graph()
