"""The ``deepreflect`` command: demo, run, resume, show, threads, eval."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from agent.context import Context
from agent.errors import ConfigError, classify, describe
from agent.eval import evaluate, print_report
from agent.graph import build_graph
from agent.models import load_model
from agent.progress import Progress, print_result
from agent.result import Result, build_result
from agent.runner import (
    db_location,
    list_threads,
    open_checkpointer,
    resume,
    run,
    thread_config,
)
from agent.scenarios import SCENARIOS

EXIT_CODES = {"success": 0, "awaiting_input": 3, "budget_exhausted": 3, "failed": 1}
DEMO_GOAL = "Build a tiny slugify module with tests and a README."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepreflect", description="A deep agent whose reflection loop knows when to stop."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--db",
            help="threads database (default .deepreflect/threads.sqlite "
            "or $DEEPREFLECT_DB; a postgresql:// URL works too)",
        )
        p.add_argument("--json", action="store_true", help="print the Result as JSON")

    demo = sub.add_parser("demo", help="the whole loop on a scripted model; no key needed")
    demo.add_argument("--scenario", default="demo", choices=SCENARIOS)
    common(demo)

    run_p = sub.add_parser("run", help="run a goal on a new or existing thread")
    run_p.add_argument("goal")
    run_p.add_argument("--model", help="provider:name, e.g. openai:gpt-4.1-mini")
    run_p.add_argument("--thread", help="thread id (default: a new one)")
    run_p.add_argument("--workload", choices=["qa", "research", "report", "coding", "bughunt"])
    common(run_p)

    res = sub.add_parser("resume", help="answer a paused thread (or continue a crashed one)")
    res.add_argument("thread_id")
    res.add_argument("answer", nargs="?", help="the human answer; omit to continue as is")
    res.add_argument("--token-budget", type=int, help="raise the token budget for this turn")
    common(res)

    show = sub.add_parser("show", help="a thread's status, plan, artifacts and decisions")
    show.add_argument("thread_id")
    common(show)

    threads = sub.add_parser("threads", help="list the threads in the database")
    threads.add_argument("--db")

    ev = sub.add_parser("eval", help="measure reflection: off vs on, or seeded errors")
    ev.add_argument("--dataset", default="humaneval", help="humaneval or a JSONL file")
    ev.add_argument("--model", help="generator (and seeded-errors critic), provider:name")
    ev.add_argument("--critic", help="model critic merged with the check's critique")
    ev.add_argument("--rounds", type=int, default=2, help="revisions when reflection is on")
    ev.add_argument("--evidence", choices=["check", "visible"], default="check")
    ev.add_argument("--seeded-errors", action="store_true", help="plant errors in references")
    ev.add_argument("--limit", type=int, help="only the first N tasks")
    ev.add_argument("--workers", type=int, help="tasks at once")
    ev.add_argument("--seed", type=int, default=0, help="seed of the mutation sites")
    ev.add_argument("--timeout", type=float, default=3.0, help="seeded-errors check timeout")
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _check_models(ctx: Context) -> None:
    """Fail before any work when a model string cannot be used (exit code 2)."""
    for spec in {ctx.model, ctx.planner_model, ctx.subagent_model, ctx.critic_model} - {None}:
        load_model(spec)  # type: ignore[arg-type]
    if problems := ctx.validate():
        raise ConfigError("; ".join(problems))


def _finish(console: Console, result: Result, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_result(console, result)
    return EXIT_CODES.get(result["status"], 1)


def _cmd_run(args: argparse.Namespace, console: Console, goal: str, ctx: Context) -> int:
    _check_models(ctx)
    thread_id = args.thread = getattr(args, "thread", None) or str(uuid.uuid4())
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        if not args.json:
            console.print(
                f"[bold]goal[/]: {goal}\n[dim]thread {thread_id} in {db_location(args.db)}[/]"
            )
        on_update = None if args.json else Progress(console)
        result = run(graph, goal, thread_id=thread_id, context=ctx, on_update=on_update)
    return _finish(console, result, args.json)


def _cmd_resume(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        snapshot = graph.get_state(thread_config(args.thread_id))
        if not snapshot.values:
            raise ConfigError(f"thread {args.thread_id!r} not found in {db_location(args.db)}")
        stored = snapshot.values.get("context") or {}
        ctx = Context(**stored) if stored else Context()
        if args.token_budget:
            ctx.token_budget = args.token_budget
        _check_models(ctx)
        on_update = None if args.json else Progress(console)
        result = resume(graph, args.thread_id, args.answer, context=ctx, on_update=on_update)
    return _finish(console, result, args.json)


def _cmd_show(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        values = graph.get_state(thread_config(args.thread_id)).values
    if not values:
        raise ConfigError(f"thread {args.thread_id!r} not found in {db_location(args.db)}")
    result = build_result(values, args.thread_id)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        console.print(f"[bold]goal[/]: {values.get('goal')}")
        for entry in values.get("decisions") or []:
            console.print(
                f"  round {entry.get('round')}: {entry['decision']} by {entry.get('by')} — "
                f"{entry.get('reason', '')}"
            )
        print_result(console, result)
    return 0


def _cmd_threads(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        for thread_id in list_threads(saver):
            values = graph.get_state(thread_config(thread_id)).values
            goal = " ".join(str(values.get("goal", "")).split())[:60]
            console.print(f"{thread_id}  {values.get('status', '?'):<16} {goal}")
    return 0


def _cmd_eval(args: argparse.Namespace, console: Console) -> int:
    options = {k: getattr(args, k) for k in ("dataset", "model", "critic", "rounds", "limit")}
    options.update(evidence=args.evidence, workers=args.workers, seed=args.seed)
    # the spinner goes to stderr, so that --json output stays clean
    with Console(stderr=True).status("evaluating") as status:
        report = evaluate(
            **options,
            seeded_errors=args.seeded_errors,
            timeout_s=args.timeout,
            progress=lambda done, total: status.update(f"evaluating: {done}/{total} tasks"),
        )
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(console, report)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = _parser().parse_args(argv)
    console = Console(highlight=False, stderr=False)
    try:
        if args.command == "demo":
            ctx = Context(model=f"scripted:{args.scenario}")
            return _cmd_run(args, console, DEMO_GOAL, ctx)
        if args.command == "run":
            overrides: dict[str, Any] = {}
            if args.model:
                overrides["model"] = args.model
            if args.workload:
                overrides["workload"] = args.workload
            return _cmd_run(args, console, args.goal, Context(**overrides))
        if args.command == "resume":
            return _cmd_resume(args, console)
        if args.command == "show":
            return _cmd_show(args, console)
        if args.command == "eval":
            return _cmd_eval(args, console)
        return _cmd_threads(args, console)
    except ConfigError as exc:
        Console(stderr=True, highlight=False).print(f"[red]error[/]: {exc}")
        return 2
    except Exception as exc:  # a run that died (e.g. retries of a transient error ran out)
        thread_id = getattr(args, "thread", None) or getattr(args, "thread_id", "<thread-id>")
        hint = f"; the checkpoint is kept: `deepreflect resume {thread_id}` continues it"
        Console(stderr=True, highlight=False).print(
            f"[red]run stopped[/] ({classify(exc).value}): {describe(exc)}{hint}"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
