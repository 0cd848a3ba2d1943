"""One thread, one writer: every run and resume of a thread holds the thread's lease.

Two processes answering one paused thread at once would both continue from the same
checkpoint and fork the thread, and one answer would be lost. With the lease the second
writer fails at once with :class:`~agent.store.holders.ThreadBusy` and nothing is written.
The lease lives next to the checkpoints, so it holds across processes and machines.

Each acquisition gets a fencing token, larger than every token before it in that database.
A writer can stall past its lease (a stopped process, a machine that paused) and wake after
another writer took the thread over: every checkpoint and journal write of a held thread
checks, in the write's own transaction, that the lease row still carries the writer's
token, so the stale writer gets :class:`~agent.store.fencing.LeaseLost` and writes nothing
(``agent.store.fencing``).

Where the lease lives depends on the checkpointer: rows of the SQLite file
(``agent.store.file_leases``), an advisory lock of the PostgreSQL session
(``agent.store.advisory_locks``), or, for any other checkpointer (in memory, unknown), a
lock inside this process. An ``AsyncPostgresSaver`` takes its advisory lock with its own
async connection: async code holds its threads with :func:`ahold`, sync code in another
thread with :func:`hold`, which waits on the saver's loop as the saver's sync methods do.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import Any, Protocol

from agent.errors import ConfigError
from agent.store.advisory_locks import (
    AsyncPostgresLeases,
    AsyncPostgresLeasesFromSync,
    PostgresLeases,
    postgres_holder,
)
from agent.store.fencing import LeaseLost, fence, fence_tokens
from agent.store.file_leases import SqliteLeases, sqlite_holder
from agent.store.heartbeat import heartbeat
from agent.store.holders import HOST, Holder, ThreadBusy
from agent.store.savers import SQLITE_FILE_ATTR, is_postgres_saver, postgres_kind, sqlite_file

DEFAULT_TTL_S = 30.0  # a lease nobody renews is free after this long
TTL_ENV = "DEEPREFLECT_LEASE_TTL_S"


def lease_ttl_s() -> float:
    """How long a lease nobody renews lasts: ``DEEPREFLECT_LEASE_TTL_S``, else 30 seconds."""
    text = os.environ.get(TTL_ENV, "").strip()
    if not text:
        return DEFAULT_TTL_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.05 <= value <= 86400:  # NaN fails too
        msg = f"{TTL_ENV} wants a number of seconds between 0.05 and 86400, not {text!r}"
        raise ConfigError(msg)
    return value


class Lease:
    """A held lease and its fencing token. :meth:`check` raises
    :class:`~agent.store.fencing.LeaseLost` once the heartbeat found it taken."""

    def __init__(self, thread_id: str, token: int = 0) -> None:
        self.thread_id = thread_id
        self.token = token
        self.lost = threading.Event()

    def check(self) -> None:
        """Stop a run whose lease another writer took (this process stalled past the TTL)."""
        if self.lost.is_set():
            raise LeaseLost(self.thread_id)


class LeaseStore(Protocol):
    """Where leases of one checkpointer live."""

    scope: tuple[Any, ...]  # identity of the store inside this process
    renews: bool  # whether a heartbeat must renew a held lease

    def acquire(self, thread_id: str, me: Holder) -> int: ...  # the token; or ThreadBusy
    def renew(self, thread_id: str, me: Holder, token: int) -> bool: ...  # False: lost
    def release(self, thread_id: str, me: Holder, token: int) -> None: ...


class LocalLeases:
    """No shared store: the in-process lock in :func:`hold` is the whole lease."""

    renews = False

    def __init__(self, checkpointer: object) -> None:
        self.scope = ("local", id(checkpointer))

    def acquire(self, thread_id: str, me: Holder) -> int:
        return next(_LOCAL_TOKENS)

    def renew(self, thread_id: str, me: Holder, token: int) -> bool:
        return True

    def release(self, thread_id: str, me: Holder, token: int) -> None:
        return None


_LOCAL_TOKENS = itertools.count(1)


def store_for(checkpointer: object) -> LeaseStore:
    """Where the leases of ``checkpointer``'s threads live (see the module docstring)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    named = getattr(checkpointer, SQLITE_FILE_ATTR, None)
    if isinstance(named, str) and named:
        return SqliteLeases(named)
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.lock:
            path = sqlite_file(checkpointer.conn)
        if path:
            return SqliteLeases(path)
    if is_postgres_saver(checkpointer):
        return PostgresLeases(checkpointer)
    if postgres_kind(checkpointer) is True:
        return AsyncPostgresLeasesFromSync(checkpointer)
    return LocalLeases(checkpointer)


