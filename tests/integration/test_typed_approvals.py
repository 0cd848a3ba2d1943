"""A paused approval answered by typing one of its choices' labels in the chat ("approve all",
"reject all"), as a new message or a string resume value: it decides, not replans."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from agent.runs.runner import thread_config
from tests.fakes import ctx
from tests.integration.test_side_effects import approval_run, values
from tests.side_effects import Outbox


@pytest.mark.parametrize("how", ["message", "resume"])
@pytest.mark.parametrize(("typed", "sent"), [(" Approve ALL ", 1), ("reject all.", 0)])
def test_a_typed_approval_label_decides_every_pending_call(tmp_path, how, typed, sent):
    outbox = Outbox(tmp_path / "outbox")
    graph, roles, paused = approval_run(tmp_path, outbox)
    assert paused["status"] == "awaiting_input" and outbox.sent() == []
    plans = len(roles["planner"].calls)
    given = {"messages": [HumanMessage(typed)]} if how == "message" else Command(resume=typed)
    for _ in graph.stream(given, thread_config("t"), context=ctx()):
        pass
    state = values(graph)
    assert len(outbox.sent()) == sent
    assert len(roles["planner"].calls) == plans  # decided, not taken as a change of plan
    (decided,) = state["approvals"].values()
    assert decided["decision"]["type"] == ("approve" if sent else "reject")
    # approved, the report is written; rejected, its check fails and the step asks for help
    assert state["stop_reason"] == ("end" if sent else "repeated_defect")


def test_stop_typed_on_a_paused_approval_stops_and_sends_nothing(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    graph, _, _ = approval_run(tmp_path, outbox)
    graph.invoke({"messages": [HumanMessage("Stop")]}, thread_config("t"), context=ctx())
    state = values(graph)
    assert (state["status"], state["stop_reason"]) == ("failed", "stopped_by_human")
    assert outbox.sent() == []
