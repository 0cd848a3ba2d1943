"""How the parts of one node's update compose, as the state's channels would merge them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_origin, get_type_hints

from langgraph.channels.delta import DeltaChannel

from agent.graph.inputs import StateView
from agent.state import State

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


def _reducers() -> dict[str, tuple[Callable[[Any, Sequence[Any]], Any], type | None]]:
    """Each State key's channel reducer, and the type of its value before any write
    (``list`` or ``dict``; None: no value), read from its annotation."""
    found = {}
    for key, hint in get_type_hints(State, include_extras=True).items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, DeltaChannel):
                origin = get_origin(hint.__origin__)
                found[key] = (meta.reducer, origin if origin in (list, dict) else None)
    return found


_REDUCERS = _reducers()


def with_update(state: StateView, update: Mapping[str, Any]) -> dict[str, Any]:
    """The state as the node's ``update`` will leave it, each key merged by its channel's
    reducer: ``files`` path by path, ``usage`` summed, the logs appended. Replacing them
    instead gave a dispatch after a replan a token count of the planner's call alone (the
    steps' allowances then ignored what the turn had spent)."""
    current = {**state, **update}
    for key, value in update.items():
        if key in _REDUCERS:
            reducer, empty = _REDUCERS[key]
            before = state.get(key)
            if before is None and empty is not None:
                before = empty()
            current[key] = reducer(before, [value])
    return current
