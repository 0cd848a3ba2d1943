"""How the parts of one node's update compose, as the state's channels would merge them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.graph.inputs import StateView
from agent.vfs.entries import merge_files

__all__ = ["combined", "with_update"]


def combined(first: Mapping[str, Any], then: Any) -> dict[str, Any]:
    """Two updates of one node as one: ``then`` wins, but ``files`` merge path by path and
    ``messages`` keep both (the turn's files and the files a replan re-opens, say)."""
    update = {**first, **(then or {})}
    for key in ("files", "messages"):
        if key in first and key in (then or {}):
            joined = {**first[key], **then[key]} if key == "files" else [*first[key], *then[key]]
            update[key] = joined
    return update


def with_update(state: StateView, update: Mapping[str, Any]) -> dict[str, Any]:
    """The state as the node's ``update`` will leave it: ``files`` merged path by path, as
    its channel merges them, every other key replaced."""
    current = {**state, **update}
    if "files" in update:
        current["files"] = merge_files(state.get("files") or {}, [update["files"]])
    return current
