"""A step run by a compiled LangGraph graph of the user's (``{"name", "description",
"graph"}``): one draft is one invocation of it.

The graph gets the step as a user message and the files the step can read in a ``files``
key (``{path: text}``; a graph whose state has no such key just does not see them). What it
returns becomes the draft: a ``files`` key (``{path: text}``, or deepagents' file entries
whose ``content`` is text or a list of lines) written through the step's workspace, so its
write scope and bounds hold; else its last message, the artifact's whole content (one code
fence around it is taken off). The draft is then checked like any other step's. An error
the graph raises fails the step with that error, and so does an artifact the thread refuses
(too large, not text): the same graph asked again would return it again. An ``interrupt()``
inside it pauses the thread as LangGraph pauses a parent graph for its subgraph. It is
called as the thread was: ``invoke`` under ``graph.invoke`` (whose checkpointer, the CLI's
SQLite one, may have no async methods), ``ainvoke`` under ``ainvoke`` and on a server.

The graph inherits the thread's checkpointer, so LangGraph would save its state under a
``subagent:<task>`` namespace at each of its steps, on every draft and every re-run of the
step: whatever it returns, kept or refused, stored again each time. It runs with
``durability="exit"``: a nested graph then saves its state only when it pauses or raises,
which is all a resume needs; a graph that finishes leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langgraph.pregel import Pregel

from agent.controller.prompting import feedback_evidence
from agent.controller.records import StepRecords
from agent.coroutines import called_sync
from agent.errors import AgentError, ErrorClass
from agent.prompts import render
from agent.tools.text_calls import fenced_file
from agent.vfs.entries import PathError, Workspace

__all__ = ["RefusedArtifact", "graph_draft", "returned_files"]


async def graph_draft(
    graph: Runnable,
    step: Mapping[str, Any],
    workspace: Workspace,
    records: StepRecords,
    feedback: Mapping[str, Any] | None,
) -> int:
    """Invoke ``graph`` for one draft of ``step``; its files land in ``workspace``. Returns
    the tokens its messages report."""
    path = str(step["expected_output"])
    readable = {p: t for p, t in workspace.contents().items() if p != path or t}
    evidence = feedback_evidence(feedback) if feedback else ""
    text = render(
        "subagent_graph",
        instructions=step["instructions"],
        expected_output=path,
        done_when=json.dumps(step.get("done_when")),
        feedback=render("subagent_graph_feedback", evidence=evidence) if evidence else "",
        inputs=", ".join(sorted(readable)) or "(none)",
    )
    given = {"messages": [HumanMessage(text)], "files": readable}
    state = await _invoke(graph, given)
    messages = [m for m in state.get("messages") or [] if isinstance(m, BaseMessage)]
    kept: list[str] = []
    refused = not_text(state.get("files"))
    for name, content in returned_files(state.get("files")).items():
        if workspace.contents().get(name) == content:
            continue  # an input handed back unchanged
        try:
            kept.append(workspace.write(name, content))
        except PathError as exc:
            refused[name] = str(exc)
    if path not in kept and path not in refused and (answer := _last_answer(messages, path)):
        try:
            kept.append(workspace.write(path, answer))
        except PathError as exc:
            refused[path] = f"its last message: {exc}"
    note = f"kept {', '.join(kept) or 'nothing'}"
    if refused:
        note += "; not kept: " + "; ".join(f"{p} ({why})" for p, why in sorted(refused.items()))
    records.event("graph", observation=note[:200], ok=bool(kept))
    if path in refused:
        msg = f"the graph returned {path}, which was not kept: {refused[path]}"
        raise RefusedArtifact(msg[:500])
    return sum(_tokens(m) for m in messages)


class RefusedArtifact(AgentError):
    """The graph returned the step's artifact and the thread refused it (too large, not
    text). Its class is ``unknown`` (the step fails, a human sees the evidence), not a
    revision: the user's code, asked again, returns the same."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorClass.UNKNOWN, message)


async def _invoke(graph: Runnable, given: Mapping[str, Any]) -> Mapping[str, Any]:
    """The graph's final state; a compiled graph's own checkpoints kept only if it pauses
    or raises (``durability="exit"``; see the module's docstring)."""
    kwargs: dict[str, Any] = {"durability": "exit"} if isinstance(graph, Pregel) else {}
    if called_sync():  # under invoke the thread's checkpointer may be sync only
        result = await asyncio.to_thread(graph.invoke, given, **kwargs)
    else:
        result = await graph.ainvoke(given, **kwargs)
    return result if isinstance(result, Mapping) else {}


def returned_files(value: Any) -> dict[str, str]:
    """The text of each file a graph returned: ``{path: text}``, or entries with a
    ``content`` of text or of lines (deepagents' ``FileData``); anything else is left out."""
    if not isinstance(value, Mapping):
        return {}
    files: dict[str, str] = {}
    for path, entry in value.items():
        content = _content(entry)
        if isinstance(content, list) and all(isinstance(line, str) for line in content):
            content = "\n".join(content)
        if isinstance(path, str) and isinstance(content, str):
            files[path] = content
    return files


def not_text(value: Any) -> dict[str, str]:
    """Why each file a graph returned that :func:`returned_files` leaves out was left out:
    ``{path: why}`` (its content is no text, or its name no text)."""
    if not isinstance(value, Mapping):
        return {}
    kept = returned_files(value)
    return {
        str(path)[:200]: (
            f"its content is a {type(_content(entry)).__name__}, not text"
            if isinstance(path, str)
            else f"its name is a {type(path).__name__}, not text"
        )
        for path, entry in value.items()
        if not (isinstance(path, str) and path in kept)
    }


def _content(entry: Any) -> Any:
    return entry.get("content") if isinstance(entry, Mapping) else entry


def _last_answer(messages: list[BaseMessage], path: str) -> str | None:
    """The last AI message's text as the artifact (its one code fence taken off)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            text = str(message.text)
            if not text.strip():
                return None
            fenced = fenced_file(text, path)
            body = fenced if fenced is not None else text
            return body if body.endswith("\n") else body + "\n"
    return None


def _tokens(message: BaseMessage) -> int:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("total_tokens") or 0)
