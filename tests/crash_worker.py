"""Run a three-step plan in this process; with CRASH=1 the third step kills the process.

Used by test_crash.py: S1 and S2 finish, S3 sends SIGKILL to its own process mid-step.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time

from langgraph.checkpoint.sqlite import SqliteSaver

from agent import ScriptedChatModel, build_graph
from agent.runs.runner import run
from tests.fakes import END, ctx, step, writer

PLAN = [step("S1", "a.md"), step("S2", "b.md"), step("S3", "c.md")]


def main(db: str, log: str) -> None:
    base = writer()

    def subagent(messages, metadata):
        is_s3 = metadata["step_id"] == "S3"
        with open(log, "a") as handle:
            handle.write(("S3" if is_s3 else "other") + "\n")
        if is_s3 and os.environ.get("CRASH") == "1":
            time.sleep(1.0)  # let S1 and S2 finish and their writes reach SQLite
            os.kill(os.getpid(), signal.SIGKILL)
        return base(messages, metadata)

    roles = {
        "planner": ScriptedChatModel([{"steps": PLAN}]),
        "reflection": ScriptedChatModel([END]),
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=subagent),
    }
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = build_graph(models=roles, checkpointer=saver)
    run(graph, "three files", thread_id="crash", context=ctx())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
