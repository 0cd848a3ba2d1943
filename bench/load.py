"""Load: many threads at once, from several processes, against ONE SQLite database.

    python bench/load.py [--processes 4] [--threads 25] [--concurrency 25] [--db PATH]
                         [--conn-per-thread] [--json]

Each process opens the database with ``agent.runs.runner.open_checkpointer`` (WAL, busy timeout
30 s) at the same moment, then runs ``--threads`` deepreflect threads, ``--concurrency`` at
once, on scripted models. Every thread runs a 3-step plan (two parallel steps, then one that
depends on both) whose artifacts embed the thread id. Afterwards the parent reopens the
database and checks every thread: status ``success``, its three artifacts done, each
carrying its own id and no other (no lost and no mixed-up artifacts). It prints throughput
(threads/s over the wall time from the common start to the last finish), per-thread latency
p50/p95/max, and every error by type with its count. Exit code 1 if anything was lost,
mixed up or failed.

By default the workers open a fresh database at the same moment, which exercises the race of
a first open; ``--precreate`` opens it once beforehand, to measure only the runs.

``--conn-per-thread`` gives every thread its own connection (more SQLite writers) instead of
one shared checkpointer per process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import END, machine
from langchain_core.messages import BaseMessage, ToolMessage

from agent import Context, ScriptedChatModel, build_graph, open_checkpointer, run
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config

PLAN = [
    {
        "step_id": "S1",
        "depends_on": [],
        "action": "researcher",
        "instructions": "Collect notes.",
        "expected_output": "notes.md",
        "done_when": {"kind": "contains", "all": ["thread="]},
    },
    {
        "step_id": "S2",
        "depends_on": [],
        "action": "coder",
        "instructions": "Write the data.",
        "expected_output": "data.json",
        "done_when": {"kind": "json_schema", "schema": {"required": ["thread"]}},
    },
    {
        "step_id": "S3",
        "depends_on": ["S1", "S2"],
        "action": "writer",
        "instructions": "Write the report.",
        "expected_output": "report.md",
        "done_when": {"kind": "regex", "pattern": "^thread=\\S+$"},
    },
]
OUTPUTS = {s["step_id"]: s["expected_output"] for s in PLAN}
CONTEXT = Context(model="scripted:happy", token_budget=10**9, max_steps=100)
_THREAD = re.compile(r"thread=([\w.-]+)")


# ---------------------------------------------------------------------------- worker


def _write(messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
    """A stateless subagent: writes its step's artifact, tagged with the thread id."""
    if isinstance(messages[-1], ToolMessage):
        return "written"
    prompt = "\n".join(str(m.content) for m in messages if m.type == "human")
    thread_id = _THREAD.search(prompt).group(1)  # from "Goal of the whole run: ..."
    step_id = metadata["step_id"]
    path = OUTPUTS[step_id]
    if path.endswith(".json"):
        body = json.dumps({"thread": f"thread={thread_id}", "step": step_id})
    else:
        body = f"thread={thread_id}\nstep {step_id}: " + "lorem ipsum " * 40
    return tool_call("write_file", path=path, content=body)


def roles() -> dict[str, Any]:
    return {
        "planner": ScriptedChatModel(responder=lambda m: {"steps": PLAN}),
        "reflection": ScriptedChatModel(responder=lambda m: END),
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=_write),
    }


def worker(args: argparse.Namespace) -> None:
    """One process: open the database when told to start, run its threads, report as JSON."""
    ids = [f"p{args.index}-t{j:03d}" for j in range(args.threads)]
    print("ready", flush=True)
    sys.stdin.readline()  # the parent releases every process at once
    opened = time.time()
    errors: list[dict[str, str]] = []
    latencies: dict[str, float] = {}
    starts: dict[str, float] = {}
    lock = threading.Lock()

    def one(thread_id: str, graph) -> None:
        starts[thread_id] = time.time()
        started = time.perf_counter()
        goal = f"load test thread={thread_id}"
        try:
            if graph is None:
                with open_checkpointer(args.db) as saver:
                    own = build_graph(models=roles(), checkpointer=saver)
                    result = run(own, goal, thread_id=thread_id, context=CONTEXT)
            else:
                result = run(graph, goal, thread_id=thread_id, context=CONTEXT)
            if result["status"] != "success":
                raise RuntimeError(f"status {result['status']}/{result['stop_reason']}")
            with lock:
                latencies[thread_id] = time.perf_counter() - started
        except Exception as exc:  # reported, never hidden
            with lock:
                errors.append(
                    {
                        "thread": thread_id,
                        "type": type(exc).__name__,
                        "message": str(exc)[:300],
                        "where": traceback.format_exc().strip().splitlines()[-3][:200],
                    }
                )

    try:
        if args.conn_per_thread:
            with ThreadPoolExecutor(args.concurrency) as pool:
                list(pool.map(lambda t: one(t, None), ids))
        else:
            with open_checkpointer(args.db) as saver:
                graph = build_graph(models=roles(), checkpointer=saver)
                with ThreadPoolExecutor(args.concurrency) as pool:
                    list(pool.map(lambda t: one(t, graph), ids))
    except Exception as exc:  # opening the database itself failed
        errors.append(
            {"thread": "*", "type": type(exc).__name__, "message": str(exc)[:300], "where": "open"}
        )
    report = {
        "index": args.index,
        "opened": opened,
        "starts": starts,
        "ended": time.time(),
        "latencies": latencies,
        "errors": errors,
    }
    print("result " + json.dumps(report), flush=True)


# ---------------------------------------------------------------------------- parent


