"""The graph is async-native: ``await graph.ainvoke`` / ``agent.arun`` on a persistent thread
(aiosqlite's ``AsyncSqliteSaver``), the same coroutines under sync ``invoke``, and parallel
steps that really run at once under both."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import agent
from agent import Context, ScriptedChatModel, build_graph
from agent.coroutines import run_sync
from tests.fakes import END, chain, models, step, writer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_ainvoke_runs_the_demo_plan_to_success_on_an_async_sqlite_thread(tmp_path):
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
            graph = build_graph(checkpointer=saver)
            config: Any = {"configurable": {"thread_id": "t1"}}
            ctx = Context(model="scripted:demo")
            out = await graph.ainvoke({"messages": [("user", "slugify")]}, config, context=ctx)
            stored = (await graph.aget_state(config)).values
            return out, stored

    out, stored = asyncio.run(main())
    assert out["status"] == "success" and out["stop_reason"] == "end"
    assert stored["result"]["status"] == "success"
    assert {p for p, e in stored["files"].items() if e["status"] == "done"} >= {"slugify.py"}


def test_arun_pauses_and_aresume_accepts_on_the_same_persistent_thread(tmp_path):
    async def main() -> tuple[Any, Any]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
            graph = build_graph(checkpointer=saver)
            ctx = {"model": "scripted:depth-cap", "workload": "qa"}
            paused = await agent.arun(graph, "a goal", thread_id="t2", context=ctx)
            done = await agent.aresume(graph, "t2", {"action": "accept"})
            return paused, done

    paused, done = asyncio.run(main())
    assert paused["status"] == "awaiting_input" and paused["escalation"]
    assert (done["status"], done["stop_reason"]) == ("success", "accepted_by_human")


class _Rendezvous(ScriptedChatModel):
    """A writer whose first call of each step waits until ``expected`` such calls are in
    flight at once (or ``patience`` seconds pass): ``peak`` is then the parallelism the graph
    really gave, with no timing in the assertion."""

    expected: int = 8
    patience: float = 20.0
    peak: int = 0
    _waiting: int = 0

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        if len(messages) == 2:  # a step's first call: system prompt and task
            self._waiting += 1  # only the event loop's thread touches these
            self.peak = max(self.peak, self._waiting)
            deadline = time.monotonic() + self.patience
            while self._waiting < self.expected and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kw)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_eight_independent_steps_with_max_parallel_eight_all_run_at_once(mode):
    rendezvous = _Rendezvous(responder=writer())
    roles = models([step(f"S{i}", f"f{i}.md") for i in range(1, 9)], [END], writer=rendezvous)
    graph = build_graph(models=roles, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": mode}}
    payload = {"messages": [("user", "eight files")]}
    ctx = Context(model="scripted:happy", max_parallel=8)
    if mode == "invoke":
        out = graph.invoke(payload, config, context=ctx)
    else:
        out = asyncio.run(graph.ainvoke(payload, config, context=ctx))
    assert out["status"] == "success"
    assert rendezvous.peak == 8


def test_run_sync_works_from_inside_a_running_event_loop():
    async def inner() -> str:
        await asyncio.sleep(0)
        return "done"

    async def outer() -> str:
        return run_sync(inner())  # sync code called by a coroutine: no deadlock

    assert asyncio.run(outer()) == "done"


def test_run_sync_raises_what_the_coroutine_raised_and_keeps_the_callers_context():
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("v", default="unset")
    var.set("caller")

    async def read() -> str:
        return var.get()

    async def boom() -> None:
        raise KeyError("x")

    assert run_sync(read()) == "caller"
    with pytest.raises(KeyError):
        run_sync(boom())


def test_a_chain_of_steps_ends_the_same_under_invoke_and_ainvoke():
    results = []
    for mode in ("invoke", "ainvoke"):
        graph = build_graph(models=models(chain(4), [END]), checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": mode}}
        payload = {"messages": [("user", "a chain")]}
        ctx = Context(model="scripted:happy")
        if mode == "invoke":
            out = graph.invoke(payload, config, context=ctx)
        else:
            out = asyncio.run(graph.ainvoke(payload, config, context=ctx))
        results.append((out["status"], sorted(out["files"]), out["step"]))
    assert results[0] == results[1] and results[0][0] == "success"


def test_a_sync_caller_that_gives_up_cancels_the_coroutine_it_was_waiting_for():
    import concurrent.futures
    import threading

    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    class GaveUp(Exception):
        pass

    original = concurrent.futures.Future.result

    def impatient(self, timeout=None):  # the caller is interrupted while it waits
        try:
            return original(self, timeout=0.2)
        except concurrent.futures.TimeoutError:
            raise GaveUp from None

    concurrent.futures.Future.result = impatient  # type: ignore[method-assign]
    try:
        with pytest.raises(GaveUp):
            run_sync(forever())
    finally:
        concurrent.futures.Future.result = original  # type: ignore[method-assign]
    assert cancelled.wait(5)


def test_a_thread_run_through_open_async_checkpointer_is_leased_for_other_processes(tmp_path):
    from agent import ThreadBusy, open_checkpointer
    from agent.store.checkpointers import open_async_checkpointer
    from agent.store.lease import hold

    db = str(tmp_path / "threads.sqlite")

    async def main() -> None:
        async with open_async_checkpointer(db) as saver:
            graph = build_graph(checkpointer=saver)
            with hold(saver, "t"):  # what arun holds while it runs
                with open_checkpointer(db) as other, pytest.raises(ThreadBusy):
                    with hold(other, "t"):  # a sync writer, as another process would be
                        pass
            assert (await agent.arun(graph, "g", thread_id="t", context=_HAPPY))["status"]

    asyncio.run(main())


_HAPPY = {"model": "scripted:happy"}
