"""deepreflect, LangChain's deepagents and a bare LangGraph loop on the same workloads.

    python bench/peers.py [--quick]        # the bench extra installs deepagents

Every system runs on fake models (no network, no key) and a fresh ``SqliteSaver`` with sync
durability; each table gives deepreflect's figure next to both peers' and the ratios:
1. bytes stored per content byte as a chain of N steps writes N 10 KB files (the main db after
   ``PRAGMA wal_checkpoint(TRUNCATE)``, the WAL before it): ``bench/storage.py``'s measure;
2. wall and CPU time per step of a 30-step chain of 1 KB files, as ``bench/overhead.py``;
3. the characters the top-level model is sent (message text and tool-call arguments; the
   tool and output schemas bound to it counted apart) as 10 files grow from 1 KB to 100 KB;
4. wall ÷ critical path for 4 and 8 independent steps and a diamond (a -> b, c -> d), every
   model call waiting 0.5 s, as ``bench/parallel.py``: the critical path is the top-level
   calls plus, per level of the plan, one step's calls, times the latency.

The systems do not do the same work per step, and the tables say so: deepreflect plans once,
runs each step in a subagent (a write_file call, then a reply), checks its artifact and lets
its rules (or its reflection model) decide; deepagents' main model calls write_file itself, one
call per file, or hands each step to a general-purpose subagent through ``task``; the bare loop
has no top-level model at all: code picks the ready steps, one model call per step writes its
file into ``files`` (a ``DeltaChannel``), and nothing else is stored.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from common import CONTEXT, END, chain, report, roles, sqlite_graph, sqlite_sizes, writer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.ephemeral_value import EphemeralValue
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END as GRAPH_END
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from overhead import Timing, time_deepreflect
from parallel import independent
from storage import sqlite_run
from typing_extensions import TypedDict

from agent import ScriptedChatModel, run
from agent.graph.build import MAX_CONCURRENCY, RECURSION_LIMIT
from agent.models.scripted import tool_call
from agent.reducers import by_path

try:
    from deepagents import create_deep_agent
except ImportError as exc:  # the bench extra is not installed
    create_deep_agent = None
    DEEPAGENTS_MISSING = f"{exc}; pip install -e '.[bench]'"
else:
    DEEPAGENTS_MISSING = ""

Plan = list[dict[str, Any]]
NA = "n/a"


# --- pure helpers -------------------------------------------------------------------------


def levels(plan: Plan) -> list[Plan]:
    """The plan's steps in the order they can run: each level depends only on earlier ones."""
    done: set[str] = set()
    out: list[Plan] = []
    while len(done) < len(plan):
        level = [s for s in plan if s["step_id"] not in done and set(s["depends_on"]) <= done]
        if not level:
            msg = f"plan has a cycle among {sorted({s['step_id'] for s in plan} - done)}"
            raise ValueError(msg)
        out.append(level)
        done |= {s["step_id"] for s in level}
    return out


def diamond() -> Plan:
    """a -> b, c -> d: four steps on three levels."""
    steps = independent(4)
    for step, deps in zip(steps, ([], ["S1"], ["S1"], ["S2", "S3"]), strict=True):
        step["depends_on"] = deps
    return steps


def prompt_chars(messages: Sequence[BaseMessage]) -> int:
    """What a provider is sent for ``messages``: their text and their tool calls' arguments."""
    total = 0
    for message in messages:
        total += len(message.text if isinstance(message.content, list) else str(message.content))
        for call in getattr(message, "tool_calls", None) or []:
            total += len(call["name"]) + len(json.dumps(call["args"]))
    return total


def critical_path(latency: float, top_calls: int, step_calls: float, depth: int) -> float:
    """Seconds of model calls one after another: the top-level calls and, on each of the
    plan's ``depth`` levels, one step's calls."""
    return latency * (top_calls + depth * step_calls)


