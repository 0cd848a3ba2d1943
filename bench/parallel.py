"""Parallel steps against the critical path, under ``invoke`` and ``ainvoke``.

    python bench/parallel.py [--latency 0.5] [--sizes 4 8 16]

N independent steps with max_parallel=N; every model call (planner, each subagent call,
reflection) waits ``latency`` seconds like a remote model. The critical path is the calls one
after another on the longest chain: the planner's, one step's and reflection's, times the
latency. Wall ÷ critical path near 1.0 means the steps really ran at once; the target of
issue 10 is ≤ 1.15 for 8 and 16 steps.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from common import END, machine, writer
from langgraph.checkpoint.memory import InMemorySaver

from agent import Context, ScriptedChatModel, build_graph


def independent(n: int) -> list[dict[str, Any]]:
    return [
        {
            "step_id": f"S{i}",
            "depends_on": [],
            "action": "writer",
            "instructions": f"Write part {i}.",
            "expected_output": f"out/part{i:03d}.md",
            "done_when": {"kind": "non_empty"},
        }
        for i in range(1, n + 1)
    ]


def one_run(n: int, latency: float, mode: str) -> tuple[float, float]:
    """Wall seconds of one run and its critical path."""
    planner = ScriptedChatModel([{"steps": independent(n)}], latency_s=latency)
    reflection = ScriptedChatModel([END], latency_s=latency)
    subagent = ScriptedChatModel(responder=writer(200), latency_s=latency)
    graph = build_graph(
        models={"planner": planner, "reflection": reflection, "default": subagent},
        checkpointer=InMemorySaver(),
        retry_policy=None,
    )
    config: Any = {"configurable": {"thread_id": f"{mode}-{n}"}}
    payload = {"messages": [("user", f"{n} parts")]}
    ctx = Context(model="scripted:happy", max_parallel=n, token_budget=10**9)
    started = time.perf_counter()
    if mode == "invoke":
        out = graph.invoke(payload, config, context=ctx)
    else:
        out = asyncio.run(graph.ainvoke(payload, config, context=ctx))
    wall = time.perf_counter() - started
    assert out["status"] == "success", out.get("stop_reason")
    per_step = len(subagent.calls) // n
    critical = (len(planner.calls) + per_step + len(reflection.calls)) * latency
    return wall, critical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    args = parser.parse_args()
    print(machine())
    print(f"model latency {args.latency} s per call; max_parallel = steps\n")
    print(f"{'steps':>5}  {'mode':<8} {'wall s':>7} {'critical s':>10} {'ratio':>6}")
    for n in args.sizes:
        for mode in ("invoke", "ainvoke"):
            wall, critical = one_run(n, args.latency, mode)
            print(f"{n:>5}  {mode:<8} {wall:>7.2f} {critical:>10.2f} {wall / critical:>6.2f}")


if __name__ == "__main__":
    main()
