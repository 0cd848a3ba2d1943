"""Framework overhead per round: deepreflect against a bare LangGraph loop doing the same steps.

    python bench/overhead.py [--steps 30] [--repeat 3]

Both run planner -> worker -> reflection once per plan step on the same SQLite checkpointer;
the bare loop does nothing but write the same file into a dict channel, so the difference is
what deepreflect adds: validation, scripted model calls, the VFS tools, checks, the rules.
"""

from __future__ import annotations

import argparse
import operator
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from common import CONTEXT, END, chain, report, roles, sqlite_graph
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END as GRAPH_END
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from agent import run


class BareState(TypedDict, total=False):
    files: Annotated[dict[str, str], operator.or_]
    round: int
    steps: int


def bare_graph():
    def planner(state: BareState) -> dict[str, Any]:
        return {"round": state.get("round", 0) + 1}

    def worker(state: BareState) -> dict[str, Any]:
        path = f"out/part{state['round']:03d}.md"
        return {"files": {path: (path + "\n").ljust(1000, "x")}}

    def reflection(state: BareState) -> dict[str, Any]:
        return {}

    def route(state: BareState) -> str:
        return "planner" if state["round"] < state["steps"] else GRAPH_END

    builder = StateGraph(BareState)
    builder.add_node("planner", planner)
    builder.add_node("worker", worker)
    builder.add_node("reflection", reflection)
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "worker")
    builder.add_edge("worker", "reflection")
    builder.add_conditional_edges("reflection", route, ["planner", GRAPH_END])
    conn = sqlite3.connect(str(Path(tempfile.mkdtemp()) / "bare.sqlite"), check_same_thread=False)
    return builder.compile(checkpointer=SqliteSaver(conn))


Timing = tuple[float, float]  # wall seconds, CPU seconds (every thread of the process)


def time_bare(steps: int) -> Timing:
    graph = bare_graph()
    started, cpu = time.perf_counter(), time.process_time()
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 10_000}
    graph.invoke({"steps": steps, "files": {}}, config, durability="sync")  # as run() does
    return time.perf_counter() - started, time.process_time() - cpu


def time_deepreflect(steps: int) -> Timing:
    graph, _ = sqlite_graph(roles(chain(steps), 1000, [END]))
    started, cpu = time.perf_counter(), time.process_time()
    result = run(graph, "write the parts", context=CONTEXT, thread_id="bench")
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    assert result["status"] == "success", result
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    time_bare(3), time_deepreflect(3)  # warm imports and caches
    ours: list[Timing] = []
    bare: list[Timing] = []
    for _ in range(args.repeat):  # interleaved, so a busy moment hits both alike
        ours.append(time_deepreflect(args.steps))
        bare.append(time_bare(args.steps))
    rows = []
    for label, index in (("wall", 0), ("CPU", 1)):
        per_ours = statistics.median(t[index] for t in ours) / args.steps * 1000
        per_bare = statistics.median(t[index] for t in bare) / args.steps * 1000
        rows.append(
            [
                label,
                f"{per_ours:.2f}",
                f"{per_bare:.2f}",
                f"{per_ours / per_bare:.1f}x",
                f"{per_ours - per_bare:.2f}",
            ]
        )
    report(
        f"Time per round, {args.steps} rounds, median of {args.repeat}",
        rows,
        ["", "deepreflect ms", "bare LangGraph ms", "ratio", "added ms"],
    )


if __name__ == "__main__":
    main()