def ratio(ours: float | None, theirs: float | None, digits: int = 2) -> str:
    """``ours / theirs`` as ``1.23x``, or n/a when either is missing or theirs is zero."""
    if ours is None or not theirs:
        return NA
    return f"{ours / theirs:.{digits}f}x"


def cell(value: float | None, fmt: str = "{:.2f}") -> str:
    return NA if value is None else fmt.format(value)


def each(values: Iterable[float | None], fmt: str = "{:.2f}") -> str:
    """One figure per system in one column: deepreflect/deepagents/bare."""
    return "/".join(cell(value, fmt) for value in values)


# --- fake models ----------------------------------------------------------------------------


class Recorder(ScriptedChatModel):
    """A scripted model that also keeps the size of the tool and output schemas bound to it
    (``ScriptedChatModel`` ignores them; a real provider sends them with every call)."""

    schema_chars: int = 0
    tool_names: list[str] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        schemas = [convert_to_openai_tool(t) for t in tools]
        self.tool_names = sorted(s["function"]["name"] for s in schemas)
        self.schema_chars = max(self.schema_chars, len(json.dumps(schemas)))
        return super().bind_tools(tools, **kwargs)

    def with_structured_output(self, schema: Any, *, include_raw: bool = False, **kwargs: Any):
        shown = schema.model_json_schema() if hasattr(schema, "model_json_schema") else schema
        self.schema_chars = max(self.schema_chars, len(json.dumps(shown)))
        return super().with_structured_output(schema, include_raw=include_raw, **kwargs)


def content(path: str, size: int) -> str:
    return (path + "\n").ljust(size, "x")  # as common.writer writes


def author(n: int, size: int) -> Callable:
    """deepagents' main model writing n files itself, one write_file per call, then done. It
    counts its own calls: deepagents summarizes a long history (a call tagged
    ``lc_source=summarization``, answered with a short summary) and the messages no longer
    show how many files were written."""
    written = itertools.count(1)

    def respond(messages, metadata):
        if metadata.get("lc_source") == "summarization":
            return "Summary: the parts so far are written."
        i = next(written)
        if i > n:
            return "Done."
        path = f"/out/part{i:03d}.md"
        return tool_call("write_file", file_path=path, content=content(path, size))

    return respond


def delegator(plan: Plan) -> Callable:
    """deepagents' main model handing each level of the plan to subagents, one ``task`` call
    per step, all of a level in one message."""
    plan_levels = levels(plan)

    def respond(messages):
        done = sum(isinstance(m, AIMessage) for m in messages)
        if done >= len(plan_levels):
            return "Done."
        calls = [
            {
                "name": "task",
                "args": {"description": s["expected_output"], "subagent_type": "general-purpose"},
            }
            for s in plan_levels[done]
        ]
        return {"tool_calls": calls}

    return respond


def task_writer(size: int) -> Callable:
    """deepagents' subagent: writes the file its task names, then replies."""

    def respond(messages):
        if isinstance(messages[-1], ToolMessage):
            return "written"
        path = "/" + str(messages[-1].content)
        return tool_call("write_file", file_path=path, content=content(path, size))

    return respond


# --- the peers' graphs ----------------------------------------------------------------------


class BareState(TypedDict, total=False):
    files: Annotated[dict[str, str], DeltaChannel(by_path)]


def bare_graph(plan: Plan, model: ScriptedChatModel, checkpointer: Any):
    """The bare loop: code sends every ready step (its dependencies' files written) to one
    model call, whose write_file lands in ``files``; the plan lives in the code, not in state."""
    outputs = {s["step_id"]: s["expected_output"] for s in plan}

    def ready(state: BareState) -> list[Send] | str:
        files = state.get("files") or {}
        todo = [
            s
            for s in plan
            if s["expected_output"] not in files
            and all(outputs[d] in files for d in s["depends_on"])
        ]
        return [Send("step", s) for s in todo] or GRAPH_END

    def step(s: dict[str, Any]) -> dict[str, Any]:
        meta = {"expected_output": s["expected_output"]}
        answer = model.invoke([HumanMessage(s["instructions"])], config={"metadata": meta})
        args = answer.tool_calls[0]["args"]
        return {"files": {args["path"]: args["content"]}}

    builder = StateGraph(BareState)
    builder.add_node("step", step)
    builder.add_node("join", lambda state: {})
    builder.add_conditional_edges(START, ready, ["step", GRAPH_END])
    builder.add_edge("step", "join")
    builder.add_conditional_edges("join", ready, ["step", GRAPH_END])
    return builder.compile(checkpointer=checkpointer)


