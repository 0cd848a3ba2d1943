"""One thread, one writer: the lease every run and resume of a thread holds.

The pure rules first, then the stores inside one process (memory, SQLite, PostgreSQL), then
real processes: two answers to one paused thread at once, and a holder killed mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import agent
from agent import build_graph, open_checkpointer, resume, run
from agent.errors import ErrorClass
from agent.runs.runner import NotAwaitingAnswer, answer_refusal, thread_config
from agent.store.advisory_locks import advisory_key
from agent.store.fencing import LEASE_TABLE, LeaseLost
from agent.store.file_leases import EPOCH_TABLE
from agent.store.holders import HOST, Holder, ThreadBusy, holder_is_live, pid_alive
from agent.store.lease import TTL_ENV, Lease, hold
from tests.fakes import END, ROOT, cli, ctx, models, sqlite_graph, step

pytest_plugins = ["tests.postgres"]
NOW = 1_000_000.0


def _holder(host: str = HOST, pid: int = 4242, expires_at: float = NOW + 30) -> Holder:
    return Holder(owner="someone", host=host, pid=pid, expires_at=expires_at)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _poll(condition, what: str, deadline_s: float = 30.0) -> None:
    """Wait for something another thread or process does; fail with ``what`` if it never does."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


# ------------------------------------------------------------------------- pure rules


def test_an_expired_lease_is_free_on_any_host_even_if_its_process_lives():
    expired = _holder(expires_at=NOW - 1)
    assert not holder_is_live(expired, now=NOW, host=HOST, alive=lambda pid: True)
    elsewhere = _holder(host="other-host", expires_at=NOW - 1)
    assert not holder_is_live(elsewhere, now=NOW, host=HOST, alive=lambda pid: True)


def test_a_lease_on_this_host_blocks_while_its_process_lives_and_is_free_once_it_died():
    holder = _holder()
    assert holder_is_live(holder, now=NOW, host=HOST, alive=lambda pid: pid == 4242)
    assert not holder_is_live(holder, now=NOW, host=HOST, alive=lambda pid: False)


def test_a_lease_from_another_host_blocks_until_its_time_runs_out():
    holder = _holder(host="other-host")
    # its pid means nothing here: only its time frees it
    assert holder_is_live(holder, now=NOW, host=HOST, alive=lambda pid: False)
    assert not holder_is_live(holder, now=NOW + 31, host=HOST, alive=lambda pid: False)


def test_the_advisory_key_is_a_stable_signed_64_bit_number_per_thread():
    keys = {advisory_key(f"t{i}") for i in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= key < 2**63 for key in keys)
    assert advisory_key("t1") == advisory_key("t1")
    # fixed by the thread id alone (no per-process hash seed), so every process agrees
    code = "from agent.store.advisory_locks import advisory_key; print(advisory_key('t1'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert int(other.stdout) == advisory_key("t1"), other.stderr


def test_pid_alive_sees_this_process_and_not_a_child_that_exited():
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())
    assert not pid_alive(0) and not pid_alive(-1)


def test_thread_busy_names_the_thread_and_is_exported_from_agent():
    busy = ThreadBusy("t-1")
    assert str(busy).startswith("thread t-1 is busy: ")
    assert busy.thread_id == "t-1" and busy.error_class is ErrorClass.TRANSIENT
    assert agent.ThreadBusy is ThreadBusy and "ThreadBusy" in agent.__all__


def test_a_lost_lease_stops_the_run_at_its_next_check():
    lease = Lease("t", token=7)
    lease.check()  # held: nothing happens
    lease.lost.set()
    with pytest.raises(LeaseLost, match="thread t: another writer took over this thread"):
        lease.check()


def test_lease_lost_is_one_line_naming_the_thread_and_is_exported_from_agent():
    lost = LeaseLost("t-1")
    assert "\n" not in str(lost) and "`deepreflect show t-1`" in str(lost)
    assert lost.thread_id == "t-1" and not isinstance(lost, ThreadBusy)
    assert agent.LeaseLost is LeaseLost and "LeaseLost" in agent.__all__


