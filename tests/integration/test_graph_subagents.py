"""Your own compiled graphs as subagents (``{"name", "description", "graph"}``): a
``create_agent`` graph or a plain ``StateGraph`` runs a step, what it returns is checked like
any step's output, and a graph that raises fails its step with the error, not the run."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END as GRAPH_END
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from agent import ScriptedChatModel, build_graph, resume, run
from agent.errors import ConfigError
from agent.vfs.paths import MAX_FILE_BYTES
from tests.fakes import END, ctx, models, sqlite_graph, step

PLAN = [
    step("S1", "findings.md", action="analyst", check={"kind": "contains", "all": ["Findings"]})
]


def run_with(analyst: Any, reflections=(END,), thread="t"):
    roles = models(PLAN, list(reflections))
    spec = {"name": "analyst", "description": "Analyses data into findings.", "graph": analyst}
    graph = build_graph(
        models=roles, checkpointer=InMemorySaver(), subagents=[spec], retry_policy=None
    )
    config = {"configurable": {"thread_id": thread}}
    state = graph.invoke({"messages": [("user", "Analyse it")]}, config, context=ctx())
    return graph, state, config


def test_a_create_agent_graph_runs_the_step_and_its_answer_is_checked():
    seen: list[str] = []

    def answer(messages):
        seen.append(str(messages[-1].content))
        return "```markdown\n# Findings\nSales rose 4%.\n```"

    analyst = create_agent(ScriptedChatModel(responder=answer), tools=[])
    _, state, _ = run_with(analyst)
    assert state["status"] == "success"
    assert state["files"]["findings.md"]["content"] == "# Findings\nSales rose 4%.\n"
    assert "findings.md" in seen[0]  # the step reached it as a user message


class FilesState(MessagesState):
    files: dict[str, str]


def files_graph(returned: dict[str, str]):
    """A plain StateGraph that reads its input files and returns ``returned`` besides."""

    def work(state: FilesState) -> dict[str, Any]:
        given = ", ".join(sorted(state.get("files") or {})) or "none"
        return {"files": {**returned}, "messages": [AIMessage(f"given: {given}")]}

    builder = StateGraph(FilesState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", GRAPH_END)
    return builder.compile()


def test_the_files_a_graph_returns_are_kept_only_within_the_step_scope():
    returned = {"findings.md": "# Findings\nok\n", "elsewhere.md": "not mine\n"}
    _, state, _ = run_with(files_graph(returned))
    assert state["status"] == "success"
    assert state["files"]["findings.md"]["content"] == "# Findings\nok\n"
    assert "elsewhere.md" not in state["files"]
    (event,) = [e for e in state["trajectory"] if e["action"] == "graph"]
    assert "not kept: elsewhere.md (permission_denied" in event["observation"]


def test_a_failed_check_is_fed_back_and_the_graph_asked_again():
    asked: list[str] = []

    def answer(messages):
        asked.append(str(messages[-1].content))
        return "# Findings\nfixed\n" if len(asked) > 1 else "# Notes\nnothing yet\n"

    _, state, _ = run_with(create_agent(ScriptedChatModel(responder=answer), tools=[]))
    assert state["files"]["findings.md"]["content"] == "# Findings\nfixed\n"
    first_check = next(e for e in state["trajectory"] if e["action"] == "check")
    assert len(asked) == 2 and first_check["check"]["passed"] is False
    assert first_check["observation"][:60] in asked[1]  # the failing evidence, fed back


def test_a_graph_that_raises_fails_its_step_with_the_error_not_the_run():
    def broken(state: MessagesState) -> dict[str, Any]:
        raise RuntimeError("the analyst's database is down")

    builder = StateGraph(MessagesState)
    builder.add_node("broken", broken)
    builder.add_edge(START, "broken")
    failing = {"decision": "escalate", "reason": "the step failed", "question": "Retry?"}
    _, state, _ = run_with(builder.compile(), reflections=[failing])
    errors = [e for e in state["trajectory"] if e["action"] == "error"]
    assert errors and "the analyst's database is down" in errors[0]["observation"]
    assert "findings.md" not in state["files"]


def test_an_interrupt_inside_the_graph_pauses_the_thread_and_the_answer_resumes_it():
    graph, _, config = run_with(asking_graph())
    paused = graph.get_state(config, subgraphs=True)
    assert [i.value for t in paused.tasks for i in t.interrupts] == [{"question": "Which region?"}]
    state = graph.invoke(Command(resume="north"), config, context=ctx())
    assert state["status"] == "success"
    assert "Region north" in state["files"]["findings.md"]["content"]


def test_a_graph_that_is_not_runnable_is_a_config_error():
    with pytest.raises(ConfigError, match="must be a compiled graph"):
        build_graph(subagents=[{"name": "analyst", "description": "x", "graph": "nope"}])


def test_the_step_message_is_a_human_message():
    got: list[Any] = []

    def answer(messages):
        got.extend(messages)
        return "# Findings\n"

    run_with(create_agent(ScriptedChatModel(responder=answer), tools=[]))
    assert isinstance(got[-1], HumanMessage)


def test_deepagents_file_entries_and_plain_text_are_both_read_back():
    from agent.controller.graph_steps import returned_files

    entries = {
        "a.md": {"content": ["# A", "line"], "created_at": "x"},  # deepagents' FileData
        "b.md": "# B\n",
        "c.md": {"content": 3},
        4: "not a path",
    }
    assert returned_files(entries) == {"a.md": "# A\nline", "b.md": "# B\n"}
    assert returned_files(None) == {}


def test_after_a_graph_raised_the_thread_resumes_and_the_step_runs_again():
    calls: list[int] = []

    def flaky(state: MessagesState) -> dict[str, Any]:
        calls.append(1)
        if len(calls) <= 2:  # its step fails twice: the run asks the user
            raise RuntimeError("the analyst's database is down")
        return {"messages": [AIMessage("# Findings\nSales rose 4%.\n")]}

    builder = StateGraph(MessagesState)
    builder.add_node("flaky", flaky)
    builder.add_edge(START, "flaky")
    roles = models(
        [],
        planner=ScriptedChatModel(responder=lambda messages: {"steps": PLAN}),
        reflection=ScriptedChatModel(responder=lambda messages: END),
    )
    spec = {"name": "analyst", "description": "Analyses data.", "graph": builder.compile()}
    graph = build_graph(
        models=roles, checkpointer=InMemorySaver(), subagents=[spec], retry_policy=None
    )
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"messages": [("user", "Analyse it")]}, config, context=ctx())
    assert paused["status"] == "awaiting_input"
    assert "the analyst's database is down" in paused["escalation"]["question"]
    assert "findings.md" not in paused["files"]

    state = graph.invoke(Command(resume="the database is back"), config, context=ctx())
    assert state["status"] == "success"
    assert state["files"]["findings.md"]["content"] == "# Findings\nSales rose 4%.\n"
    errors = [e for e in state["trajectory"] if e["action"] == "error"]
    assert len(errors) == 2  # the failed attempts are kept in the record


def asking_graph():
    """A graph that asks the user a region, then answers with the findings."""

    def ask(state: MessagesState) -> dict[str, Any]:
        region = interrupt({"question": "Which region?"})
        return {"messages": [AIMessage(f"# Findings\nRegion {region} rose 4%.\n")]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile()


def test_on_the_clis_sync_sqlite_checkpointer_a_graph_step_pauses_and_resumes(tmp_path):
    spec = {"name": "analyst", "description": "Analyses data.", "graph": asking_graph()}
    graph, conn = sqlite_graph(tmp_path, models(PLAN, [END]), subagents=[spec])
    config = {"configurable": {"thread_id": "t"}}
    with conn:
        paused = graph.invoke({"messages": [("user", "Analyse it")]}, config, context=ctx())
        assert paused["status"] == "running"  # the subgraph's interrupt holds the thread
        tasks = graph.get_state(config, subgraphs=True).tasks
        assert [i.value for t in tasks for i in t.interrupts] == [{"question": "Which region?"}]
        state = graph.invoke(Command(resume="north"), config, context=ctx())
    assert state["status"] == "success"
    assert "Region north" in state["files"]["findings.md"]["content"]


def test_under_ainvoke_the_graph_is_awaited_and_its_interrupt_resumes_too():
    spec = {"name": "analyst", "description": "Analyses data.", "graph": asking_graph()}
    graph = build_graph(models=models(PLAN, [END]), checkpointer=InMemorySaver(), subagents=[spec])
    config = {"configurable": {"thread_id": "t"}}

    async def both_turns():
        await graph.ainvoke({"messages": [("user", "Analyse it")]}, config, context=ctx())
        return await graph.ainvoke(Command(resume="south"), config, context=ctx())

    state = asyncio.run(both_turns())
    assert state["status"] == "success"
    assert "Region south" in state["files"]["findings.md"]["content"]


def test_run_and_resume_show_the_graphs_question_and_take_its_answer(tmp_path):
    spec = {"name": "analyst", "description": "Analyses data.", "graph": asking_graph()}
    graph, conn = sqlite_graph(tmp_path, models(PLAN, [END]), subagents=[spec])
    with conn:
        paused = run(graph, "Analyse it", context=ctx())
        assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "subagent_asked")
        assert paused["escalation"]["question"] == "Which region?"
        assert paused["message"] == "Which region?"
        again = resume(graph, paused["thread_id"])  # no answer: it asks again
        assert again["escalation"]["question"] == "Which region?"
        done = resume(graph, paused["thread_id"], "north")
    assert (done["status"], done["stop_reason"]) == ("success", "end")
    assert done["artifacts"]["findings.md"]["status"] == "done"


def test_two_graph_steps_asking_at_once_are_answered_one_at_a_time(tmp_path):
    plan = [
        step("S1", "north.md", action="analyst", check={"kind": "contains", "all": ["Findings"]}),
        step("S2", "south.md", action="analyst", check={"kind": "contains", "all": ["Findings"]}),
    ]
    spec = {"name": "analyst", "description": "Analyses data.", "graph": asking_graph()}
    graph, conn = sqlite_graph(tmp_path, models(plan, [END]), subagents=[spec])
    with conn:
        first = run(graph, "Analyse both", context=ctx())
        second = resume(graph, first["thread_id"], "north")
        assert second["stop_reason"] == "subagent_asked"  # the other step still asks
        done = resume(graph, first["thread_id"], "south")
        files = graph.get_state({"configurable": {"thread_id": first["thread_id"]}}).values["files"]
    assert done["status"] == "success"
    regions = {files[p]["content"].split()[3] for p in ("north.md", "south.md")}
    assert regions == {"north", "south"}


def oversized_graph(calls: list[int], *, as_message: bool = False):
    """A graph whose answer (a returned file, or its last message) is 3x the file limit."""
    big = "# Findings\n" + "x" * (3 * MAX_FILE_BYTES)

    def work(state: FilesState) -> dict[str, Any]:
        calls.append(1)
        if as_message:
            return {"messages": [AIMessage(big)]}
        return {"files": {"findings.md": big}, "messages": [AIMessage("done")]}

    builder = StateGraph(FilesState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    return builder.compile()


def subgraph_rows(db: Path) -> int:
    """Checkpoints and writes the thread's file holds under a ``subagent:`` namespace."""
    with closing(sqlite3.connect(db)) as conn:
        return sum(
            conn.execute(
                f"select count(*) from {table} where checkpoint_ns like 'subagent:%'"
            ).fetchone()[0]
            for table in ("checkpoints", "writes")
        )


