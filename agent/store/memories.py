"""Memories: files under ``memories/`` that outlive a thread, kept in a LangGraph ``BaseStore``.

A thread starts with the memories of its namespace among its files (given, like the user's:
every step reads them, the planner sees each one's name, size and first lines); a step may
write ``memories/<name>`` besides its own files, and what it writes goes to the store at the
end of the step, for the next thread of the namespace. The namespace is the user's
(``Context.memory = "user"``) or the assistant's (``"assistant"``): the user is the server's
authenticated user when there is one (a Context cannot claim another's), else
``Context.user_id`` or the config's ``user_id``; without one a thread has no memories.
Stores: ``build_graph(store=...)``, the one ``langgraph dev`` and LangGraph Server give every
graph, and for the CLI a SQLite store beside its threads (:func:`open_memory_store`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from langgraph.store.base import BaseStore

from agent.vfs.entries import PathError, validate_path

__all__ = [
    "MAX_MEMORIES",
    "MAX_MEMORY_BYTES",
    "MEMORY_PREFIX",
    "MemoryScope",
    "is_memory",
    "load_memories",
    "memory_namespace",
    "open_memory_store",
    "owner_of",
    "save_memories",
]

MEMORY_PREFIX = "memories/"
NAMESPACE_ROOT = "deepreflect_memories"
MAX_MEMORIES = 50
"""Memories a thread loads (the most recently written first)."""
MAX_MEMORY_BYTES = 100_000
"""The largest memory kept; a larger one is not loaded (and a step cannot write one)."""
SCOPES = ("user", "assistant", "off")
MemoryScope = str


def is_memory(path: str) -> bool:
    """Whether ``path`` is a memory file."""
    return path.startswith(MEMORY_PREFIX)


def memory_namespace(
    scope: str, user_id: str | None, configurable: Mapping[str, Any]
) -> tuple[str, ...] | None:
    """The store namespace of a run's memories, or None when it has none (``off``, or no
    user or assistant to key them by)."""
    if scope == "assistant":
        owner = configurable.get("assistant_id")
    elif scope == "user":
        owner = configurable.get("langgraph_auth_user_id") or user_id or configurable.get("user_id")
    else:
        return None
    if not isinstance(owner, str) or not owner.strip():
        return None
    return (NAMESPACE_ROOT, scope, owner_label(owner.strip()))


def owner_label(owner: str) -> str:
    """``owner`` as a store namespace label. LangGraph's stores refuse a label with a period
    (an e-mail address, ``../bob``) or a NUL, so those and ``%`` are percent-encoded: every
    owner gets a label, and no two owners share one."""
    return owner.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


def owner_of(namespace: tuple[str, ...]) -> tuple[str, str] | None:
    """``(scope, owner)`` of a memory namespace (the inverse of :func:`memory_namespace`),
    or None for a namespace that is not one."""
    if len(namespace) != 3 or namespace[0] != NAMESPACE_ROOT or namespace[1] not in SCOPES:
        return None
    return namespace[1], unquote(namespace[2])  # every "%" of a label starts an escape


async def load_memories(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, str]:
    """The namespace's memories as ``{memories/<name>: text}``, the newest first, at most
    :data:`MAX_MEMORIES`; an item that is not a valid file is left out."""
    items = await _store_call(store, "search", namespace, limit=MAX_MEMORIES * 2)
    items.sort(key=lambda item: item.updated_at, reverse=True)
    loaded: dict[str, str] = {}
    for item in items:
        content = item.value.get("content") if isinstance(item.value, Mapping) else None
        path = _path_of(item.key)
        if path is None or not isinstance(content, str):
            continue
        if len(content.encode("utf-8", errors="surrogatepass")) > MAX_MEMORY_BYTES:
            continue
        loaded[path] = content
        if len(loaded) >= MAX_MEMORIES:
            break
    return loaded


async def save_memories(
    store: BaseStore,
    namespace: tuple[str, ...],
    files: Mapping[str, str],
    *,
    thread_id: str | None,
    step_id: str | None,
) -> list[str]:
    """Put each memory of ``files`` into the store; the paths saved."""
    saved = []
    for path, content in sorted(files.items()):
        if not is_memory(path) or _path_of(path.removeprefix(MEMORY_PREFIX)) is None:
            continue
        value = {
            "content": content,
            "thread_id": thread_id,
            "step_id": step_id,
            "written_at": time.time(),
        }
        if len(content.encode("utf-8", errors="surrogatepass")) > MAX_MEMORY_BYTES:
            continue  # it would never be loaded
        key = path.removeprefix(MEMORY_PREFIX)
        await _store_call(store, "put", namespace, key, value, index=False)
        saved.append(path)
    return saved


async def _store_call(store: BaseStore, name: str, *args: Any, **kwargs: Any) -> Any:
    """``store.a<name>(...)``, or the sync method in a worker thread for a store that is
    sync only (``SqliteStore``)."""
    try:
        return await getattr(store, f"a{name}")(*args, **kwargs)
    except NotImplementedError:
        return await asyncio.to_thread(getattr(store, name), *args, **kwargs)


def _path_of(key: str) -> str | None:
    """``memories/<key>`` when it is a valid file path, else None."""
    try:
        return validate_path(MEMORY_PREFIX + key)
    except PathError:
        return None


def memory_store_path(db_location: str) -> Path:
    """Where the CLI keeps memories: ``memory.sqlite`` beside its threads file."""
    return Path(db_location).with_name("memory.sqlite")


@contextmanager
def open_memory_store(db_location: str) -> Iterator[BaseStore]:
    """The CLI's store: a SQLite store beside the threads file, or, for a PostgreSQL URL,
    a PostgreSQL store in the same database."""
    from agent.store.pg_url import is_postgres_url, pg_conninfo

    if is_postgres_url(db_location):
        from langgraph.store.postgres import PostgresStore

        # the URL as a user writes it (a raw "%" in a password) becomes a valid conninfo
        with PostgresStore.from_conn_string(pg_conninfo(db_location)) as pg_store:
            pg_store.setup()
            yield pg_store
        return
    from langgraph.store.sqlite import SqliteStore

    path = memory_store_path(db_location)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn)
        store.setup()
        yield store
    finally:
        conn.close()