def test_an_answer_is_refused_unless_the_thread_waits_for_one():
    assert answer_refusal("t", "awaiting_input") is None
    assert answer_refusal("t", "budget_exhausted") is None
    finished = answer_refusal("t", "success")
    assert finished is not None and "not waiting for an answer" in finished
    assert "`deepreflect run --thread t GOAL` starts a new turn" in finished
    crashed = answer_refusal("t", "running")
    assert crashed is not None and "`deepreflect resume t` with no answer continues" in crashed


# ------------------------------------------------------------------- inside one process


def test_an_in_memory_checkpointer_is_leased_inside_the_process():
    saver = InMemorySaver()
    with hold(saver, "t"):
        with pytest.raises(ThreadBusy, match="thread t is busy"):
            with hold(saver, "t"):
                pass
        with hold(saver, "other"):  # another thread of the same saver is free
            pass
        with hold(InMemorySaver(), "t"):  # another store entirely
            pass
    with hold(saver, "t"):  # released when the block ended
        pass


def _sqlite_saver(path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))
    saver.setup()
    return saver


def _lease_row(path, thread_id: str = "t") -> tuple | None:
    with sqlite3.connect(str(path)) as conn:
        query = f"SELECT owner, host, pid, expires_at FROM {LEASE_TABLE} WHERE thread_id = ?"
        return conn.execute(query, (thread_id,)).fetchone()


def _write_row(path, holder: Holder, thread_id: str = "t") -> None:
    with hold(_sqlite_saver(path), "create-the-table"):
        pass
    with sqlite3.connect(str(path)) as conn:
        conn.execute(
            f"INSERT OR REPLACE INTO {LEASE_TABLE} (thread_id, owner, host, pid, expires_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (thread_id, holder.owner, holder.host, holder.pid, holder.expires_at),
        )


def test_a_second_writer_in_this_process_is_busy_until_the_first_releases(tmp_path):
    db = tmp_path / "threads.sqlite"
    first, second = _sqlite_saver(db), _sqlite_saver(db)
    with hold(first, "t"):
        assert _lease_row(db)[1:3] == (HOST, os.getpid())
        with pytest.raises(ThreadBusy, match="thread t is busy"):
            with hold(second, "t"):
                pass
    assert _lease_row(db) is None
    with hold(second, "t"):
        pass


def test_a_sqlite_lease_of_another_live_process_blocks_and_is_free_once_it_died(tmp_path):
    db = tmp_path / "threads.sqlite"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _write_row(db, Holder("other", HOST, other.pid, time.time() + 3600))
        with pytest.raises(ThreadBusy, match=f"process {other.pid} on {HOST} is running or"):
            with hold(_sqlite_saver(db), "t"):
                pass
    finally:
        other.kill()
        other.wait()
    with hold(_sqlite_saver(db), "t"):  # its time has not run out: the pid test freed it
        assert _lease_row(db)[2] == os.getpid()


def test_a_sqlite_lease_of_another_host_blocks_until_its_time_runs_out(tmp_path):
    db = tmp_path / "threads.sqlite"
    _write_row(db, Holder("remote", "other-host", 1, time.time() + 3600))
    with pytest.raises(ThreadBusy, match="process 1 on other-host is running or resuming it"):
        with hold(_sqlite_saver(db), "t"):
            pass
    _write_row(db, Holder("remote", "other-host", 1, time.time() - 1))
    with hold(_sqlite_saver(db), "t"):
        assert _lease_row(db)[1] == HOST


def test_the_heartbeat_renews_a_held_sqlite_lease(tmp_path):
    db = tmp_path / "threads.sqlite"
    with hold(_sqlite_saver(db), "t", ttl_s=0.3):
        first = _lease_row(db)[3]
        _poll(lambda: _lease_row(db)[3] > first, "the lease was never renewed")


