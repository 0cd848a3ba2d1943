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

__all__ = ["append_all", "by_id", "by_path", "latest", "with_ids"]


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


def summed(
    current: Mapping[str, Mapping[str, int]] | None,
    writes: Sequence[Mapping[str, Mapping[str, int]] | None],
) -> dict[str, dict[str, int]]:
    """Counters per name (tokens and calls per role: ``usage``) summed over a batch of
    writes, so parallel steps add up and any batching gives the same totals. Stored whole,
    ``usage`` was 0.06 of a thread's bytes per content byte (``bench/storage_breakdown.py``)."""
    merged = {name: dict(counts or {}) for name, counts in (current or {}).items()}
    for write in writes:
        for name, counts in (write or {}).items():
            slot = merged.setdefault(name, {})
            for key, value in (counts or {}).items():
                slot[key] = slot.get(key, 0) + int(value)
    return merged


def latest(current: Any, writes: Sequence[Any]) -> Any:
    """The keys replaced whole: the last write wins."""
    return writes[-1] if writes else current


def by_id(current: list[Any], writes: Sequence[Any]) -> list[Any]:
    """``messages`` as the read-only commands replay them (stored fields, not LangChain's
    objects): each write's messages appended in order, one whose id is already there
    replacing it, as ``add_messages`` does."""
    merged = list(current)
    where = {_id(m): i for i, m in enumerate(merged) if _id(m) is not None}
    for write in writes:
        for message in with_ids(write, len(merged)):
            key = _id(message)
            if key is not None and key in where:
                merged[where[key]] = message
            else:
                if key is not None:
                    where[key] = len(merged)
                merged.append(message)
    return merged


def with_ids(write: Any, start: int) -> list[Any]:
    """A write's messages, each without an id given one from its place in the conversation
    (``message-<n>``): replayed from a checkpoint, the value gets the same ids every time,
    where ``add_messages`` would draw new random ones."""
    out = []
    for offset, message in enumerate(write if isinstance(write, list) else [write]):
        if _id(message) is None:
            fixed = f"message-{start + offset}"
            if isinstance(message, Mapping):
                message = {**message, "id": fixed}
            elif hasattr(message, "model_copy"):
                message = message.model_copy(update={"id": fixed})
        out.append(message)
    return out


def _id(message: Any) -> Any:
    return message.get("id") if isinstance(message, Mapping) else getattr(message, "id", None)
