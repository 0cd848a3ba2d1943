"""Side-effecting tools with counters, a subagent that uses them, and a process that dies.

Used by tests/integration/test_side_effects.py. The "outbox" is a file, one line per email
actually sent, so a count survives the process that sent it (the SIGKILL tests).

    python -m tests.side_effects DB OUTBOX MODE [THREAD]
    # DB: a SQLite file or a postgresql:// URL; MODE: after_call | in_call
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolArg, StructuredTool, tool

from agent import ScriptedChatModel, build_graph, open_checkpointer
from agent.models.scripted import tool_call
from agent.runs.runner import run
from agent.store.effects import declare_tool
from tests.fakes import END, ctx, step

REPORT = "out/report.md"
PLAN = [step("S1", REPORT, action="coder", check={"kind": "contains", "all": ["sent"]})]


class Outbox:
    """Where ``send_email`` sends: a file with one JSON line per email sent."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, to: str, body: str, key: str | None = None) -> int:
        with self.path.open("a") as handle:
            handle.write(json.dumps({"to": to, "body": body, "key": key}) + "\n")
        return len(self.sent())

    def sent(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def by_key(self, key: str) -> dict[str, Any] | None:
        return next((s for s in self.sent() if s["key"] == key), None)


def email_tool(outbox: Outbox, *, then: Callable[[], None] | None = None) -> StructuredTool:
    """``send_email``: sends (one line in the outbox), then runs ``then`` (a crash, an
    error), then answers."""

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        number = outbox.send(to, body)
        if then is not None:
            then()
        return f"sent email #{number} to {to}"

    return send_email


def keyed_email_tool(outbox: Outbox, *, then: Callable[[], None] | None = None, **declared: Any):
    """``send_email`` that receives the call's idempotency key and deduplicates on it (as a
    real API would), declared with ``declared`` (idempotent=True, receipt=...)."""

    @tool
    def send_email(to: str, body: str, idempotency_key: Annotated[str, InjectedToolArg]) -> str:
        """Send an email."""
        if outbox.by_key(idempotency_key) is None:
            outbox.send(to, body, idempotency_key)
        if then is not None:
            then()
        return f"sent email to {to} ({idempotency_key})"

    return declare_tool(send_email, **declared)


def tool_answers(messages: list[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def in_turn(*replies: Callable[[list[ToolMessage], dict[str, Any]], Any]):
    """A subagent whose n-th reply is ``replies[n](tool answers so far, metadata)``, n being
    how many tool answers it has had; "done" after the last."""

    def respond(messages: list[Any], metadata: dict[str, Any]) -> Any:
        answers = tool_answers(messages)
        if len(answers) >= len(replies):
            return "done"
        return replies[len(answers)](answers, metadata)

    return respond


def send(to: str = "ops@example.com", body: str = "deploy done"):
    """An ``in_turn`` reply: call ``send_email``."""
    return lambda answers, metadata: tool_call("send_email", to=to, body=body)


def report(content: Callable[[list[ToolMessage], dict[str, Any]], str]):
    """An ``in_turn`` reply: write the report."""
    return lambda answers, metadata: tool_call(
        "write_file", path=REPORT, content=content(answers, metadata)
    )


def emailer(to: str = "ops@example.com", body: str = "deploy done", *, after: Any = None):
    """A subagent that sends one email, then writes the report quoting the answer."""

    def respond(messages: list[Any], metadata: dict[str, Any]) -> Any:
        answers = tool_answers(messages)
        if after is not None:
            after(len(answers))
        if not answers:
            return tool_call("send_email", to=to, body=body)
        if len(answers) == 1:
            return tool_call("write_file", path=REPORT, content=f"{answers[0].content}\n")
        return "done"

    return respond


def roles_for(subagent: Any, plan: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "planner": ScriptedChatModel([{"steps": plan or PLAN}]),
        "reflection": ScriptedChatModel([END]),
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=subagent),
    }


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(db: str, outbox_path: str, mode: str, thread_id: str = "crash") -> None:
    """Run the plan on SQLite and die: right after the email was sent and answered
    (``after_call``: the next model call kills the process) or inside the call, before it
    answered (``in_call``)."""
    outbox = Outbox(Path(outbox_path))
    if mode == "in_call":
        tools = [email_tool(outbox, then=_kill)]
        subagent = emailer()
    else:
        tools = [email_tool(outbox)]
        subagent = emailer(after=lambda answered: _kill() if answered == 1 else None)
    with open_checkpointer(db) as saver:  # a SQLite file or a postgresql:// URL
        graph = build_graph(models=roles_for(subagent), checkpointer=saver, tools={"coder": tools})
        run(graph, "send the email and report", thread_id=thread_id, context=ctx())


if __name__ == "__main__":
    main(*sys.argv[1:5])
