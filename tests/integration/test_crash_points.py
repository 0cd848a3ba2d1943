"""Crash safety: SIGKILL a run at seeded random points, resume it from SQLite, lose nothing.

Kill points fall inside a subagent (its k-th model call), inside a ``done_when`` check (the
k-th check) and inside reflection (the k-th reflection call); k is drawn from a seeded RNG so
CI is deterministic. After each kill the thread is resumed in this process with
``agent.resume(graph, thread_id, None)``: it must finish with ``success``, every artifact
that was finished before the kill must keep its sha256, and its step must not run or be
checked again. Artifact contents carry the writing process's pid and a nonce, so a
regenerated artifact can never keep its hash by accident.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from agent import resume, run
from agent.checks import registry as check_registry
from agent.runs.runner import thread_config
from tests import crash_points as cp
from tests.fakes import ctx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 20240611
PER_KIND = {"subagent": 5, "check": 4, "reflection": 3}  # 12 kill points
CONTEXT = {"model": "scripted:happy", "max_revisions": 0}


@pytest.fixture(autouse=True)
def _private_check_table(monkeypatch):
    monkeypatch.setattr(check_registry, "_CHECKS", dict(check_registry._CHECKS))


def kill_points(tmp_path, per_kind=PER_KIND, **extra) -> list[dict]:
    rng = random.Random(SEED)
    points = []
    for kind, n in per_kind.items():
        for k in sorted(rng.sample(range(1, cp.TOTALS[kind] + 1), n)):
            db = tmp_path / f"{kind}-{k}.sqlite"
            points.append({"kind": kind, "k": k, "db": str(db), **extra})
    return points


def kill_all(tmp_path, points: list[dict]) -> list[dict]:
    """Run every point in a forked child of one driver process; each must die by SIGKILL."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"points": points, "context": CONTEXT}))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crash_points", str(spec)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ended = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(e["kind"], e["k"]) for e in ended] == [(p["kind"], p["k"]) for p in points]
    for point in ended:
        assert point["signal"] == signal.SIGKILL, f"the child was not killed: {point}"
    return ended


def in_checkpoint(graph) -> dict[str, str]:
    """Done artifacts the checkpointer holds: the last checkpoint plus the pending writes of
    the tasks of the interrupted superstep that had finished."""
    snapshot = graph.get_state(thread_config(cp.THREAD))
    done = {
        path: entry["sha256"]
        for path, entry in (snapshot.values.get("files") or {}).items()
        if entry.get("status") == "done"
    }
    for task in snapshot.tasks:
        for path, entry in ((task.result or {}).get("files") or {}).items():
            if entry and entry.get("status") == "done":
                done[path] = entry["sha256"]
    return done


def on_disk(graph, conn) -> dict[str, str]:
    """Done artifacts in any ``files`` write row of the SQLite file, checkpointed or not."""
    serde = graph.checkpointer.serde
    done: dict[str, str] = {}
    for type_, value in conn.execute("SELECT type, value FROM writes WHERE channel = 'files'"):
        for path, entry in (serde.loads_typed((type_, value)) or {}).items():
            if entry and entry.get("status") == "done":
                done[path] = entry["sha256"]
    return done


def resume_and_check(point: dict, finished: dict[str, str]):
    """Resume the killed thread; assert success, and that ``finished`` was kept, not redone."""
    where = f"killed at {point['kind']} call {point['k']}"
    roles = cp.Roles()
    cp.register(roles)
    graph, conn = cp.open_graph(point["db"], roles)
    result = resume(graph, cp.THREAD, None)
    assert result["status"] == "success", f"{where}: {result}"
    statuses = {p: a["status"] for p, a in result["artifacts"].items()}
    assert statuses == dict.fromkeys(cp.STEP_OF, "done"), where
    after = graph.get_state(thread_config(cp.THREAD)).values["files"]
    for path, sha in sorted(finished.items()):
        step_id = cp.STEP_OF[path]
        assert roles.calls["subagent"].get(step_id, 0) == 0, f"{where}: {step_id} ran again"
        assert roles.calls["check"].get(step_id, 0) == 0, f"{where}: {step_id} checked again"
        assert after[path]["sha256"] == sha, f"{where}: {path} was replaced"
    conn.close()
    return roles, after


def test_an_uninterrupted_run_makes_the_calls_the_kill_points_are_drawn_from(tmp_path):
    roles = cp.Roles()
    cp.register(roles)
    graph, _ = cp.open_graph(str(tmp_path / "base.sqlite"), roles)
    result = run(graph, "four files", thread_id=cp.THREAD, context=ctx(**CONTEXT))
    assert result["status"] == "success"
    assert {kind: sum(calls.values()) for kind, calls in roles.calls.items()} == cp.TOTALS
    assert roles.calls["check"] == {"S1": 1, "S2": 2, "S3": 1, "S4": 2}


def test_killed_at_seeded_random_points_then_resumed_keeps_every_checkpointed_artifact(
    tmp_path,
):
    started = time.monotonic()
    points = kill_all(tmp_path, kill_points(tmp_path))
    survived = kept = orphaned = 0
    for point in points:
        roles = cp.Roles()
        cp.register(roles)
        graph, conn = cp.open_graph(point["db"], roles)
        finished = in_checkpoint(graph)
        saved = on_disk(graph, conn)
        conn.close()

        roles, after = resume_and_check(point, finished)

        # Only the steps not finished before the kill ran again.
        ran = set(roles.calls["subagent"]) | set(roles.calls["check"])
        assert ran == {cp.STEP_OF[p] for p in cp.STEP_OF if p not in finished}, point
        survived += 1
        kept += len(finished)
        # Saved in a write row of a checkpoint that never reached the disk would be redone.
        orphaned += sum(after[p]["sha256"] != sha for p, sha in saved.items())

    print(
        f"\ncrash points: {survived}/{len(points)} kill points survived (seed {SEED}); "
        f"{kept} checkpointed artifacts kept unchanged; {orphaned} artifacts whose writes were "
        f"on disk but whose checkpoint was not were regenerated; "
        f"{time.monotonic() - started:.1f} s"
    )
    assert survived == len(points) == 12
    assert orphaned == 0  # durability="sync": a finished superstep is on disk before the next


def test_steps_finished_before_a_kill_are_not_regenerated_with_a_slow_checkpointer(tmp_path):
    # Checkpoint saves take 0.1 s (a slow disk, a remote database); every step below had
    # passed its check and returned before reflection was killed.
    points = kill_points(tmp_path, {"reflection": 2}, put_delay=0.1)
    for n, point in enumerate(points):
        point["log"] = str(tmp_path / f"finished-{n}.log")
    for point in kill_all(tmp_path, points):
        lines = open(point["log"]).read().split("\n")
        finished = {cp.OUTPUTS[s]: sha for s, sha in (ln.split() for ln in lines if ln)}
        assert len(finished) >= 3  # S1, S2 and S3 were done before the second reflection
        resume_and_check(point, finished)
