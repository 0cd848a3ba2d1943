"""``deepreflect resume``: a paused thread answered, accepted, stopped or continued.

The thread keeps the settings it ran with; a flag given here changes them for this turn.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from agent.cli import flags
from agent.cli.database import graph_state
from agent.cli.export import export_out
from agent.cli.failures import running
from agent.cli.output import finish
from agent.cli.settings import check_models, mcp_tools, with_flags


def add_parser(sub: Any) -> None:
    res = sub.add_parser("resume", help="answer a paused thread (or continue a stopped one)")
    res.add_argument("thread_id", help="the thread, as `deepreflect threads` lists it")
    res.add_argument("answer", nargs="?", help="the human answer; omit to continue as is")
    act = res.add_mutually_exclusive_group()
    act.add_argument(
        "--accept", action="store_true", help="finish now with the artifacts as they are"
    )
    act.add_argument("--stop", action="store_true", help="finish now: nothing more runs")
    flags.models(res, note=" (default: what the thread ran with)")
    flags.budgets(res, note=" for this turn (default: what the thread ran with)")
    flags.databases(res, note=" (default: what the thread ran with)")
    flags.mcp(res)
    flags.db(res, json_flag=True)
    flags.out(res)
    res.set_defaults(handler=cmd_resume)


def cmd_resume(args: argparse.Namespace, console: Console) -> int:
    from agent.context import as_context
    from agent.graph.build import build_graph
    from agent.runs.progress import Progress
    from agent.runs.runner import resume
    from agent.store.checkpointers import db_location, open_checkpointer
    from agent.store.memories import open_memory_store

    tools = mcp_tools(args)
    with open_checkpointer(args.db) as saver, open_memory_store(db_location(args.db)) as store:
        graph = build_graph(checkpointer=saver, tools=tools, store=store)
        stored = graph_state(graph, args.thread_id, args.db).get("context")
        ctx = with_flags(as_context(stored), args)
        check_models(ctx)
        on_update = None if args.json else Progress(console)
        with running(args.thread_id):
            result = resume(graph, args.thread_id, _answer(args), context=ctx, on_update=on_update)
        export_out(args, graph, args.thread_id)
    return finish(console, result, args.json)


def _answer(args: argparse.Namespace) -> Any:
    """The resume value the command line gives: an action, the answer text, or nothing."""
    from agent.errors import ConfigError

    if (args.accept or args.stop) and args.answer is not None:
        msg = "give an answer or --accept / --stop, not both"
        raise ConfigError(msg)
    if args.accept:
        return {"action": "accept"}
    if args.stop:
        return {"action": "stop"}
    if args.answer is None and (budget := _raised_budget(args)):
        return {"action": "continue", "budget": budget}
    return _decisions_json(args.answer)


def _raised_budget(args: argparse.Namespace) -> dict[str, Any]:
    """``resume ID --token-budget N`` (or ``--time-budget S``) with no answer: continue the
    turn with that budget, as the escalation's "continue with a higher budget" does."""
    budgets = {"token_budget": "token_budget", "time_budget": "time_budget_s"}
    return {name: getattr(args, f) for f, name in budgets.items() if getattr(args, f, None)}


def _decisions_json(answer: str | None) -> Any:
    """An answer written as JSON decisions (``{"decisions": [...]}``) for a thread waiting on
    tool calls, as a value; any other text stays text."""
    if answer is None or not answer.lstrip().startswith(("{", "[")):
        return answer
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return answer
    return value if isinstance(value, dict | list) else answer
