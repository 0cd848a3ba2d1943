"""The ``deepreflect`` command: demo, run, resume, show, threads, eval."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from agent.checkpointers import (
    database_problem,
    db_location,
    is_damaged,
    is_database_error,
    list_threads,
    open_checkpointer,
    shown_location,
)
from agent.context import Context, as_context
from agent.errors import ConfigError, classify, describe
from agent.eval import evaluate, print_report
from agent.export import ExportError, export_files
from agent.graph import build_graph
from agent.lease import ThreadBusy
from agent.models import load_model
from agent.pg_url import scrub
from agent.progress import Progress, line, print_result
from agent.result import Result, build_result
from agent.runner import Graph, resume, run, thread_config
from agent.sandbox import weaker_isolation_warning
from agent.scenarios import SCENARIOS

EXIT_CODES = {"success": 0, "awaiting_input": 3, "budget_exhausted": 3, "failed": 1}
EXIT_FAILED, EXIT_USAGE, EXIT_BUSY = 1, 2, 4
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

    def out(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", help="when the run stops, export its done artifacts to this folder")

    demo = sub.add_parser("demo", help="the whole loop on a scripted model; no key needed")
    demo.add_argument("--scenario", default="demo", choices=SCENARIOS)
    common(demo)
    out(demo)

    run_p = sub.add_parser("run", help="run a goal on a new or existing thread")
    run_p.add_argument("goal")
    run_p.add_argument("--model", help="provider:name, e.g. openai:gpt-4.1-mini")
    run_p.add_argument("--thread", help="thread id (default: a new one)")
    run_p.add_argument("--workload", choices=["qa", "research", "report", "coding", "bughunt"])
    common(run_p)
    out(run_p)

    res = sub.add_parser("resume", help="answer a paused thread (or continue a crashed one)")
    res.add_argument("thread_id")
    res.add_argument("answer", nargs="?", help="the human answer; omit to continue as is")
    res.add_argument("--token-budget", type=int, help="raise the token budget for this turn")
    act = res.add_mutually_exclusive_group()
    act.add_argument(
        "--accept", action="store_true", help="finish now with the artifacts as they are"
    )
    act.add_argument("--stop", action="store_true", help="finish now: nothing more runs")
    common(res)
    out(res)

    show = sub.add_parser("show", help="a thread's status, plan, artifacts and decisions")
    show.add_argument("thread_id")
    show.add_argument("--file", help="print this file's content, as the thread holds it")
    common(show)

    exp = sub.add_parser("export", help="write a thread's artifacts to a folder, byte for byte")
    exp.add_argument("thread_id")
    exp.add_argument("dir", help="the folder to write into (created if missing)")
    exp.add_argument("--all", action="store_true", help="every file, with a status manifest")
    exp.add_argument("--force", action="store_true", help="overwrite files that exist")
    exp.add_argument("--db", help="threads database, as for the other commands")

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
    roles = (ctx.model, ctx.planner_model, ctx.subagent_model, ctx.judge_model, ctx.critic_model)
    for spec in set(roles) - {None}:
        load_model(spec)  # type: ignore[arg-type]
    if problems := ctx.validate():
        msg = "; ".join(problems)
        raise ConfigError(msg)


class RunStopped(Exception):
    """An error raised while a run was executing on a thread (the cause is chained).

    Only then is the thread's checkpoint worth resuming; an error before the run started
    (a bad database, a busy thread) or after it is reported as what it is.
    """

    def __init__(self, thread_id: str) -> None:
        super().__init__(thread_id)
        self.thread_id = thread_id


@contextmanager
def _running(thread_id: str) -> Iterator[None]:
    """Mark errors of the block as a run that stopped on ``thread_id``.

    A usage error or a busy thread keeps its own meaning: nothing ran. A run under the
    weaker process sandbox says so first, on stderr (``--json`` output stays clean).
    """
    if warning := weaker_isolation_warning():
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            line(("warning", "yellow"), ": ", warning)
        )
    try:
        yield
    except (ConfigError, ThreadBusy):
        raise
    except Exception as exc:
        raise RunStopped(thread_id) from exc


def _finish(console: Console, result: Result, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_result(console, result)
    return EXIT_CODES.get(result["status"], EXIT_FAILED)


def _not_found(thread_id: str, db: str | None) -> ConfigError:
    msg = f"thread {thread_id!r} not found in {shown_location(db_location(db))}"
    return ConfigError(msg)


def _cmd_run(args: argparse.Namespace, console: Console, goal: str, ctx: Context) -> int:
    _check_models(ctx)
    thread_id = args.thread = getattr(args, "thread", None) or str(uuid.uuid4())
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        if not args.json:
            console.print(line(("goal", "bold"), f": {goal}"))
            where = shown_location(db_location(args.db))
            console.print(line((f"thread {thread_id} in {where}", "dim")))
        on_update = None if args.json else Progress(console)
        with _running(thread_id):
            result = run(graph, goal, thread_id=thread_id, context=ctx, on_update=on_update)
        _export_out(args, graph, thread_id)
    return _finish(console, result, args.json)


def _state(graph: Graph, thread_id: str, db: str | None) -> dict[str, Any]:
    """The thread's state; a usage error when it is missing or cannot be decoded."""
    try:
        values = graph.get_state(thread_config(thread_id)).values
    except Exception as exc:
        if is_database_error(exc):
            raise  # the database, not this thread: _failure names it
        where = shown_location(db_location(db))
        msg = f"thread {thread_id!r} in {where} cannot be read: {describe(exc)}"
        raise ConfigError(msg) from exc
    if not values:
        raise _not_found(thread_id, db)
    return dict(values)


