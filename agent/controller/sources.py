"""What a step's citations check may trace a claim to: the results of its tools.

A source is evidence from outside the step. What the step reads back of its own writing
(its artifact, its scratch files) is never one, nor is a failed call's error, which repeats
the model's own arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent.checks import check_kinds
from agent.vfs.entries import scratch_prefix

QUERY_CHARS = 300
"""The longest first query: the goal's opening, where it says what the report is about."""
_QUERY_NAMES = ("query", "q", "search_query", "question", "text")

_NEVER_SOURCES = frozenset({"ls", "glob", "write_file", "edit_file"})


class CitationSources:
    """The tool results of one step that count as sources, in the order they came."""

    def __init__(self, step: Mapping[str, Any], inputs: Iterable[str]) -> None:
        own = scratch_prefix(str(step["step_id"]))
        # files the step was given to read, not its own output or scratch
        self.input_paths = frozenset(
            p for p in inputs if p != step["expected_output"] and not p.startswith(own)
        )
        self.outputs: list[str] = []

    def is_source(self, call: Mapping[str, Any]) -> bool:
        """Any tool but the write tools and ``ls``; ``read_file`` only of the step's inputs."""
        name = call.get("name")
        if name in _NEVER_SOURCES:
            return False
        if name == "read_file":
            return (call.get("args") or {}).get("path") in self.input_paths
        return True

    def offer(self, call: Mapping[str, Any], observation: str, ok: bool) -> None:
        """Keep a call's result if it succeeded and is a source."""
        if ok and self.is_source(call):
            self.outputs.append(observation)


def search_first(
    step: Mapping[str, Any], tools: Mapping[str, Any], goal: str
) -> dict[str, Any] | None:
    """The search to run before a step's first draft, when its check traces citations and
    one of its tools searches: on the 1.5B the researcher never called ``search`` (four
    drafts citing arXiv URLs from memory, each refused by the check); called by code with the
    goal as the query, its results are in the conversation before the model's first turn,
    as if the model had asked. None when the check needs no sources or no tool searches."""
    if "citations" not in check_kinds(step.get("done_when")):
        return None
    for name, tool in tools.items():
        param = _query_param(tool) if "search" in str(name).lower() else None
        if param is not None:
            query = " ".join(goal.split())[:QUERY_CHARS]
            return {"name": name, "args": {param: query}, "id": f"first-{step['step_id']}"}
    return None


def _query_param(tool: Any) -> str | None:
    """The string parameter a search tool takes its query in: a usual name, or its only
    required string parameter."""
    try:
        props = dict(getattr(tool, "args", {}) or {})
    except Exception:  # a tool whose schema cannot be read is not searched by code
        return None
    strings = [
        n for n, spec in props.items() if isinstance(spec, Mapping) and spec.get("type") == "string"
    ]
    named = [n for n in _QUERY_NAMES if n in strings]
    if named:
        return named[0]
    return strings[0] if len(strings) == 1 and len(props) == 1 else None
