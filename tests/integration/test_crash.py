"""A process killed mid-run loses nothing: resuming finishes without regenerating work."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

from langgraph.checkpoint.sqlite import SqliteSaver

from agent import ScriptedChatModel, build_graph, resume
from agent.runs.runner import thread_config
from tests.fakes import END, ctx, writer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_killed_mid_step_then_resumed_keeps_finished_artifacts(tmp_path):
    db, log = tmp_path / "threads.sqlite", tmp_path / "calls.log"
    env = {**os.environ, "CRASH": "1", "PYTHONPATH": ROOT}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crash_worker", str(db), str(log)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]

    calls = []

    def subagent(messages, metadata):
        calls.append(metadata["step_id"])
        return writer()(messages, metadata)

    roles = {
        "planner": ScriptedChatModel([]),  # must not be asked again
        "reflection": ScriptedChatModel([END]),
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=subagent),
    }
    conn = sqlite3.connect(str(db), check_same_thread=False)
    graph = build_graph(models=roles, checkpointer=SqliteSaver(conn))
    before = graph.get_state(thread_config("crash"))
    # The interrupted superstep is still pending: S3 never saved a result.
    assert "subagent" in before.next
    assert sum(task.result is None for task in before.tasks) == 1

    result = resume(graph, "crash", None, context=ctx())
    assert result["status"] == "success"
    assert {p: a["status"] for p, a in result["artifacts"].items()} == {
        "a.md": "done",
        "b.md": "done",
        "c.md": "done",
    }
    # Only the killed step ran again; S1 and S2 were kept from their saved writes.
    assert len(calls) == 2 and all(step_id == "S3" for step_id in calls)
    assert roles["planner"].calls == []
