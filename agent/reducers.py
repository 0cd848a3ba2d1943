"""The reducers of the state's ``DeltaChannel`` keys, in a module of their own so that the
read-only commands (``agent.store.threads``) rebuild a thread's state with the very same functions
without importing LangGraph's graph or LangChain.

Each is batching-invariant, as ``DeltaChannel`` requires: applying two batches of writes in
turn equals applying them together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.vfs.entries import merge_files

__all__ = ["append_all", "by_path", "latest"]


def append_all(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """The append-only logs: every write's items, in order."""
    merged = list(current)
    for items in writes:
        merged.extend(items or [])
    return merged


def by_path(current: dict[str, Any], writes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``files`` and ``file_summaries``: later writes win, ``None`` deletes.

    A write that is not a mapping (a graph input's ``"files": ["a.py"]``) is refused with a
    ``ValueError`` that says what is expected, which LangGraph Server shows the client."""
    for write in writes:
        if write is not None and not isinstance(write, Mapping):
            msg = f"files must map paths to text contents, not {type(write).__name__}"
            raise ValueError(msg)
    return merge_files(current, writes)


def latest(current: Any, writes: Sequence[Any]) -> Any:
    """The keys replaced whole: the last write wins."""
    return writes[-1] if writes else current
