"""The graph's side of memories (``agent.store.memories``): the planner takes the namespace's
memories in among the thread's files when it plans; a subagent's memory writes go to the
store when its step ends."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from agent.context import Context
from agent.store.memories import is_memory, load_memories, memory_namespace, save_memories
from agent.vfs.entries import file_entry
from agent.vfs.origin import USER

__all__ = ["memories_taken_in", "run_memory", "save_step_memories"]


def run_memory(runtime: Runtime[Context], ctx: Context) -> tuple[BaseStore, tuple[str, ...]] | None:
    """The store and namespace of this run's memories, or None when it has none."""
    store = runtime.store
    if store is None:
        return None
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        configurable = {}
    namespace = memory_namespace(ctx.memory, ctx.user_id, configurable)
    return None if namespace is None else (store, namespace)


async def memories_taken_in(
    state: Mapping[str, Any], runtime: Runtime[Context], ctx: Context
) -> dict[str, Any]:
    """The ``files`` update that gives the thread its namespace's memories, as files the
    user gave (every step reads them; the planner sees their heads); {} when none changed."""
    found = run_memory(runtime, ctx)
    if found is None:
        return {}
    memories = await load_memories(*found)
    files = state.get("files") or {}
    step = int(state.get("step") or 0)
    changed = {
        path: file_entry(content, step=step, origin=USER)
        for path, content in memories.items()
        if (files.get(path) or {}).get("sha256") != _sha256(content)
    }
    return {"files": changed} if changed else {}


async def save_step_memories(
    runtime: Runtime[Context], ctx: Context, files: Mapping[str, Any], step_id: str
) -> list[str]:
    """Put the memories a step wrote (entries of ``files``) into the store; the paths."""
    found = run_memory(runtime, ctx)
    written = {
        path: entry["content"]
        for path, entry in files.items()
        if is_memory(path) and isinstance(entry, Mapping) and isinstance(entry.get("content"), str)
    }
    if found is None or not written:
        return []
    try:
        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        thread = None
    return await save_memories(*found, written, thread_id=thread, step_id=step_id)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
