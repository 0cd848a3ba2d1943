"""What a step's citations check may trace a claim to: the results of its tools.

A source is evidence from outside the step. What the step reads back of its own writing
(its artifact, its scratch files) is never one, nor is a failed call's error, which repeats
the model's own arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent.vfs.entries import scratch_prefix

_NEVER_SOURCES = frozenset({"ls", "write_file", "edit_file"})


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
