"""Graphs served by `langgraph dev` for the issue 44 SDK tests (tests/served.langgraph.json):
scripted roles only, no checkpointer and no store, since the server brings its own.

- ``remember``: its step notes a convention in ``memories/`` and writes its report.
- ``recall``: its step reads that memory (if its namespace has it) into its report.
- ``analyst``: a compiled ``create_agent`` graph is the ``analyst`` subagent; its tool asks
  the user a question with ``interrupt()`` before the findings are written.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import interrupt

from agent import ScriptedChatModel, build_graph
from agent.models.scripted import tool_call
from tests.fakes import END, step

CONVENTIONS = "# Conventions\nReports use British spelling.\n"
NOTE = "memories/conventions.md"
REPORT_PLAN = [step("S1", "report.md", check={"kind": "contains", "all": ["Report"]})]
ANALYST_PLAN = [
    step("S1", "findings.md", action="analyst", check={"kind": "contains", "all": ["Findings"]})
]
QUESTION = {"question": "Which region?"}


def remembering(messages: list[BaseMessage]) -> Any:
    """A subagent that notes a convention for later threads, then writes its report."""
    if isinstance(messages[-1], ToolMessage):
        return "written"
    calls = [
        {"name": "write_file", "args": {"path": NOTE, "content": CONVENTIONS}, "id": "m1"},
        {"name": "write_file", "args": {"path": "report.md", "content": "# Report\n"}, "id": "r"},
    ]
    return AIMessage("", tool_calls=calls)  # both files in one answer


def reading(messages: list[BaseMessage]) -> Any:
    """A subagent that reads the memory (if it can) into its report."""
    last = messages[-1]
    if isinstance(last, ToolMessage) and last.name == "read_file":
        return tool_call("write_file", path="report.md", content=f"# Report\n{last.content}")
    if isinstance(last, ToolMessage):
        return "written"
    return tool_call("read_file", path=NOTE)


def roles(plan: list[dict[str, Any]], subagent: Any = None) -> dict[str, Any]:
    """Scripted roles that answer every call alike, so any number of threads can run. A
    graph subagent's step loads its role's model too (unused), hence a default always."""
    return {
        "planner": ScriptedChatModel(responder=lambda messages: {"steps": plan}),
        "reflection": ScriptedChatModel(responder=lambda messages: END),
        "judge": ScriptedChatModel(responder=lambda messages: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=subagent or (lambda messages: "unused")),
    }


@tool
def ask_region() -> str:
    """Ask the user which region to analyse."""
    return str(interrupt(QUESTION))


def analysing(messages: list[BaseMessage]) -> Any:
    """The analyst's model: asks the region, then answers with the findings."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"# Findings\nRegion {last.content} rose 4%.\n"
    return tool_call("ask_region")


analyst = create_agent(ScriptedChatModel(responder=analysing), tools=[ask_region])
remember = build_graph(models=roles(REPORT_PLAN, remembering))
recall = build_graph(models=roles(REPORT_PLAN, reading))
graph_subagent = build_graph(
    models=roles(ANALYST_PLAN),
    subagents=[{"name": "analyst", "description": "Analyses sales.", "graph": analyst}],
)