def test_a_sqlite_lease_another_writer_took_over_is_reported_lost(tmp_path):
    db = tmp_path / "threads.sqlite"
    with hold(_sqlite_saver(db), "t", ttl_s=0.3) as lease:
        with sqlite3.connect(str(db)) as conn:
            conn.execute(
                f"UPDATE {LEASE_TABLE} SET owner = 'intruder', token = token + 1 "
                "WHERE thread_id = 't'"
            )
        _poll(lease.lost.is_set, "the heartbeat never noticed the lease was taken")
        with pytest.raises(LeaseLost):
            lease.check()
    assert _lease_row(db)[0] == "intruder"  # releasing does not delete another's lease


def _paused_graph(tmp_path):
    ask = {"decision": "escalate", "question": "Which year?", "suggested_responses": ["2024"]}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph, _ = sqlite_graph(tmp_path, roles)
    assert run(graph, "summarise the filing", context=ctx(), thread_id="t")["status"] == (
        "awaiting_input"
    )
    return graph, roles


def _humans(graph, thread_id: str = "t") -> list[str]:
    messages = graph.get_state(thread_config(thread_id)).values["messages"]
    return [str(m.content) for m in messages if isinstance(m, HumanMessage)]


def test_run_and_resume_on_a_thread_another_writer_holds_fail_at_once_and_change_nothing(
    tmp_path,
):
    graph, roles = _paused_graph(tmp_path)
    before = graph.get_state(thread_config("t"))
    with hold(_sqlite_saver(tmp_path / "threads.sqlite"), "t"):
        with pytest.raises(ThreadBusy, match="thread t is busy"):
            resume(graph, "t", "2024", context=ctx())
        with pytest.raises(ThreadBusy, match="thread t is busy"):
            run(graph, "another goal", thread_id="t", context=ctx())
    after = graph.get_state(thread_config("t"))
    assert after.config == before.config and after.values["messages"] == before.values["messages"]
    assert len(roles["planner"].calls) == 1
    assert resume(graph, "t", "2024", context=ctx())["status"] == "success"
    assert _humans(graph) == ["summarise the filing", "2024"]


def test_an_answer_to_a_finished_thread_is_refused_and_never_becomes_a_new_goal(tmp_path):
    graph, roles = _paused_graph(tmp_path)
    assert resume(graph, "t", "2024", context=ctx())["status"] == "success"
    calls = len(roles["planner"].calls)
    with pytest.raises(NotAwaitingAnswer, match="thread t is not waiting for an answer"):
        resume(graph, "t", "a late answer", context=ctx())
    assert len(roles["planner"].calls) == calls
    assert _humans(graph) == ["summarise the filing", "2024"]
    assert graph.get_state(thread_config("t")).values["status"] == "success"


def test_two_postgres_savers_cannot_hold_one_thread_and_a_dead_connection_frees_it(
    postgres_url,
):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    with PostgresSaver.from_conn_string(url) as first, PostgresSaver.from_conn_string(url) as other:
        with hold(first, "t"):
            with pytest.raises(ThreadBusy, match="thread t is busy"):
                with hold(other, "t"):
                    pass
            with hold(other, "u"):
                pass
        with hold(other, "t"):  # released
            pass
        with hold(first, "t"):
            first.conn.close()  # the process holding it dies: the server drops its session

            def taken() -> bool:
                try:
                    with hold(other, "t"):
                        return True
                except ThreadBusy:
                    return False

            _poll(taken, "the server never released the lock of a closed connection")