def deepagents_graph(main: ScriptedChatModel, checkpointer: Any, sub: Any = None):
    assert create_deep_agent is not None, DEEPAGENTS_MISSING
    subagents: Any = None
    if sub is not None:
        subagents = [{"name": "general-purpose", "description": "Writes one file.", "model": sub}]
    return create_deep_agent(model=main, checkpointer=checkpointer, subagents=subagents)


def invoke(graph: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """A run as ``agent.run`` makes one: sync durability, deepreflect's recursion limit and
    thread pool (LangGraph's default pool, CPUs + 4 threads, would hold 8 parallel steps to
    6 at a time on this machine)."""
    config: Any = {
        "configurable": {"thread_id": "bench"},
        "recursion_limit": RECURSION_LIMIT,
        "max_concurrency": MAX_CONCURRENCY,
    }
    return graph.invoke(payload, config, durability="sync")


def goal() -> dict[str, Any]:
    return {"messages": [("user", "write the parts")]}


@contextmanager
def sqlite_saver() -> Iterator[tuple[SqliteSaver, Path]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "threads.sqlite"
        conn = sqlite3.connect(str(path), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        try:
            yield saver, path
        finally:
            conn.close()


def timed(work: Callable[[], Any]) -> Timing:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


# --- 1. storage ---------------------------------------------------------------------------


def storage_peer(system: str, n: int, size: int) -> dict[str, int] | None:
    if system == "deepreflect":
        return sqlite_run(n, size)
    if system == "deepagents" and create_deep_agent is None:
        return None
    with sqlite_saver() as (saver, path):
        if system == "deepagents":
            invoke(deepagents_graph(ScriptedChatModel(responder=author(n, size)), saver), goal())
        else:
            model = ScriptedChatModel(responder=writer(size))
            invoke(bare_graph(chain(n), model, saver), {"files": {}})
        return sqlite_sizes(saver.conn, path)


# --- 2. time per step -----------------------------------------------------------------------


def deepreflect_calls(steps: int) -> float:
    """deepreflect's model calls per step (planner, subagents, reflection) on the chain."""
    models = roles(chain(steps), 1000, [END])
    graph, _ = sqlite_graph(models)
    run(graph, "write the parts", context=CONTEXT, thread_id="bench")
    return sum(len(m.calls) for m in models.values()) / steps


def time_peer(system: str, steps: int) -> tuple[Timing, float | None] | None:
    """Wall and CPU seconds of one run of ``steps`` 1 KB files, and its model calls per step
    (deepreflect's from ``deepreflect_calls``: ``time_deepreflect`` keeps no models)."""
    if system == "deepreflect":
        return time_deepreflect(steps), None
    if system == "deepagents" and create_deep_agent is None:
        return None
    with sqlite_saver() as (saver, _):
        if system == "deepagents":
            model = ScriptedChatModel(responder=author(steps, 1000))
            graph, payload = deepagents_graph(model, saver), goal()
        else:
            model = ScriptedChatModel(responder=writer(1000))
            graph, payload = bare_graph(chain(steps), model, saver), {"files": {}}
        return timed(lambda: invoke(graph, payload)), len(model.calls) / steps


# --- 3. the top-level model's prompt ------------------------------------------------------


def prompt_peer(system: str, n: int, size: int) -> dict[str, Any] | None:
    """What the top-level model was sent over one run of n files: its largest prompt, all its
    prompts together, the schemas bound to one call, and how often deepagents summarized."""
    if system == "bare" or (system == "deepagents" and create_deep_agent is None):
        return None  # the bare loop has no top-level model
    if system == "deepreflect":
        models = roles(chain(n), size, [END])
        top = [Recorder([{"steps": chain(n)}]), Recorder([END])]
        models["planner"], models["reflection"] = top
        models["default"] = worker = Recorder(responder=writer(size))
        graph, _ = sqlite_graph(models)
        result = run(graph, "write the parts", context=CONTEXT, thread_id="bench")
        assert result["status"] == "success", result["stop_reason"]
    else:
        worker = Recorder(responder=author(n, size))
        top = [worker]
        with sqlite_saver() as (saver, _):
            invoke(deepagents_graph(worker, saver), goal())
    prompts = [prompt_chars(call) for model in top for call in model.calls]
    summaries = sum(
        meta.get("lc_source") == "summarization" for model in top for meta in model.call_metadata
    )
    return {
        "largest": max(prompts),
        "total": sum(prompts),
        "calls": len(prompts),
        "schemas": max(model.schema_chars for model in top),
        "summaries": summaries,
        "tools": worker.tool_names,
        "tool_schemas": worker.schema_chars,
    }


# --- 4. parallel steps against the critical path -----------------------------------------


def parallel_peer(system: str, plan: Plan, latency: float) -> tuple[float, float] | None:
    """Wall seconds of one run of ``plan`` with every model call waiting ``latency``, and
    its critical path."""
    if system == "deepagents" and create_deep_agent is None:
        return None
    depth = len(levels(plan))
    if system == "deepreflect":
        models = roles(plan, 200, [END])
        for model in models.values():
            model.latency_s = latency
        graph, _ = sqlite_graph(models)
        ctx = dataclasses.replace(CONTEXT, max_parallel=len(plan))
        wall, _ = timed(lambda: run(graph, "write the parts", context=ctx, thread_id="bench"))
        top = len(models["planner"].calls) + len(models["reflection"].calls)
        step_calls = len(models["default"].calls) / len(plan)
        return wall, critical_path(latency, top, step_calls, depth)
    with sqlite_saver() as (saver, _):
        worker = ScriptedChatModel(
            responder=task_writer(200) if system == "deepagents" else writer(200),
            latency_s=latency,
        )
        if system == "deepagents":
            main = ScriptedChatModel(responder=delegator(plan), latency_s=latency)
            graph, payload, top = deepagents_graph(main, saver, worker), goal(), main.calls
        else:
            graph, payload, top = bare_graph(plan, worker, saver), {"files": {}}, []
        wall, _ = timed(lambda: invoke(graph, payload))
        return wall, critical_path(latency, len(top), len(worker.calls) / len(plan), depth)


# --- the report -----------------------------------------------------------------------------

SYSTEMS = ("deepreflect", "deepagents", "bare")
LABELS = ["deepreflect", "deepagents", "bare LangGraph", "÷ deepagents", "÷ bare"]


def side_by_side(values: dict[str, float | None], fmt: str = "{:.2f}") -> list[str]:
    """deepreflect's figure, the peers', and deepreflect's divided by each peer's."""
    ours = values["deepreflect"]
    return [
        *(cell(values[s], fmt) for s in SYSTEMS),
        ratio(ours, values["deepagents"]),
        ratio(ours, values["bare"]),
    ]


def storage_table(counts: Sequence[int], size: int) -> None:
    rows, runs = [], {}
    for n in counts:
        runs[n] = {s: storage_peer(s, n, size) for s in SYSTEMS}
        db = {s: None if r is None else r["file"] / (n * size) for s, r in runs[n].items()}
        blobs = each(r and r["blobs"] / (n * size) for r in runs[n].values())
        wal = each((r and r["wal"] / 1024 for r in runs[n].values()), "{:,.0f}")
        rows.append([n, f"{n * size:,}", *side_by_side(db), blobs, wal])
    report(
        f"1. Bytes stored per content byte (SQLite db file after checkpointing), {size:,} B files",
        rows,
        ["files", "content B", *LABELS, "blobs/content (each)", "WAL KB (each)"],
    )
    for small, large in itertools.pairwise(counts):
        growth = {
            s: runs[large][s]["file"] / runs[small][s]["file"]  # type: ignore[index]
            for s in SYSTEMS
            if runs[large][s] is not None
        }
        shown = ", ".join(f"{s} {g:.2f}x ({g * small / large:.2f})" for s, g in growth.items())
        print(f"  db file growth {small} -> {large} files (of linear): {shown}")


def time_table(steps: int, repeat: int) -> None:
    for s in SYSTEMS:
        time_peer(s, 3)  # warm imports and caches
    timings: dict[str, list[Timing]] = {s: [] for s in SYSTEMS}
    calls: dict[str, float | None] = {s: None for s in SYSTEMS}
    for _ in range(repeat):  # interleaved, so a busy moment hits all alike
        for s in SYSTEMS:
            measured = time_peer(s, steps)
            if measured is not None:
                timings[s].append(measured[0])
                calls[s] = measured[1]
    calls["deepreflect"] = deepreflect_calls(steps)

    def per_step(index: int) -> dict[str, float | None]:
        return {
            s: statistics.median(t[index] for t in ts) / steps * 1000 if ts else None
            for s, ts in timings.items()
        }

    report(
        f"2. Time per step, {steps}-step chain of 1 KB files, median of {repeat}",
        [
            ["wall ms", *side_by_side(per_step(0))],
            ["CPU ms", *side_by_side(per_step(1))],
            ["model calls", *side_by_side(calls)],
        ],
        ["per step", *LABELS],
    )


def prompt_table(n: int, file_sizes: Sequence[int]) -> dict[str, Any]:
    rows, last = [], {}
    for size in file_sizes:
        last = {s: prompt_peer(s, n, size) for s in ("deepreflect", "deepagents")}
        ours, theirs = last["deepreflect"], last["deepagents"]
        assert ours is not None
        rows.append(
            [
                f"{n} x {size // 1000} KB",
                f"{ours['largest']:,}",
                cell(theirs and theirs["largest"], "{:,}"),
                ratio(ours["largest"], theirs and theirs["largest"], 3),
                f"{ours['total']:,}",
                cell(theirs and theirs["total"], "{:,}"),
                ratio(ours["total"], theirs and theirs["total"], 3),
                f"{ours['calls']}/{cell(theirs and theirs['calls'], '{}')}",
                cell(theirs and theirs["summaries"], "{}"),
            ]
        )
    report(
        "3. Characters sent to the top-level model (messages and tool-call arguments)",
        rows,
        [
            "files",
            "deepreflect max",
            "deepagents max",
            "÷",
            "deepreflect all",
            "deepagents all",
            "÷",
            "calls",
            "da summaries",
        ],
    )
    ours, theirs = last["deepreflect"], last["deepagents"]
    print(
        f"  schemas bound to one top-level call: deepreflect {ours['schemas']:,} chars (planner"
        f" or reflection output schema), deepagents {cell(theirs and theirs['schemas'], '{:,}')}"
        " (its tools); the bare loop has no top-level model"
    )
    return last


def parallel_table(shapes: dict[str, Plan], latency: float) -> None:
    rows = []
    for name, plan in shapes.items():
        runs = {s: parallel_peer(s, plan, latency) for s in SYSTEMS}
        share = {s: None if r is None else r[0] / r[1] for s, r in runs.items()}
        critical = each((r and r[1] for r in runs.values()), "{:.1f}")
        rows.append([name, *side_by_side(share), critical])
    report(
        f"4. Wall ÷ critical path, every model call waits {latency} s",
        rows,
        ["plan", *LABELS, "critical s (each)"],
    )


def stored_keys(graph: Any) -> str:
    """The state keys a compiled graph checkpoints; a DeltaChannel (only its writes are
    stored) marked with a star."""
    keys = [
        name + ("*" if isinstance(channel, DeltaChannel) else "")
        for name, channel in graph.channels.items()
        if not name.startswith(("branch:", "__"))
        and not isinstance(channel, EphemeralValue | UntrackedValue)
    ]
    return ", ".join(sorted(keys))


def differences(prompts: dict[str, Any]) -> None:
    ours, theirs = prompts["deepreflect"], prompts["deepagents"]
    saver = InMemorySaver()
    ours_keys = stored_keys(sqlite_graph(roles(chain(1), 10, [END]))[0])
    bare_keys = stored_keys(bare_graph(chain(1), ScriptedChatModel(), saver))
    if create_deep_agent is None:
        peer_tools = peer_keys = NA
    else:
        peer_tools = ", ".join(theirs["tools"])
        peer_keys = stored_keys(deepagents_graph(ScriptedChatModel(), saver))
    print(
        "\nWhat differs between the systems (so the ratios are not like for like):\n"
        "- model calls per step: deepreflect's subagent makes two (write_file, then a reply),"
        " plus one planner call per run and reflection calls only when its rules ask (here one,"
        " at the end); deepagents' main model one per file (+1 to finish), or with `task` one"
        " per level and two per subagent; the bare loop one per step and no top-level model.\n"
        f"- tool schemas: deepreflect's subagent is bound {', '.join(ours['tools'])}"
        f" ({ours['tool_schemas']:,} chars), its planner and reflection an output schema;"
        f" deepagents' main model {peer_tools}"
        f" ({cell(theirs and theirs['tool_schemas'], '{:,}')} chars) on every call; the bare"
        " loop none. The fake models ignore schemas; a real provider is sent them each call.\n"
        "- what each checkpoints (* a DeltaChannel):\n"
        f"    deepreflect: {ours_keys}\n"
        f"    deepagents: {peer_keys}\n"
        f"    bare LangGraph: {bare_keys}\n"
        "  deepagents' messages hold each write_file's content a second time (its tool call's"
        " arguments); deepreflect also runs each step's check and its reflection rules.\n"
        "- deepagents, with its defaults for a model without a profile, summarizes a history"
        " above 170k tokens (an extra model call) and, past 20 messages, cuts the write_file"
        " arguments of older ones to 2,000 chars (the prompt runs here stay under 20);"
        " deepreflect's top-level models are sent summaries of the files, never their contents.\n"
        "- all three run with deepreflect's thread pool (max_concurrency"
        f" {MAX_CONCURRENCY}); LangGraph's default (CPUs + 4) would run 8 parallel steps 6 at"
        " a time here."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smaller run (fewer files and steps, no 8-step fan-out)",
    )
    args = parser.parse_args()
    if DEEPAGENTS_MISSING:
        print(f"deepagents: unavailable ({DEEPAGENTS_MISSING}); its columns say {NA}")
    else:
        from importlib.metadata import version

        print(f"deepagents {version('deepagents')}, langgraph {version('langgraph')}")
    print("ratios: deepreflect's figure ÷ the peer's; (each): deepreflect/deepagents/bare")
    storage_table((10, 30) if args.quick else (10, 30, 60), 10_000)
    time_table(10 if args.quick else 30, 1 if args.quick else 3)
    prompts = prompt_table(5 if args.quick else 10, (1_000, 10_000, 100_000))
    shapes = {"4 parallel": independent(4), "8 parallel": independent(8), "diamond": diamond()}
    if args.quick:
        del shapes["8 parallel"]
    parallel_table(shapes, 0.5)
    differences(prompts)


if __name__ == "__main__":
    main()
