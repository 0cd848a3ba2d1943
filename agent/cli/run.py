"""``deepreflect run`` and ``deepreflect demo``: a goal run on a new or existing thread.

``demo`` is ``run`` with a scripted scenario's goal and model, so that the whole loop runs
with no key; both stream their progress and stop with the Result's exit code.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import where
from agent.cli.export import export_out
from agent.cli.failures import running
from agent.cli.output import finish
from agent.cli.settings import check_models, loaded_files, mcp_tools, with_flags
from agent.vocabulary import Planning, Workload

if TYPE_CHECKING:
    from agent.context import Context


class _Scenarios:
    """``demo --scenario`` choices, read from agent.models.scenarios only when argparse asks (it
    imports LangChain, which ``--help`` and the other commands do not need)."""

    def _names(self) -> tuple[str, ...]:
        from agent.models.scenarios import SCENARIOS

        return tuple(SCENARIOS)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def add_parsers(sub: Any) -> None:
    """``demo`` and ``run``, which share every run flag but the models and MCP tools."""
    demo = sub.add_parser("demo", help="the whole loop on a scripted model; no key needed")
    demo.add_argument(
        "--scenario",
        default="demo",
        choices=_Scenarios(),
        metavar="NAME",  # not the choices: argparse would list them, importing them, now
        help="the scripted scenario: %(choices)s (default demo)",
    )
    _run_flags(demo, models_and_tools=False)
    demo.set_defaults(handler=cmd_demo)

    run_p = sub.add_parser("run", help="run a goal on a new or existing thread")
    run_p.add_argument("goal", help="what to produce, in your words (quote it)")
    run_p.add_argument("--thread", help="thread id (default: a new one)")
    run_p.add_argument(
        "--workload",
        choices=[workload.value for workload in Workload],
        help="the kind of goal, which sets how many reflections a turn may take: qa 2, "
        "research 3, report 4, coding 5, bughunt 7 (default report; $DEEPREFLECT_WORKLOAD)",
    )
    run_p.add_argument(
        "--planning",
        choices=[p.value for p in Planning],
        help="upfront: every step at once; rolling: the steps that can run now, then the next "
        "segment once reflection has seen their results ($DEEPREFLECT_PLANNING)",
    )
    _run_flags(run_p, models_and_tools=True)
    run_p.set_defaults(handler=cmd_run)


def _run_flags(p: argparse.ArgumentParser, *, models_and_tools: bool) -> None:
    """The flags of a new run, in the order ``--help`` lists them; a demo's scripted
    scenario chooses its own models and takes no MCP tools."""
    if models_and_tools:
        flags.models(p)
    flags.budgets(p)
    flags.databases(p)
    if models_and_tools:
        flags.mcp(p)
    flags.user_files(p)
    flags.workdir(p)
    flags.db(p, json_flag=True)
    flags.out(p)


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from agent.context import Context
    from agent.models.scenarios import SCENARIO_CONTEXT, SCENARIO_GOALS

    needs = SCENARIO_CONTEXT.get(args.scenario, {})
    ctx = with_flags(Context(model=f"scripted:{args.scenario}", **needs), args)
    return _run_goal(args, console, SCENARIO_GOALS[args.scenario], ctx)


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from agent.context import Context

    if not args.goal.strip():
        from agent.errors import ConfigError

        msg = "the goal is empty: say what the agent should produce, e.g. "
        raise ConfigError(msg + 'deepreflect run "Write slugify.py with tests"')
    return _run_goal(args, console, args.goal, with_flags(Context(), args))


def _run_goal(args: argparse.Namespace, console: Console, goal: str, ctx: Context) -> int:
    from agent.cli.memory import cli_user
    from agent.graph.build import build_graph
    from agent.runs.progress import Progress, line
    from agent.runs.runner import run
    from agent.store.checkpointers import db_location, open_checkpointer
    from agent.store.memories import open_memory_store
    from agent.vfs.host_disk import describe_files

    check_models(ctx)
    files = loaded_files(args)
    tools = mcp_tools(args)
    thread_id = args.thread = getattr(args, "thread", None) or str(uuid.uuid4())
    ctx = cli_user(ctx)
    with open_checkpointer(args.db) as saver, open_memory_store(db_location(args.db)) as store:
        graph = build_graph(checkpointer=saver, tools=tools, store=store)
        if not args.json:
            console.print(line(("goal", "bold"), f": {goal}"))
            if files is not None:
                console.print(line(("files", "bold"), f": {describe_files(files)}"))
            if ctx.workspace:
                console.print(line(("workspace", "bold"), f": {ctx.workspace} (read in place)"))
            console.print(line((f"thread {thread_id} in {where(args.db)}", "dim")))
        on_update = None if args.json else Progress(console)
        with running(thread_id):
            result = run(
                graph, goal, thread_id=thread_id, context=ctx, on_update=on_update, files=files
            )
        export_out(args, graph, thread_id)
    return finish(console, result, args.json)