def _answer(args: argparse.Namespace) -> str | dict[str, str] | None:
    """The resume value the command line gives: an action, the answer text, or nothing."""
    if (args.accept or args.stop) and args.answer is not None:
        msg = "give an answer or --accept / --stop, not both"
        raise ConfigError(msg)
    if args.accept:
        return {"action": "accept"}
    if args.stop:
        return {"action": "stop"}
    return args.answer


def _cmd_resume(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver)
        ctx = as_context(_state(graph, args.thread_id, args.db).get("context"))
        if args.token_budget:
            ctx.token_budget = args.token_budget
        _check_models(ctx)
        on_update = None if args.json else Progress(console)
        with _running(args.thread_id):
            result = resume(graph, args.thread_id, _answer(args), context=ctx, on_update=on_update)
        _export_out(args, graph, args.thread_id)
    return _finish(console, result, args.json)


def _export_out(args: argparse.Namespace, graph: Graph, thread_id: str) -> None:
    """``--out DIR``: the run's done artifacts written to DIR once it stops (on stderr with
    ``--json``, which keeps stdout for the Result)."""
    if not getattr(args, "out", None):
        return
    console = Console(stderr=args.json, highlight=False, soft_wrap=True)
    values = graph.get_state(thread_config(thread_id)).values
    _export(console, values, args.out, include_all=False, force=False)


def _cmd_show(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db, write=False) as saver:
        values = _state(build_graph(checkpointer=saver), args.thread_id, args.db)
    if args.file is not None:
        entry = (values.get("files") or {}).get(args.file)
        if entry is None:
            msg = f"thread {args.thread_id!r} has no file {args.file!r}"
            raise ConfigError(msg)
        sys.stdout.write(str(entry.get("content") or ""))
        return 0
    result = build_result(values, args.thread_id)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        console.print(line(("goal", "bold"), f": {values.get('goal')}"))
        for entry in values.get("decisions") or []:
            console.print(
                line(
                    f"  round {entry.get('round')}: {entry.get('decision')} by "
                    f"{entry.get('by')} — {entry.get('reason', '')}"
                )
            )
        print_result(console, result)
    return 0


