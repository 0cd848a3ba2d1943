"""Kill a run at chosen points, then resume it: the plan, the roles and a forking driver.

Shared by ``tests/test_crash_points.py`` (which resumes in-process and counts calls) and by
``python -m tests.crash_points SPEC.json`` (the driver). The driver imports the stack once and
forks one child per kill point; each child runs the plan on its own SQLite file and sends
itself SIGKILL at the k-th call of one kind: a subagent model call, a reflection model call or
a ``done_when`` check. Forking keeps 12 kill points inside a few seconds instead of paying the
interpreter's import time per point.

Every role answers from its call alone (its metadata and data, never a prompt's wording), so
the process that resumes a killed thread gets the same answers; artifact contents carry the
writing process's pid and a random nonce, so a regenerated artifact never has the hash of the
one it replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import ScriptedChatModel, build_graph
from agent.checks import register_check
from agent.models.scripted import prompt_json, tool_call
from agent.runs.runner import run

CHECK_KIND = "crashpoint"
CATEGORIES = ("subagent", "check", "reflection")
THREAD = "crash-points"
FLAKY = ("S2", "S4")  # their first draft fails the check, so reflection is consulted
END = {"decision": "end", "reason": "all done", "final_answer": "Done: see the artifacts."}


def _step(step_id: str, output: str, deps: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "depends_on": list(deps),
        "action": "writer",
        "instructions": f"Write {output}.",
        "expected_output": output,
        "done_when": {"kind": CHECK_KIND},
    }


# S1 and S2 run in parallel, then S3, then S4.
PLAN = [
    _step("S1", "a.md"),
    _step("S2", "b.md"),
    _step("S3", "c.md", ("S1", "S2")),
    _step("S4", "d.md", ("S3",)),
]
OUTPUTS = {s["step_id"]: s["expected_output"] for s in PLAN}
STEP_OF = {s["expected_output"]: s["step_id"] for s in PLAN}
# Calls of each kind in an uninterrupted run (asserted by the test's baseline run):
# subagent: 6 drafts x (write + final line); checks: 6 drafts; reflection: 3.
TOTALS = {"subagent": 12, "check": 6, "reflection": 3}


class Roles:
    """The scripted roles plus per-step call counters; ``hook(kind, key)`` runs before each."""

    def __init__(
        self, hook: Callable[[str, str], None] | None = None, log: str | None = None
    ) -> None:
        self.hook = hook or (lambda kind, key: None)
        self.log = log
        self.lock = threading.Lock()
        self.calls: dict[str, dict[str, int]] = {kind: {} for kind in CATEGORIES}
        self.models = {
            "planner": ScriptedChatModel(responder=lambda m: {"steps": PLAN}),
            "reflection": ScriptedChatModel(responder=self.reflect),
            "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
            "default": ScriptedChatModel(responder=self.write),
        }

    def count(self, kind: str, key: str) -> None:
        with self.lock:
            self.calls[kind][key] = self.calls[kind].get(key, 0) + 1
        self.hook(kind, key)

    def write(self, messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
        step_id = metadata["step_id"]
        self.count("subagent", step_id)
        if isinstance(messages[-1], ToolMessage):
            return "written"
        path = OUTPUTS[step_id]
        # The step's own earlier draft is listed among its inputs only on a second attempt.
        second_attempt = path in metadata["inputs"]
        verdict = "BAD" if step_id in FLAKY and not second_attempt else "GOOD"
        body = f"{path} {verdict} pid={os.getpid()} nonce={uuid.uuid4().hex}\n"
        return tool_call("write_file", path=path, content=body)

    def reflect(self, messages: list[BaseMessage]) -> Any:
        situation = prompt_json(messages)
        self.count("reflection", str(situation.get("step")))
        if all(s["done"] for s in situation["plan"]["steps"]):
            return END
        if situation["ready_steps"]:
            return {"decision": "continue", "reason": "retry the failed step"}
        return {"decision": "replan", "reason": "nothing is ready"}

    def check(self, spec: dict[str, Any], files: Any, path: str) -> dict[str, Any]:
        self.count("check", STEP_OF.get(path, path))
        good = "GOOD" in files[path]
        if good and self.log:  # what this process finished, for the durability test
            sha = hashlib.sha256(files[path].encode()).hexdigest()
            with open(self.log, "a") as handle:
                handle.write(f"{STEP_OF.get(path, path)} {sha}\n")
        evidence = f"{path} is {'GOOD' if good else 'BAD'}"
        return {"kind": CHECK_KIND, "passed": good, "score": float(good), "evidence": evidence}


def register(roles: Roles) -> None:
    """Route the ``crashpoint`` check kind to ``roles`` (re-registering replaces it)."""
    register_check(CHECK_KIND, roles.check)


class SlowSaver(SqliteSaver):
    """A checkpointer whose checkpoint saves take ``delay`` seconds, like a slow disk or a
    remote database: LangGraph's default ``async`` durability saves in the background, so a
    fast graph runs ahead of what is on disk."""

    delay = 0.0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().put(*args, **kwargs)


def open_graph(db: str, roles: Roles, put_delay: float = 0.0):
    conn = sqlite3.connect(db, check_same_thread=False, timeout=30)
    saver = SlowSaver(conn) if put_delay else SqliteSaver(conn)
    if isinstance(saver, SlowSaver):
        saver.delay = put_delay
    saver.setup()
    return build_graph(models=roles.models, checkpointer=saver), conn


def killer(kind: str, k: int) -> Callable[[str, str], None]:
    """A hook that SIGKILLs this process at the k-th call of ``kind``."""
    seen = {"n": 0}
    lock = threading.Lock()

    def hook(call_kind: str, key: str) -> None:
        if call_kind != kind:
            return
        with lock:
            seen["n"] += 1
            if seen["n"] == k:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def child(point: dict[str, Any], context: dict[str, Any]) -> None:
    from agent import Context

    roles = Roles(killer(point["kind"], point["k"]), log=point.get("log"))
    register(roles)
    graph, _ = open_graph(point["db"], roles, put_delay=point.get("put_delay", 0.0))
    run(graph, "four files", thread_id=THREAD, context=Context(**context))


def main(spec_path: str) -> None:
    """Fork one child per kill point; print one JSON line per point: how the child ended."""
    with open(spec_path) as handle:
        spec = json.load(handle)
    for point in spec["points"]:
        pid = os.fork()
        if pid == 0:  # the child: run until the kill point; exit 0 if it never came
            code = 0
            try:
                child(point, spec["context"])
            except BaseException as exc:  # reported to the parent on stderr
                sys.stderr.write(f"child failed: {type(exc).__name__}: {exc}\n")
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        signalled = os.WIFSIGNALED(status)
        ended = {
            **point,
            "signal": os.WTERMSIG(status) if signalled else None,
            "exit": None if signalled else os.WEXITSTATUS(status),
        }
        print(json.dumps(ended), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