def test_an_oversized_artifact_fails_the_step_at_once_and_is_stored_nowhere(tmp_path):
    calls: list[int] = []
    spec = {"name": "analyst", "description": "Analyses data.", "graph": oversized_graph(calls)}
    roles = models(
        [],
        planner=ScriptedChatModel(responder=lambda messages: {"steps": PLAN}),
        reflection=ScriptedChatModel(responder=lambda messages: END),
    )
    graph, conn = sqlite_graph(tmp_path, roles, subagents=[spec])
    with conn:
        paused = run(graph, "Analyse it", context=ctx())
        assert paused["stop_reason"] == "subagent_failed_twice"
        assert len(calls) == 2  # one draft per run of the step: no revision repeats it
        question = paused["escalation"]["question"]
        assert f"{3 * MAX_FILE_BYTES + 11} bytes; the limit is {MAX_FILE_BYTES}" in question
        again = resume(graph, paused["thread_id"], "try once more")
    assert again["stop_reason"] == "subagent_failed_twice" and len(calls) == 4
    # bounded by the limit, not by the runs: the refused file is in no checkpoint
    assert (tmp_path / "threads.sqlite").stat().st_size < MAX_FILE_BYTES
    assert subgraph_rows(tmp_path / "threads.sqlite") == 0


def test_an_oversized_last_message_is_refused_as_the_artifact_too():
    calls: list[int] = []
    _, state, _ = run_with(oversized_graph(calls, as_message=True))
    (error, *_) = [e for e in state["trajectory"] if e["action"] == "error"]
    assert "findings.md, which was not kept: its last message: content is" in error["observation"]
    assert "findings.md" not in state["files"]


def test_a_paused_graph_keeps_its_state_for_the_resume_and_a_finished_one_none(tmp_path):
    spec = {"name": "analyst", "description": "Analyses data.", "graph": asking_graph()}
    graph, conn = sqlite_graph(tmp_path, models(PLAN, [END]), subagents=[spec])
    db = tmp_path / "threads.sqlite"
    with conn:
        paused = run(graph, "Analyse it", context=ctx())
        held = subgraph_rows(db)
        done = resume(graph, paused["thread_id"], "north")
    assert held > 0 and done["status"] == "success"
    assert subgraph_rows(db) == held  # the finished run added nothing under its namespace