def lease_holder(checkpointer: object, thread_id: str) -> str | None:
    """Who holds ``thread_id``'s lease, as people read it; None when no run holds it.

    Only reads: a SQLite row is looked up (on the saver's own, possibly read-only,
    connection), a PostgreSQL advisory lock in ``pg_locks``; nothing is taken or written.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(checkpointer, SqliteSaver):
        return sqlite_holder(checkpointer, thread_id)
    if is_postgres_saver(checkpointer):
        return postgres_holder(checkpointer, thread_id)
    with _HELD_LOCK:
        held = any(key[-1] == thread_id and key[:2] == ("local", id(checkpointer)) for key in _HELD)
    return "a run in this process holds it" if held else None


_HELD: set[tuple[Any, ...]] = set()
_HELD_LOCK = threading.Lock()


def _claim_here(key: tuple[Any, ...]) -> bool:
    """Take ``key`` inside this process; False when another thread of it holds it."""
    with _HELD_LOCK:
        if key in _HELD:
            return False
        _HELD.add(key)
        return True


@contextmanager
def hold(checkpointer: object, thread_id: str, *, ttl_s: float | None = None) -> Iterator[Lease]:
    """Hold ``thread_id``'s lease for the block; :class:`~agent.store.holders.ThreadBusy` at
    once if it is taken.

    Nothing waits for a busy thread: the caller learns at once that someone else is writing
    to it and can try again, instead of continuing from a checkpoint that is going stale.
    While the block runs, the saver's writes to the thread are fenced by the lease's token
    (``agent.store.fencing``): once another writer took the thread over they raise
    :class:`~agent.store.fencing.LeaseLost` and write nothing. ``ttl_s`` defaults to
    :func:`lease_ttl_s`.
    """
    ttl = lease_ttl_s() if ttl_s is None else ttl_s
    store = store_for(checkpointer)
    with _claimed(store.scope, thread_id):
        me = Holder(uuid.uuid4().hex, HOST, os.getpid(), time.time() + ttl)
        token = store.acquire(thread_id, me)
        lease = Lease(thread_id, token)
        try:
            with _fenced(checkpointer, store.scope, lease):
                stop = _keep(store, lease, me, ttl) if store.renews else None
                try:
                    yield lease
                finally:
                    if stop is not None:
                        stop()
        finally:
            store.release(thread_id, me, token)


@asynccontextmanager
async def ahold(
    checkpointer: object, thread_id: str, *, ttl_s: float | None = None
) -> AsyncIterator[Lease]:
    """:func:`hold` for async code: an ``AsyncPostgresSaver``'s lease is taken and its
    writes fenced on its own async connection; any other checkpointer is held by
    :func:`hold` (its stores are synchronous)."""
    if postgres_kind(checkpointer) is not True:
        with hold(checkpointer, thread_id, ttl_s=ttl_s) as lease:
            yield lease
        return
    store = AsyncPostgresLeases(checkpointer)  # the session's lock needs no renewing
    with _claimed(store.scope, thread_id):
        ttl = lease_ttl_s() if ttl_s is None else ttl_s
        me = Holder(uuid.uuid4().hex, HOST, os.getpid(), time.time() + ttl)
        token = await store.acquire(thread_id, me)
        lease = Lease(thread_id, token)
        try:
            with _fenced(checkpointer, store.scope, lease):
                yield lease
        finally:
            await store.release(thread_id, me, token)


@contextmanager
def _claimed(scope: tuple[Any, ...], thread_id: str) -> Iterator[None]:
    """The in-process half of a lease: a second holder in this process is busy at once."""
    key = (*scope, thread_id)
    if not _claim_here(key):
        raise ThreadBusy(thread_id)
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD.discard(key)


@contextmanager
def _fenced(checkpointer: object, scope: tuple[Any, ...], lease: Lease) -> Iterator[None]:
    """The saver's writes to the leased thread check ``lease``'s token while the block runs."""
    fence(checkpointer, scope)
    fence_tokens.hold(scope, lease.thread_id, lease.token)
    try:
        yield
    finally:
        fence_tokens.drop(scope, lease.thread_id)


def _keep(store: LeaseStore, lease: Lease, me: Holder, ttl_s: float) -> Callable[[], None]:
    """Start the heartbeat that renews ``lease`` in ``store``; returns its ``stop``."""

    def renew(expires_at: float) -> bool:
        return store.renew(lease.thread_id, replace(me, expires_at=expires_at), lease.token)

    return heartbeat(renew, lease.lost, ttl_s, f"lease {lease.thread_id}")
