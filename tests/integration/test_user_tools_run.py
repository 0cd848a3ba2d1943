"""Full runs with tools as users write them: a plain function, an async-only function, and a
tool that writes the step's artifact through the injected workspace (and one that tries to
write outside the step's scope and gets a tool error)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolArg, tool

from agent import run
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config
from agent.vfs.entries import Workspace
from tests.fakes import END, ctx, models, sqlite_graph, step

REPORT = "out/report.md"


def count_words(text: str) -> int:
    return len(text.split())


async def shout(text: str) -> str:
    """Say it louder."""
    await asyncio.sleep(0)
    return text.upper() + "!"


def save_report(title: str, body: str, workspace: Workspace) -> str:
    """Write the report: the step's artifact."""
    return workspace.write(REPORT, f"# {title}\n\n{body}\n")


@tool
def leak(text: str, workspace: Annotated[Workspace, InjectedToolArg]) -> str:
    """Write a file the step may not write."""
    return workspace.write("elsewhere.md", text)


def answers(messages) -> dict[str, str]:
    """What each tool answered so far in this conversation, by tool name."""
    return {m.name: str(m.content) for m in messages if isinstance(m, ToolMessage) and m.name}


def scripted_coder(calls):
    """A subagent that makes ``calls`` in turn (each a function of the answers so far)."""

    def respond(messages, metadata):
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done >= len(calls):
            return "done"
        return calls[done](answers(messages))

    return respond


def a_run(tmp_path, calls, check):
    plan = [step("S1", REPORT, action="coder", check=check)]
    roles = models(plan, [END], subagent=scripted_coder(calls))
    graph, _ = sqlite_graph(
        tmp_path, roles, tools={"coder": [count_words, shout, save_report, leak]}
    )
    result = run(graph, "write the report", context=ctx(), thread_id="t")
    return result, graph.get_state(thread_config("t")).values


def tool_events(values) -> dict[str, dict]:
    return {e["action"]: e for e in values["trajectory"] if e.get("step_id") == "S1" and "ok" in e}


def test_a_plain_function_and_an_async_only_function_are_called_under_invoke(tmp_path):
    calls = [
        lambda _: tool_call("count_words", text="one two three"),
        lambda _: tool_call("shout", text="hello"),
        lambda seen: tool_call(
            "write_file", path=REPORT, content=f"{seen['count_words']} words, {seen['shout']}"
        ),
    ]
    result, values = a_run(tmp_path, calls, {"kind": "contains", "all": ["3 words", "HELLO!"]})
    assert result["status"] == "success"
    assert values["files"][REPORT]["content"] == "3 words, HELLO!"
    events = tool_events(values)
    assert events["count_words"]["ok"] is True and events["shout"]["ok"] is True


def test_a_tool_writes_the_artifact_through_the_injected_workspace(tmp_path):
    calls = [
        lambda _: tool_call("shout", text="quarterly"),
        lambda seen: tool_call("save_report", title="Report", body=seen["shout"]),
    ]
    result, values = a_run(tmp_path, calls, {"kind": "contains", "all": ["QUARTERLY!"]})
    assert result["status"] == "success"
    assert values["files"][REPORT]["content"] == "# Report\n\nQUARTERLY!\n"
    event = tool_events(values)["save_report"]
    assert event["ok"] is True and "workspace" not in event["params"]


def test_a_tool_writing_outside_the_step_scope_gets_a_tool_error(tmp_path):
    calls = [
        lambda _: tool_call("leak", text="secret"),
        lambda seen: tool_call("save_report", title="Report", body=seen["leak"]),
    ]
    result, values = a_run(tmp_path, calls, {"kind": "contains", "all": ["permission_denied"]})
    assert result["status"] == "success"
    leak_event = tool_events(values)["leak"]
    assert leak_event["ok"] is False
    assert leak_event["observation"].startswith("permission_denied: this step may write only")
    assert "elsewhere.md" not in values["files"]
    assert "permission_denied" in values["files"][REPORT]["content"]


def test_the_model_cannot_hand_a_tool_a_workspace_of_its_own(tmp_path):
    forged = {"writable": ["x.md"]}
    calls = [lambda _: tool_call("save_report", title="T", body="b", workspace=forged)]
    result, values = a_run(tmp_path, calls, {"kind": "non_empty"})
    assert result["status"] == "success"  # the step's own workspace took the forged one's place
    assert values["files"][REPORT]["content"] == "# T\n\nb\n"
    assert tool_events(values)["save_report"]["ok"] is True and "x.md" not in values["files"]
