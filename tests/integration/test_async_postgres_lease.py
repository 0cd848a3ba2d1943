"""The lease and its fence on an ``AsyncPostgresSaver``, in a real PostgreSQL server: async
code holds a thread with ``ahold`` (``arun`` and ``aresume`` do), and a stalled async writer
whose lease session died writes nothing once a newer holder took the thread over.

The sync saver's equivalents are in tests/integration/test_lease.py; the server comes from
``tests/postgres.py``.
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any

import pytest

pytest.importorskip(
    "langgraph.checkpoint.postgres",
    reason="PostgreSQL threads need `pip install -e '.[postgres]'` (langgraph-checkpoint-postgres)",
)

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402
from psycopg_pool import AsyncConnectionPool  # noqa: E402

from agent import aresume, arun, build_graph  # noqa: E402
from agent.errors import ConfigError  # noqa: E402
from agent.runs.runner import thread_config  # noqa: E402
from agent.store.fencing import LeaseLost  # noqa: E402
from agent.store.holders import ThreadBusy  # noqa: E402
from agent.store.journal import PostgresJournal  # noqa: E402
from agent.store.lease import ahold, hold  # noqa: E402
from tests.fakes import END, ctx, models, step  # noqa: E402
from tests.integration.test_lease import _lock_sessions, _pg_config, _terminate  # noqa: E402

pytest_plugins = ["tests.postgres"]


def _database(server_url: str) -> str:
    from tests.postgres import fresh_database  # not at import: it is this module's plugin

    return fresh_database(server_url)


def _pool(url: str) -> AsyncConnectionPool:
    return AsyncConnectionPool(url, min_size=1, max_size=3, kwargs={"autocommit": True}, open=False)


async def _checkpoint_ids(saver: AsyncPostgresSaver, thread_id: str = "t") -> list[str]:
    return [
        str(item.config["configurable"]["checkpoint_id"])
        async for item in saver.alist(thread_config(thread_id))
    ]


def test_an_async_and_a_sync_postgres_saver_cannot_hold_one_thread_at_once(postgres_url):
    url = _database(postgres_url)

    async def main() -> None:
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            with PostgresSaver.from_conn_string(url) as sync_saver:
                async with ahold(saver, "t") as lease:
                    assert lease.token > 0
                    with pytest.raises(ThreadBusy, match="thread t is busy"):
                        with hold(sync_saver, "t"):
                            pass
                    with pytest.raises(ThreadBusy, match="thread t is busy"):
                        async with ahold(saver, "t"):  # a second holder in this process
                            pass
                with hold(sync_saver, "t") as later:  # released
                    assert later.token > lease.token
                    with pytest.raises(ThreadBusy, match="thread t is busy"):
                        async with ahold(saver, "t"):
                            pass

    asyncio.run(main())


def test_a_pipelined_async_saver_holds_writes_and_releases_its_lease(postgres_url):
    url = _database(postgres_url)

    async def main() -> None:
        async with (
            AsyncPostgresSaver.from_conn_string(url, pipeline=True) as saver,
            AsyncPostgresSaver.from_conn_string(url) as other,
        ):
            await other.setup()
            async with ahold(saver, "t") as first:  # its answers arrive at the pipe's syncs
                with pytest.raises(ThreadBusy, match="thread t is busy"):
                    async with ahold(other, "t"):
                        pass
                mine = await saver.aput(_pg_config(), empty_checkpoint(), {}, {})
                await saver.aput_writes(mine, [("messages", "kept")], "task-1")
            async with ahold(other, "t") as second:  # released: no lock left behind
                assert second.token > first.token
                saved = await other.aget_tuple(mine)
                assert saved is not None and len(saved.pending_writes) == 1

    asyncio.run(main())


def test_sync_code_in_another_thread_leases_an_async_saver_on_its_loop(postgres_url):
    url = _database(postgres_url)

    async def main() -> None:
        async with _pool(url) as pool:
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            with PostgresSaver.from_conn_string(url) as other:

                def worker() -> int:  # as agent.resume would, from a worker thread
                    with hold(saver, "t") as first:
                        with pytest.raises(ThreadBusy, match="thread t is busy"):
                            with hold(other, "t"):
                                pass
                        saver.put(_pg_config(), empty_checkpoint(), {}, {})  # fenced, held
                        _terminate(url, _lock_sessions(url))
                        with hold(other, "t") as second:
                            assert second.token > first.token
                            with pytest.raises(LeaseLost, match="another writer took over"):
                                saver.put(_pg_config(), empty_checkpoint(), {}, {})
                        return first.token

                assert await asyncio.to_thread(worker) > 0
                with pytest.raises(ConfigError, match="agent.arun"):  # waiting would block
                    with hold(saver, "u"):  # the loop this very call runs on
                        pass
                async with ahold(saver, "u"):  # the way from async code
                    pass

    asyncio.run(main())


@pytest.mark.parametrize("pooled", [False, True])
def test_a_stalled_async_postgres_writer_writes_nothing_once_taken_over(postgres_url, pooled):
    url = _database(postgres_url)

    async def main() -> None:
        async with (
            _pool(url) as pool,
            AsyncPostgresSaver.from_conn_string(url) as single,
            AsyncPostgresSaver.from_conn_string(url) as other,
        ):
            await other.setup()
            stale = AsyncPostgresSaver(pool) if pooled else single
            journal = PostgresJournal(stale, is_async=True)
            async with ahold(stale, "t") as first:
                await stale.aput(_pg_config(), empty_checkpoint(), {}, {})
                await journal.put("t", "k", {"state": "started"})
                # the writer stalls; the server drops its session, and the lock with it
                _terminate(url, _lock_sessions(url))
                async with ahold(other, "t") as second:
                    assert second.token > first.token
                    mine = await other.aput(_pg_config(), empty_checkpoint(), {}, {})
                    before = await _checkpoint_ids(other)
                    with pytest.raises(LeaseLost, match="thread t: another writer took over"):
                        await stale.aput(_pg_config(), empty_checkpoint(), {}, {})
                    with pytest.raises(LeaseLost):
                        await stale.aput_writes(mine, [("messages", "stale")], "task-1")
                    with pytest.raises(LeaseLost):
                        await stale.adelete_thread("t")
                    if pooled:  # a pooled writer's other connections are alive: the token
                        with pytest.raises(LeaseLost):  # refuses its journal entry too
                            await journal.put("t", "k", {"state": "done"})
                    assert await _checkpoint_ids(other) == before
                    saved = await other.aget_tuple(mine)
                    assert saved is not None and saved.pending_writes == []
                with pytest.raises(LeaseLost):  # released: no lease row is this writer's
                    await stale.aput(_pg_config(), empty_checkpoint(), {}, {})
            assert await _checkpoint_ids(other) == before

    asyncio.run(main())


def test_an_aresume_whose_lease_is_taken_mid_run_stops_with_lease_lost_and_adds_nothing(
    postgres_url,
):
    url = _database(postgres_url)
    ask = {"decision": "escalate", "question": "Which year?", "suggested_responses": ["2024"]}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    taken: list[list[str]] = []

    with PostgresSaver.from_conn_string(url) as other, ExitStack() as newer:
        other.setup()

        def take_over(node: str, update: dict[str, Any]) -> None:
            if not taken:  # after the resumed run's first superstep: its session dies and
                _terminate(url, _lock_sessions(url))  # another process takes the thread
                newer.enter_context(hold(other, "t"))
                taken.append(
                    [
                        str(c.config["configurable"]["checkpoint_id"])
                        for c in other.list(thread_config("t"))
                    ]
                )

        async def main() -> None:
            async with _pool(url) as pool:
                graph = build_graph(models=roles, checkpointer=AsyncPostgresSaver(pool))
                paused = await arun(graph, "summarise the filing", context=ctx(), thread_id="t")
                assert paused["status"] == "awaiting_input"
                with pytest.raises(LeaseLost, match="thread t: another writer took over"):
                    await aresume(graph, "t", "2024", context=ctx(), on_update=take_over)

        asyncio.run(main())
        after = [
            str(c.config["configurable"]["checkpoint_id"]) for c in other.list(thread_config("t"))
        ]
        assert taken and after == taken[0]  # nothing after the takeover
        state = other.get_tuple(thread_config("t"))
        assert state is not None
        assert state.checkpoint["channel_values"]["status"] == "running"  # as it was taken
