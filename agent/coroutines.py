"""One implementation, two ways to call it: the graph's nodes are coroutines, and sync
callers (``graph.invoke``, ``revise_loop``) run them on one background event loop.

Why one long-lived loop rather than ``asyncio.run`` per call: async model clients (httpx
pools in ``langchain-openai``, ``langchain-anthropic``, ...) keep connections bound to the loop
that opened them, so a fresh loop per node would meet "Event loop is closed" on the next
call. Coroutines run with the caller's context (LangGraph's config, callbacks, the stream
writer, ``interrupt()``), so they behave as if they ran in the calling thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.runtime import Runtime, get_runtime

__all__ = ["BothWays", "called_sync", "maybe_await", "run_sync", "synced"]

T = TypeVar("T")
P = ParamSpec("P")

_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_THREAD: threading.Thread | None = None
_LOCK = threading.Lock()
_SYNC_CALLER: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "deepreflect_sync_caller", default=False
)


def called_sync() -> bool:
    """Whether the running coroutine serves a sync caller (``graph.invoke``): a graph it
    calls in turn is called sync too, as LangGraph calls a subgraph, since the caller's
    checkpointer may have no async methods (``SqliteSaver``, ``PostgresSaver``)."""
    return _SYNC_CALLER.get()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The process's background loop, started on first use in a daemon thread."""
    global _LOOP, _LOOP_THREAD
    with _LOCK:
        if _LOOP is None or _LOOP_THREAD is None or not _LOOP_THREAD.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="deepreflect-loop", daemon=True)
            thread.start()
            _LOOP, _LOOP_THREAD = loop, thread
        return _LOOP


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end from sync code, in the caller's context.

    From a plain thread it runs on the background loop. From inside a running loop (sync code
    called by a coroutine, e.g. a sync tool that invokes a graph) waiting on that loop could
    deadlock, so it gets a loop of its own in a fresh thread instead.
    """
    context = contextvars.copy_context()
    if _in_running_loop():
        with concurrent.futures.ThreadPoolExecutor(1, "deepreflect-nested") as pool:
            return pool.submit(context.run, asyncio.run, coro).result()
    loop = _background_loop()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    started: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro, context=context)
        started.append(task)

        def finish(t: asyncio.Task[T]) -> None:
            if t.cancelled():
                done.cancel()
            elif (exc := t.exception()) is not None:
                done.set_exception(exc)
            else:
                done.set_result(t.result())

        task.add_done_callback(finish)

    loop.call_soon_threadsafe(start)
    try:
        return done.result()
    except BaseException:
        # the caller gave up (Ctrl-C, a timeout around invoke): the node must not go on
        # working on the loop behind its back
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in started])
        raise


async def maybe_await(value: T | Awaitable[T]) -> T:
    """The value, awaited if it is awaitable: lets one async loop drive sync callables too."""
    if isinstance(value, Awaitable):
        return await value
    return value


def synced(afunc: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The sync twin of a coroutine function: same signature, run with ``run_sync``."""

    @functools.wraps(afunc)
    def func(*args: P.args, **kwargs: P.kwargs) -> T:
        token = _SYNC_CALLER.set(True)
        try:
            return run_sync(afunc(*args, **kwargs))
        finally:
            _SYNC_CALLER.reset(token)

    return func


class BothWays(Runnable[Any, Any]):
    """A graph node from a coroutine function of ``(state, runtime)``: awaited under
    ``ainvoke``/``astream``, run on the background loop under ``invoke``/``stream``.

    A plain ``Runnable`` rather than a ``RunnableLambda``: LangGraph already traces the node
    as one run, and a lambda would nest a second run of the same name inside it. The runtime
    comes from ``get_runtime``, which reads the running task's config on either side
    (``run_sync`` keeps the caller's context)."""

    def __init__(self, afunc: Callable[[Any, Runtime[Any]], Coroutine[Any, Any, Any]], name: str):
        self.afunc = afunc
        self.name = name

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        token = _SYNC_CALLER.set(True)  # a graph the node calls is called sync too
        try:
            return run_sync(self.ainvoke(input, config))
        finally:
            _SYNC_CALLER.reset(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self.afunc(input, get_runtime())
