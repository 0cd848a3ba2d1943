"""A served graph for the SDK approval tests: scripted roles, a ``send_email`` tool that
writes to the file ``APPROVAL_OUTBOX`` names, and ``interrupt_on={"send_email": True}``.
No checkpointer: ``langgraph dev`` brings its own (tests/approval.langgraph.json)."""

from __future__ import annotations

import os
from pathlib import Path

from agent import ScriptedChatModel, build_graph
from tests.fakes import END
from tests.side_effects import PLAN, Outbox, email_tool, emailer

outbox = Outbox(Path(os.environ.get("APPROVAL_OUTBOX", os.devnull)))
roles = {
    "planner": ScriptedChatModel(responder=lambda messages: {"steps": PLAN}),
    "reflection": ScriptedChatModel(responder=lambda messages: END),
    "judge": ScriptedChatModel(responder=lambda messages: {"issues": [], "score": 1.0}),
    "default": ScriptedChatModel(responder=emailer()),
}
graph = build_graph(
    models=roles, tools={"coder": [email_tool(outbox)]}, interrupt_on={"send_email": True}
)