def verify(db: str, expected: list[str]) -> dict[str, Any]:
    """Every thread: success, its three artifacts done, each carrying its own id only."""
    lost: list[str] = []
    mixed: list[str] = []
    failed: list[str] = []
    with open_checkpointer(db) as saver:
        graph = build_graph(models=roles(), checkpointer=saver)
        stored = {item.config["configurable"]["thread_id"] for item in saver.list(None)}
        for thread_id in expected:
            values = graph.get_state(thread_config(thread_id)).values
            if not values:
                lost.append(thread_id)
                continue
            if values.get("status") != "success":
                failed.append(f"{thread_id}: {values.get('status')}/{values.get('stop_reason')}")
            files = values.get("files") or {}
            for path in OUTPUTS.values():
                entry = files.get(path)
                if not entry or entry.get("status") != "done":
                    lost.append(f"{thread_id}:{path}")
                elif _THREAD.findall(entry["content"]) != [thread_id]:
                    mixed.append(f"{thread_id}:{path} holds {_THREAD.findall(entry['content'])}")
    return {
        "threads_in_db": len(stored),
        "unexpected_threads": sorted(stored - set(expected)),
        "lost": lost,
        "mixed": mixed,
        "failed": failed,
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=25, help="threads per process")
    parser.add_argument("--concurrency", type=int, default=25, help="threads at once, per process")
    parser.add_argument(
        "--db", help="SQLite file or postgresql:// URL (default: a fresh temporary SQLite file)"
    )
    parser.add_argument("--conn-per-thread", action="store_true")
    parser.add_argument(
        "--precreate",
        action="store_true",
        help="open the database once before the workers start (skips the first-open race)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0

    db = args.db or str(Path(tempfile.mkdtemp(prefix="deepreflect-load-")) / "threads.sqlite")
    if args.precreate:
        with open_checkpointer(db):
            pass
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--db", db]
    command += ["--threads", str(args.threads), "--concurrency", str(args.concurrency)]
    command += ["--conn-per-thread"] if args.conn_per_thread else []
    procs = [
        subprocess.Popen(
            [*command, "--index", str(i)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(args.processes)
    ]
    for proc in procs:  # every process has imported everything and waits
        line = proc.stdout.readline()
        if line.strip() != "ready":
            sys.stderr.write(f"a worker failed to start: {line}{proc.stderr.read()[-2000:]}\n")
            return 1
    released = time.time()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports, crashed = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=args.timeout)
        lines = [ln for ln in out.splitlines() if ln.startswith("result ")]
        if proc.returncode != 0 or not lines:
            crashed.append(f"exit {proc.returncode}: {err.strip()[-1000:]}")
        else:
            reports.append(json.loads(lines[-1][len("result ") :]))
    finished = max((r["ended"] for r in reports), default=time.time())
    wall = finished - released

    expected = [f"p{i}-t{j:03d}" for i in range(args.processes) for j in range(args.threads)]
    check = verify(db, expected)
    latencies = [v for r in reports for v in r["latencies"].values()]
    errors = [e for r in reports for e in r["errors"]]
    by_error = Counter(f"{e['type']}: {e['message']}" for e in errors)
    succeeded = len(latencies)
    summary = {
        "machine": machine(),
        "processes": args.processes,
        "threads_per_process": args.threads,
        "concurrency_per_process": args.concurrency,
        "connection": "per thread" if args.conn_per_thread else "one per process",
        "database": "created before the workers" if args.precreate or args.db else "fresh",
        "threads": len(expected),
        "succeeded": succeeded,
        "errors": len(errors),
        "error_kinds": dict(by_error),
        "crashed_processes": crashed,
        "wall_s": round(wall, 3),
        "throughput_threads_per_s": round(succeeded / wall, 2) if wall > 0 else None,
        "latency_ms": {
            "p50": round(percentile(latencies, 0.50) * 1000, 1),
            "p95": round(percentile(latencies, 0.95) * 1000, 1),
            "max": round(max(latencies, default=float("nan")) * 1000, 1),
            "mean": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
        },
        "verify": {k: (v if isinstance(v, int) else v[:20]) for k, v in check.items()},
        "lost": len(check["lost"]),
        "mixed": len(check["mixed"]),
        "failed": len(check["failed"]),
        "db": db,
        "command": " ".join(["python", "bench/load.py", *sys.argv[1:]]),
    }
    ok = (
        not errors
        and not crashed
        and succeeded == len(expected)
        and not (check["lost"] or check["mixed"] or check["failed"])
        and not check["unexpected_threads"]
        and check["threads_in_db"] == len(expected)
    )
    summary["ok"] = ok
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        lat = summary["latency_ms"]
        backend = "PostgreSQL database" if db.startswith("postgres") else "SQLite file"
        print(f"\nLoad on one {backend}  ({summary['machine']})")
        print(f"  {summary['command']}")
        print(
            f"  {args.processes} processes x {args.threads} threads "
            f"({args.concurrency} at once per process, connection {summary['connection']}, "
            f"database {summary['database']}), 3-step plan each"
        )
        print(f"  threads: {succeeded}/{len(expected)} succeeded in {wall:.2f} s wall")
        print(f"  throughput: {summary['throughput_threads_per_s']} threads/s")
        print(
            f"  latency per thread: p50 {lat['p50']} ms, p95 {lat['p95']} ms, max {lat['max']} ms"
        )
        print(
            f"  verified: {check['threads_in_db']} threads in the database; "
            f"lost {len(check['lost'])}, mixed up {len(check['mixed'])}, "
            f"failed {len(check['failed'])}"
        )
        for kind, count in by_error.most_common():
            print(f"  error x{count}: {kind}")
        for line in crashed:
            print(f"  crashed process: {line}")
        print("  OK" if ok else "  NOT OK")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