def _cmd_export(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db, write=False) as saver:
        values = _state(build_graph(checkpointer=saver), args.thread_id, args.db)
    _export(console, values, args.dir, include_all=args.all, force=args.force)
    return 0


def _export(
    console: Console, values: Mapping[str, Any], folder: str, *, include_all: bool, force: bool
) -> None:
    try:
        written = export_files(
            values.get("files") or {}, folder, include_all=include_all, force=force
        )
    except (ExportError, OSError) as exc:
        raise ConfigError(str(exc)) from exc
    files = values.get("files") or {}
    for path in written:
        rel = path.relative_to(Path(folder).resolve()).as_posix()
        console.print(line(f"  {files[rel].get('status', '?'):>7} {rel} -> {path}"))
    if not written:
        console.print(line("  no done artifacts to export (--all exports every file)"))


def _thread_row(graph: Graph, thread_id: str) -> tuple[str, str]:
    """A thread's status and goal for ``threads``; a thread whose state cannot be decoded is
    listed as ``unreadable`` instead of hiding every other thread of the database."""
    try:
        values = _state(graph, thread_id, None)
    except ConfigError as exc:
        return "unreadable", describe(exc.__cause__ or exc, limit=60)
    return str(values.get("status", "?")), " ".join(str(values.get("goal", "")).split())[:60]


def _cmd_threads(args: argparse.Namespace, console: Console) -> int:
    with open_checkpointer(args.db, write=False) as saver:
        graph = build_graph(checkpointer=saver)
        for thread_id in list_threads(saver):
            status, goal = _thread_row(graph, thread_id)
            console.print(line(f"{thread_id}  {status:<16} {goal}"))
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


def _dispatch(args: argparse.Namespace, console: Console) -> int:
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
    commands: dict[str, Callable[[argparse.Namespace, Console], int]] = {
        "resume": _cmd_resume,
        "show": _cmd_show,
        "export": _cmd_export,
        "eval": _cmd_eval,
        "threads": _cmd_threads,
    }
    return commands[args.command](args, console)


def _failure(exc: BaseException, location: str) -> tuple[int, str, str]:
    """The exit code, label and message for an error that ended a command."""
    if isinstance(exc, ThreadBusy):
        return EXIT_BUSY, "error", str(exc)
    if isinstance(exc, ConfigError):
        return EXIT_USAGE, "error", str(exc)
    cause = exc.__cause__ if isinstance(exc, RunStopped) else exc
    if cause is not None and is_database_error(cause):
        # Outside a run the database is the problem; inside one only a damaged file is
        # (resuming continues a run that lost its connection, not one whose file is corrupt).
        if not isinstance(exc, RunStopped) or is_damaged(cause):
            return EXIT_USAGE, "error", str(database_problem(location, cause))
    if isinstance(exc, RunStopped) and cause is not None:
        hint = f"; the checkpoint is kept: `deepreflect resume {exc.thread_id}` continues it"
        return EXIT_FAILED, "run stopped", f"({classify(cause).value}): {describe(cause)}{hint}"
    return EXIT_FAILED, "error", f"({classify(exc).value}): {describe(exc)}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Exit codes: 0 success, 3 awaiting input or budget exhausted, 1 a failed or stopped run,
    2 bad usage or configuration (the database included), 4 the thread is busy.
    """
    args = _parser().parse_args(argv)
    # soft_wrap: a long path, URL or message stays on one line, as printed
    console = Console(highlight=False, stderr=False, soft_wrap=True)
    try:
        return _dispatch(args, console)
    except Exception as exc:
        location = db_location(getattr(args, "db", None))
        code, label, message = _failure(exc, location)
        errors = Console(stderr=True, highlight=False, soft_wrap=True)
        one_line = " ".join(scrub(message, location).split())
        errors.print(line((label, "red"), ": ", one_line))
        return code


if __name__ == "__main__":
    sys.exit(main())