def test_a_pooled_postgres_saver_holds_the_lease_outside_any_open_transaction(postgres_url):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool

    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    with ConnectionPool(url, min_size=1, max_size=2) as pool:  # autocommit off, as by default
        with PostgresSaver.from_conn_string(url) as other:
            with hold(PostgresSaver(pool), "t"):
                with pytest.raises(ThreadBusy, match="thread t is busy"):
                    with hold(other, "t"):
                        pass
                query = (
                    "SELECT state FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                states = [row["state"] for row in other.conn.execute(query).fetchall()]
                assert states and "idle in transaction" not in states
            with hold(other, "t"):  # released, and its connection is back in the pool
                pass
            assert pool.get_stats()["pool_available"] >= 1


def test_a_pipelined_postgres_saver_holds_writes_and_releases_its_lease(postgres_url):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    with (
        PostgresSaver.from_conn_string(url, pipeline=True) as saver,
        PostgresSaver.from_conn_string(url) as other,
    ):
        other.setup()
        with hold(saver, "t") as first:  # its answers arrive at the pipeline's syncs
            with pytest.raises(ThreadBusy, match="thread t is busy"):
                with hold(other, "t"):
                    pass
            mine = saver.put(_pg_config(), empty_checkpoint(), {}, {})
        with hold(other, "t") as second:  # released: no lock left behind
            assert second.token > first.token
            assert other.get_tuple(mine) is not None


# ------------------------------------------------------------------------ real processes


def _pause(db: str) -> str:
    paused = cli("demo", "--scenario", "escalation", "--json", db=db)
    assert paused.returncode == 3, paused.stderr
    return json.loads(paused.stdout)["thread_id"]


@contextmanager
def _holding(
    db: str, thread_id: str, answer: str, mode: str = "wait", ttl_s: float | None = None
) -> Iterator[subprocess.Popen]:
    """A process that resumes the thread with ``answer`` and stops mid-run, lease held
    (``tests/lease_worker.py``: ``wait`` on stdin, or ``stop-in-write``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    if ttl_s is not None:
        env[TTL_ENV] = str(ttl_s)
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.lease_worker", db, thread_id, answer, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**env, "PYTHONPATH": ROOT},
    )
    try:
        assert worker.stdout is not None
        leased = worker.stdout.readline()
        expected = "writing\n" if mode == "stop-in-write" else "leased\n"
        assert leased == expected, worker.stderr.read() if worker.stderr else ""
        yield worker
    finally:
        if worker.poll() is None and worker.returncode is None:
            worker.kill()
        worker.wait()


def _thread_state(db: str, thread_id: str) -> tuple[dict[str, Any], list[str | None]]:
    """The thread's values and the parent id of each of its checkpoints."""
    with open_checkpointer(db, write=False) as saver:
        values = build_graph(checkpointer=saver).get_state(thread_config(thread_id)).values
        parents = [
            (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            for item in saver.list(thread_config(thread_id))
        ]
    return values, parents


def test_two_answers_at_once_one_runs_the_other_is_busy_and_is_refused_when_sent_again(
    threads_db,
):
    thread_id = _pause(threads_db)
    with _holding(threads_db, thread_id, "engineers") as first:
        second = cli("resume", thread_id, "executives", db=threads_db)
        assert second.returncode == 4, second.stderr
        assert second.stderr.startswith(f"error: thread {thread_id} is busy: ")
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        shown = cli("show", thread_id, "--json", db=threads_db)  # reading needs no lease
        assert shown.returncode == 0, shown.stderr
        out, err = first.communicate("go on\n", timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["status"] == "success"

    values, parents = _thread_state(threads_db, thread_id)
    humans = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    assert humans[1:] == ["engineers"]  # the winning answer, once; the busy one never landed
    assert values["status"] == "success" and values["escalation"] is None
    assert len(parents) == len(set(parents)), "two writers forked the thread"

    late = cli("resume", thread_id, "executives", db=threads_db)
    assert late.returncode == 2
    assert f"thread {thread_id} is not waiting for an answer (its status is success)" in late.stderr
    assert f"`deepreflect run --thread {thread_id} GOAL` starts a new turn" in late.stderr
    assert _thread_state(threads_db, thread_id)[0]["messages"] == values["messages"]


def _postgres_locks_gone(url: str) -> bool:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        query = (
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        row = conn.execute(query).fetchone()
    return row is not None and row[0] == 0


def test_a_lease_left_by_a_killed_process_does_not_block_a_later_resume(threads_db):
    thread_id = _pause(threads_db)
    with _holding(threads_db, thread_id, "engineers") as worker:
        if not threads_db.startswith("postgres"):
            assert _lease_row(threads_db, thread_id)[2] == worker.pid
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    assert worker.returncode == -signal.SIGKILL
    if threads_db.startswith("postgres"):
        # the server notices the dead connection on its own; nothing of ours times out
        _poll(lambda: _postgres_locks_gone(threads_db), "the killed session kept its lock")
    else:
        assert _lease_row(threads_db, thread_id)[2] == worker.pid  # left behind, yet free

    done = cli("resume", thread_id, "--json", db=threads_db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "success"
    values, _ = _thread_state(threads_db, thread_id)
    humans = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    assert humans[1:] == ["engineers"]  # the killed process's answer was kept and used


# ------------------------------------------- a writer that lost its lease writes nothing

TTL = 1.0  # the short lease of these tests, for both writers


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP), as /proc says."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()[0] in ("T", "t")


def _has_open(pid: int, path: str) -> bool:
    """Whether process ``pid`` has the file at ``path`` open."""
    folder = f"/proc/{pid}/fd"
    try:
        return any(os.path.realpath(f"{folder}/{fd}") == path for fd in os.listdir(folder))
    except OSError:
        return False


def _checkpoints(db: str, thread_id: str) -> list[str]:
    with open_checkpointer(db, write=False) as saver:
        return [
            str(item.config["configurable"]["checkpoint_id"])
            for item in saver.list(thread_config(thread_id))
        ]


def _assert_one_lease_lost_line(
    proc: subprocess.CompletedProcess | subprocess.Popen, err: str, thread_id: str
) -> None:
    assert proc.returncode == 4, err
    assert err.startswith(f"error: thread {thread_id}: another writer took over"), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"`deepreflect show {thread_id}`" in err


def _assert_the_takeover_is_intact(
    db: str, thread_id: str, after_b: list[str], answer: str
) -> None:
    """The thread is as the second writer left it: no checkpoint added, no fork."""
    assert _checkpoints(db, thread_id) == after_b
    values, parents = _thread_state(db, thread_id)
    assert values["status"] == "success" and values["escalation"] is None
    humans = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    assert humans[-1] == answer
    assert len(parents) == len(set(parents)), "the stale writer forked the thread"


def _takeover(db: str, thread_id: str) -> subprocess.CompletedProcess:
    """A second writer continues the thread to the end (``resume`` with no answer)."""
    second = cli("resume", thread_id, "--json", db=db, env_extra={TTL_ENV: str(TTL)})
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["status"] == "success"
    return second


def test_a_writer_frozen_past_its_lease_gets_lease_lost_and_the_takeover_stays_intact(
    tmp_path,
):
    db = str(tmp_path / "threads.sqlite")
    thread_id = _pause(db)
    with _holding(db, thread_id, "engineers", ttl_s=TTL) as first:
        os.kill(first.pid, signal.SIGSTOP)  # its heartbeat stops with it
        _poll(lambda: _stopped(first.pid), "the first writer never stopped")
        time.sleep(TTL * 1.5)
        # its answer is in (written while it held the lease), so the thread runs: the second
        # writer continues it, to the end
        second = _takeover(db, thread_id)
        after_b = _checkpoints(db, thread_id)
        os.kill(first.pid, signal.SIGCONT)
        out, err = first.communicate("go on\n", timeout=120)
    _assert_one_lease_lost_line(first, err, thread_id)
    assert out == ""  # no Result: the stale run reports nothing as its outcome
    _assert_the_takeover_is_intact(db, thread_id, after_b, "engineers")
    assert json.loads(second.stdout)["thread_id"] == thread_id


def test_a_writer_stopped_inside_a_checkpoint_write_either_finishes_it_or_writes_nothing(
    tmp_path,
):
    """Stopped while its write holds the write lock (the fence being checked): no takeover
    can happen inside the write, so it commits; whichever writer then holds the lease
    finishes, the other exits 4 having written nothing, and the thread never forks."""
    db = str(tmp_path / "threads.sqlite")
    thread_id = _pause(db)
    with _holding(db, thread_id, "engineers", mode="stop-in-write", ttl_s=TTL) as first:
        _poll(lambda: _stopped(first.pid), "the first writer never stopped")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
        second = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", "resume", thread_id, "--json", "--db", db],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**env, "PYTHONPATH": ROOT, TTL_ENV: str(TTL)},
        )
        _poll(lambda: _has_open(second.pid, db), "the second writer never opened the file")
        time.sleep(TTL * 1.5)  # the first writer's lease runs out; the second waits for the lock
        assert second.poll() is None, "the second writer did not wait for the write lock"
        os.kill(first.pid, signal.SIGCONT)
        b_out, b_err = second.communicate(timeout=120)
        a_out, a_err = first.communicate(timeout=120)
    # the first finishes (the second then finds it done, or busy), or the second took over
    # once the write was committed and the first stops at its next write
    assert 0 in (first.returncode, second.returncode), (a_err, b_err)
    for proc, out, err in ((first, a_out, a_err), (second, b_out, b_err)):
        if proc.returncode == 0:
            assert json.loads(out)["status"] == "success"
        elif " is busy: " not in err:
            _assert_one_lease_lost_line(proc, err, thread_id)
        else:
            assert proc.returncode == 4 and err.count("\n") == 1, err
    values, parents = _thread_state(db, thread_id)
    assert values["status"] == "success"
    humans = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    assert humans[1:] == ["engineers"]
    assert len(parents) == len(set(parents)), "two writers forked the thread"


def _take_the_lease(db: str, thread_id: str) -> None:
    """What a writer whose clock ran past the holder's expiry does: take the lease with the
    next token (the holder's heartbeat is alive; the table says nothing about clocks)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"UPDATE {EPOCH_TABLE} SET last = last + 1")
        conn.execute(
            f"UPDATE {LEASE_TABLE} SET owner = 'clock-ahead', pid = 0, expires_at = 0, "
            f"token = (SELECT last FROM {EPOCH_TABLE}) WHERE thread_id = ?",
            (thread_id,),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_a_writer_whose_heartbeat_lives_but_whose_lease_was_taken_writes_nothing(tmp_path):
    db = str(tmp_path / "threads.sqlite")
    thread_id = _pause(db)
    with _holding(db, thread_id, "engineers", ttl_s=TTL) as first:
        # the main thread waits while the heartbeat renews: the lease holds past its TTL
        time.sleep(TTL * 1.5)
        busy = cli("resume", thread_id, "--json", db=db, env_extra={TTL_ENV: str(TTL)})
        assert busy.returncode == 4 and " is busy: " in busy.stderr, busy.stderr
        _take_the_lease(db, thread_id)
        second = _takeover(db, thread_id)
        after_b = _checkpoints(db, thread_id)
        out, err = first.communicate("go on\n", timeout=120)
    _assert_one_lease_lost_line(first, err, thread_id)
    _assert_the_takeover_is_intact(db, thread_id, after_b, "engineers")
    assert json.loads(second.stdout)["status"] == "success"


def _paused_async_graph(tmp_path, saver):
    ask = {"decision": "escalate", "question": "Which year?", "suggested_responses": ["2024"]}
    roles = models([{"steps": [step("S1", "a.md")]}, {"steps": [step("S1", "a.md")]}], [ask, END])
    graph = build_graph(models=roles, checkpointer=saver, retry_policy=None)
    return graph


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_run_whose_lease_is_taken_mid_run_stops_with_lease_lost_and_adds_nothing(tmp_path, kind):
    import asyncio

    from agent import aresume, arun
    from agent.store.checkpointers import open_async_checkpointer

    db = str(tmp_path / "threads.sqlite")
    taken: list[list[str]] = []

    def take_over(node: str, update: dict[str, Any]) -> None:
        if not taken:
            _take_the_lease(db, "t")
            taken.append(_checkpoints(db, "t"))

    if kind == "sync":
        graph, _ = _paused_graph(tmp_path)
        with pytest.raises(LeaseLost, match="thread t: another writer took over"):
            resume(graph, "t", "2024", context=ctx(), on_update=take_over)
    else:

        async def main() -> None:
            async with open_async_checkpointer(db) as saver:
                graph = _paused_async_graph(tmp_path, saver)
                paused = await arun(graph, "summarise the filing", context=ctx(), thread_id="t")
                assert paused["status"] == "awaiting_input"
                with pytest.raises(LeaseLost, match="thread t: another writer took over"):
                    await aresume(graph, "t", "2024", context=ctx(), on_update=take_over)

        asyncio.run(main())
    assert taken and _checkpoints(db, "t") == taken[0]  # nothing after the takeover
    values, parents = _thread_state(db, "t")
    assert values["status"] == "running"  # as the takeover found it: the stale run never went on
    assert len(parents) == len(set(parents))


def _lock_sessions(url: str) -> list[int]:
    """Backend pids holding an advisory lock in the database (the lease sessions)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    return [int(row[0]) for row in rows]


def _terminate(url: str, pids: list[int]) -> None:
    """What the server does to a session whose machine vanished: it is gone, with its lock."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    _poll(lambda: not set(pids) & set(_lock_sessions(url)), "the session kept its lock")


def _pg_config(checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


@pytest.mark.parametrize("pooled", [False, True])
def test_a_postgres_writer_whose_lease_session_died_writes_nothing_once_taken_over(
    postgres_url, pooled
):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool

    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    with (
        ConnectionPool(url, min_size=1, max_size=3, kwargs={"autocommit": True}) as pool,
        PostgresSaver.from_conn_string(url) as single,
        PostgresSaver.from_conn_string(url) as other,
    ):
        other.setup()
        stale = PostgresSaver(pool) if pooled else single
        with hold(stale, "t") as first:
            stale.put(_pg_config(), empty_checkpoint(), {}, {})
            _terminate(url, _lock_sessions(url))
            with hold(other, "t") as second:
                assert second.token > first.token
                mine = other.put(_pg_config(), empty_checkpoint(), {}, {})
                before = [c.config for c in other.list(_pg_config())]
                with pytest.raises(LeaseLost, match="thread t: another writer took over"):
                    stale.put(_pg_config(), empty_checkpoint(), {}, {})
                with pytest.raises(LeaseLost):
                    stale.put_writes(mine, [("messages", "stale")], "task-1")
                with pytest.raises(LeaseLost):
                    stale.delete_thread("t")
                assert [c.config for c in other.list(_pg_config())] == before
                assert other.get_tuple(mine).pending_writes == []
            with pytest.raises(LeaseLost):  # released: no lease row is this writer's either
                stale.put(_pg_config(), empty_checkpoint(), {}, {})
        assert [c.config for c in other.list(_pg_config())] == before


def test_a_postgres_cli_writer_whose_lease_session_died_exits_4_and_the_takeover_stays(
    postgres_url,
):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from tests.postgres import fresh_database

    db = fresh_database(postgres_url)
    thread_id = _pause(db)
    with _holding(db, thread_id, "engineers") as first:
        _terminate(db, _lock_sessions(db))
        second = _takeover(db, thread_id)
        after_b = _checkpoints(db, thread_id)
        out, err = first.communicate("go on\n", timeout=120)
    _assert_one_lease_lost_line(first, err, thread_id)
    _assert_the_takeover_is_intact(db, thread_id, after_b, "engineers")
    assert json.loads(second.stdout)["status"] == "success"


def test_a_writer_frozen_past_its_lease_that_nobody_took_finishes_its_run(threads_db):
    """The fence refuses a takeover, not a late writer: a lease that ran out while nobody
    took the thread still carries its token. On PostgreSQL a stopped process keeps its
    session, and so its lock: a second writer is busy however long the first is stopped."""
    thread_id = _pause(threads_db)
    with _holding(threads_db, thread_id, "engineers", ttl_s=TTL) as first:
        os.kill(first.pid, signal.SIGSTOP)
        _poll(lambda: _stopped(first.pid), "the first writer never stopped")
        time.sleep(TTL * 1.5)
        if threads_db.startswith("postgres"):
            busy = cli("resume", thread_id, db=threads_db, env_extra={TTL_ENV: str(TTL)})
            assert busy.returncode == 4 and " is busy: " in busy.stderr, busy.stderr
        os.kill(first.pid, signal.SIGCONT)
        out, err = first.communicate("go on\n", timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["status"] == "success"
    values, parents = _thread_state(threads_db, thread_id)
    humans = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    assert humans[1:] == ["engineers"] and values["status"] == "success"
    assert len(parents) == len(set(parents))
