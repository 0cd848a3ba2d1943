"""The ``deepreflect`` command: demo, run, resume, show, export, threads, prune, eval.

Only argparse and rich load with this module: each command imports what it needs, and only
the commands that run a graph import LangGraph's graph and LangChain's models, so that
``--help``, ``threads`` and ``show`` start in a fraction of a second (``bench/startup.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from agent.context import Context
    from agent.graph.result import Result
    from agent.runs.runner import Graph

EXIT_CODES = {"success": 0, "awaiting_input": 3, "budget_exhausted": 3, "failed": 1}
EXIT_FAILED, EXIT_USAGE, EXIT_BUSY, EXIT_INTERRUPTED = 1, 2, 4, 130
MCP_ENV = "DEEPREFLECT_MCP_CONFIG"
_STRUCTURED_OUTPUT = ("auto", "function_calling", "json_schema", "json_mode")
# flag dest -> Context field, for the flags that set one
_CONTEXT_FLAGS = {
    "model": "model",
    "planner_model": "planner_model",
    "subagent_model": "subagent_model",
    "judge_model": "judge_model",
    "reflection_model": "reflection_model",
    "structured_output": "structured_output",
    "tool_calling": "tool_calling",
    "request_timeout": "request_timeout_s",
    "max_revisions": "max_revisions",
    "token_budget": "token_budget",
    "time_budget": "time_budget_s",
    "max_parallel": "max_parallel",
    "workload": "workload",
    "planning": "planning",
    "approve_tools": "interrupt_on",
}


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepreflect",
        description="A deep agent whose reflection loop knows when to stop.",
        epilog="Every run setting also defaults from DEEPREFLECT_<FIELD> (DEEPREFLECT_MODEL, "
        "DEEPREFLECT_MAX_PARALLEL, ...); a flag wins over the environment.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="the whole loop on a scripted model; no key needed")
    demo.add_argument(
        "--scenario",
        default="demo",
        choices=_Scenarios(),
        metavar="NAME",  # not the choices: argparse would list them, importing them, now
        help="the scripted scenario (default demo; a wrong name lists them all)",
    )
    _budgets(demo)
    _databases(demo)
    _user_files(demo)
    _db(demo, json_flag=True)
    _out(demo)

    run_p = sub.add_parser("run", help="run a goal on a new or existing thread")
    run_p.add_argument("goal")
    run_p.add_argument("--thread", help="thread id (default: a new one)")
    run_p.add_argument("--workload", choices=["qa", "research", "report", "coding", "bughunt"])
    run_p.add_argument(
        "--planning",
        choices=["upfront", "rolling"],
        help="upfront: every step at once; rolling: the steps that can run now, then the next "
        "segment once reflection has seen their results ($DEEPREFLECT_PLANNING)",
    )
    _models(run_p)
    _budgets(run_p)
    _databases(run_p)
    _mcp(run_p)
    _user_files(run_p)
    _db(run_p, json_flag=True)
    _out(run_p)

    res = sub.add_parser("resume", help="answer a paused thread (or continue a stopped one)")
    res.add_argument("thread_id")
    res.add_argument("answer", nargs="?", help="the human answer; omit to continue as is")
    act = res.add_mutually_exclusive_group()
    act.add_argument(
        "--accept", action="store_true", help="finish now with the artifacts as they are"
    )
    act.add_argument("--stop", action="store_true", help="finish now: nothing more runs")
    _models(res, note=" (default: what the thread ran with)")
    _budgets(res, note=" for this turn (default: what the thread ran with)")
    _databases(res, note=" (default: what the thread ran with)")
    _mcp(res)
    _db(res, json_flag=True)
    _out(res)

    show = sub.add_parser("show", help="a thread's status, plan, artifacts and decisions")
    show.add_argument("thread_id")
    show.add_argument("--file", help="print this file's content, as the thread holds it")
    _db(show, json_flag=True)

    exp = sub.add_parser("export", help="write a thread's artifacts to a folder, byte for byte")
    exp.add_argument("thread_id")
    exp.add_argument("dir", help="the folder to write into (created if missing)")
    exp.add_argument("--all", action="store_true", help="every file, with a status manifest")
    exp.add_argument("--force", action="store_true", help="overwrite files that exist")
    _db(exp)

    threads = sub.add_parser("threads", help="list the threads in the database (or delete some)")
    threads.add_argument(
        "--delete", nargs="+", metavar="ID", help="delete these threads' checkpoints"
    )
    _db(threads)

    prune = sub.add_parser("prune", help="delete the threads not updated for a while")
    prune.add_argument(
        "--older-than", required=True, metavar="DURATION", help="e.g. 7d, 12h, 30m, 2w"
    )
    _db(prune)

    ev = sub.add_parser("eval", help="measure reflection: off vs on, or seeded errors")
    ev.add_argument("--dataset", default="humaneval", help="humaneval or a JSONL file")
    ev.add_argument("--model", help="generator (and seeded-errors critic), provider:name")
    ev.add_argument(
        "--critic",
        "--judge-model",
        dest="critic",
        help="model critic (the judge) merged with the check's critique",
    )
    ev.add_argument("--rounds", type=int, default=2, help="revisions when reflection is on")
    ev.add_argument("--evidence", choices=["check", "visible"], default="check")
    ev.add_argument("--seeded-errors", action="store_true", help="plant errors in references")
    ev.add_argument("--limit", type=int, help="only the first N tasks")
    ev.add_argument("--workers", type=int, help="tasks at once")
    ev.add_argument("--seed", type=int, default=0, help="seed of the mutation sites")
    ev.add_argument("--timeout", type=float, default=3.0, help="seeded-errors check timeout")
    ev.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature of the models (default 0: greedy, as published pass@1 is "
        "measured; a local server's own default is often 0.8)",
    )
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _db(p: argparse.ArgumentParser, *, json_flag: bool = False) -> None:
    p.add_argument(
        "--db",
        help="threads database (default .deepreflect/threads.sqlite or $DEEPREFLECT_DB; "
        "a postgresql:// URL works too)",
    )
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the Result as JSON")


def _user_files(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--file",
        dest="files",
        action="append",
        metavar="PATH",
        help="a file or folder the agent gets to read or edit (repeatable); a folder adds its "
        "text files, skipping .git/ and what .gitignore ignores; paths inside the current "
        "folder keep their relative path, others are named from their parent",
    )


def _out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="when the run stops, export its done artifacts to this folder")
    p.add_argument(
        "--force", action="store_true", help="with --out: overwrite files that hold other content"
    )


def _setting(group: Any, flag: str, text: str, *, env: bool, **kwargs: Any) -> None:
    """A flag that sets a Context field; with ``env`` (a new run: a resumed thread keeps
    its own settings) its help names the variable it overrides."""
    dest = flag.removeprefix("--").replace("-", "_")
    if env:
        text += f" (${'DEEPREFLECT_' + _CONTEXT_FLAGS.get(dest, dest).upper()})"
    group.add_argument(flag, help=text, **kwargs)


def _models(p: argparse.ArgumentParser, note: str = "") -> None:
    """The per-role model flags (Context's model fields); ``note`` for a resume."""
    g = p.add_argument_group("models, as provider:name" + note)
    model: dict[str, Any] = {"metavar": "PROVIDER:NAME", "env": not note}
    _setting(g, "--model", "every role's default, e.g. openai:gpt-4.1-mini", **model)
    _setting(g, "--planner-model", "the planner's", **model)
    _setting(g, "--subagent-model", "the subagents'", **model)
    _setting(g, "--judge-model", "the judge of rubric checks and critiques", **model)
    _setting(g, "--critic-model", "deprecated: the old name of --judge-model", **model)
    _setting(g, "--reflection-model", "reflection's", **model)
    _setting(
        g,
        "--structured-output",
        "how models return structured answers: auto (learnt per model), or "
        "function_calling, json_schema, json_mode",
        choices=_STRUCTURED_OUTPUT,
        env=not note,
    )
    _setting(
        g,
        "--tool-calling",
        "how subagents get their tools: auto (schemas until a model keeps writing its calls "
        "as text), native, text",
        choices=("auto", "native", "text"),
        env=not note,
    )
    _setting(
        g, "--request-timeout", "seconds one model request may take", type=float, metavar="S",
        env=not note,
    )  # fmt: skip


def _budgets(p: argparse.ArgumentParser, note: str = "") -> None:
    g = p.add_argument_group("budgets" + note)
    env = not note
    _setting(g, "--max-revisions", "revisions after a first draft", type=int, metavar="N", env=env)
    _setting(g, "--token-budget", "tokens one user turn may spend", type=int, metavar="N", env=env)
    _setting(g, "--time-budget", "seconds one user turn may take", type=float, metavar="S", env=env)
    _setting(g, "--max-parallel", "subagents at once", type=int, metavar="N", env=env)


def _databases(p: argparse.ArgumentParser, note: str = "") -> None:
    p.add_argument(
        "--database",
        action="append",
        metavar="NAME=PATH",
        help="an SQLite file that sql checks may query by NAME (repeat for more); the planner "
        "sees the names, never the paths ($DEEPREFLECT_DATABASES)" + note,
    )


def _mcp(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mcp-config",
        metavar="PATH",
        help=f'MCP servers ({{"mcpServers": ...}}) whose tools the subagents get (${MCP_ENV})',
    )
    p.add_argument(
        "--approve-tools",
        metavar="NAMES",
        help="tools whose calls wait for your approval, comma-separated, e.g. "
        "send_email,run_migration ($DEEPREFLECT_INTERRUPT_ON)",
    )


# ------------------------------------------------------------------ configuration


def _context_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The Context fields the command line sets (a flag wins over DEEPREFLECT_*)."""
    overrides = {
        field: getattr(args, dest)
        for dest, field in _CONTEXT_FLAGS.items()
        if getattr(args, dest, None) is not None
    }
    if getattr(args, "database", None):
        overrides["databases"] = _declared_databases(args.database)
    critic = getattr(args, "critic_model", None)
    if critic is not None:
        _warn("--critic-model is deprecated: use --judge-model (it sets the judge)")
        overrides["critic_model"] = critic  # as Context(critic_model=...): the critic subagent
        overrides.setdefault("judge_model", critic)  # ... and the judge, unless given
    return overrides


def _declared_databases(flags: Sequence[str]) -> str:
    """``--database NAME=PATH`` flags as ``Context.databases`` text, each file checked and
    its path made absolute now (a usage error naming the flag otherwise)."""
    from agent.checks.databases import DatabaseError, declare_databases, format_databases
    from agent.errors import ConfigError

    given: dict[str, str] = {}
    try:
        for flag in flags:
            name, equals, path = flag.partition("=")
            if not equals or not name.strip() or not path.strip():
                msg = f"{flag!r} is not NAME=PATH"
                raise DatabaseError(msg)
            if name.strip() in given:
                msg = f"database {name.strip()!r} is given twice"
                raise DatabaseError(msg)
            given[name.strip()] = path.strip()
        return format_databases(declare_databases(given))
    except DatabaseError as exc:
        msg = f"--database: {exc}"
        raise ConfigError(msg) from exc


def _with_flags(ctx: Context, args: argparse.Namespace) -> Context:
    """``ctx`` with the command line's settings; set after construction so that a flag
    equal to a field's default still wins over the environment."""
    for name, value in _context_overrides(args).items():
        setattr(ctx, name, value)
    return ctx


def _check_models(ctx: Context) -> None:
    """Fail before any work when the configuration or a model string cannot be used
    (exit code 2): a bad ``DEEPREFLECT_*`` value is named here too."""
    from agent.errors import ConfigError
    from agent.models.factory import load_model

    if problems := ctx.validate():
        msg = "; ".join(problems)
        raise ConfigError(msg)
    roles = (
        ctx.model,
        ctx.planner_model,
        ctx.subagent_model,
        ctx.judge_model,
        ctx.critic_model,
        ctx.reflection_model,
    )
    for spec in set(roles) - {None}:
        load_model(spec)  # type: ignore[arg-type]


def _tools(args: argparse.Namespace) -> Mapping[str, Sequence[Any]] | None:
    """``--mcp-config`` / ``$DEEPREFLECT_MCP_CONFIG``: its servers' tools by role."""
    path = getattr(args, "mcp_config", None) or os.environ.get(MCP_ENV)
    if not path:
        return None
    from agent.tools.mcp import tools_from_config

    return tools_from_config(path)


def _warn(message: str) -> None:
    from agent.runs.progress import line

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        line(("warning", "yellow"), ": ", message)
    )


# ------------------------------------------------------------------ running


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
    from agent.errors import ConfigError
    from agent.sandbox import weaker_isolation_warning
    from agent.store.lease import ThreadBusy

    if warning := weaker_isolation_warning():
        _warn(warning)
    try:
        yield
    except (ConfigError, ThreadBusy):
        raise
    except Exception as exc:
        if (lost := _lease_lost(exc)) is not None:
            raise lost from None  # another writer has the thread: not a stopped run
        raise RunStopped(thread_id) from exc


def _lease_lost(exc: BaseException) -> Exception | None:
    """The :class:`~agent.store.lease.LeaseLost` in ``exc``'s chain, if a lost lease ended it."""
    from agent.errors import exception_chain
    from agent.store.lease import LeaseLost

    return next((link for link in exception_chain(exc) if isinstance(link, LeaseLost)), None)


def _finish(console: Console, result: Result, as_json: bool) -> int:
    from agent.runs.progress import print_result

    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_result(console, result)
    return EXIT_CODES.get(result["status"], EXIT_FAILED)


def _where(db: str | None) -> str:
    from agent.store.checkpointers import db_location, shown_location

    return shown_location(db_location(db))


def _loaded_files(args: argparse.Namespace) -> dict[str, str] | None:
    """``--file PATH ...`` read from disk (a usage error, exit 2, names a bad one); what a
    folder held but was left out is said on stderr."""
    if not getattr(args, "files", None):
        return None
    from agent.vfs.user_files import load_files

    skipped: list[str] = []
    files = load_files(args.files, skipped=skipped)
    for note in skipped:
        _warn(f"--file: skipped {note}")
    return files


def _cmd_run(args: argparse.Namespace, console: Console, goal: str, ctx: Context) -> int:
    from agent.graph.build import build_graph
    from agent.runs.progress import Progress, line
    from agent.runs.runner import run
    from agent.store.checkpointers import open_checkpointer
    from agent.vfs.user_files import describe_files

    _check_models(ctx)
    files = _loaded_files(args)
    tools = _tools(args)
    thread_id = args.thread = getattr(args, "thread", None) or str(uuid.uuid4())
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver, tools=tools)
        if not args.json:
            console.print(line(("goal", "bold"), f": {goal}"))
            if files is not None:
                console.print(line(("files", "bold"), f": {describe_files(files)}"))
            console.print(line((f"thread {thread_id} in {_where(args.db)}", "dim")))
        on_update = None if args.json else Progress(console)
        with _running(thread_id):
            result = run(
                graph, goal, thread_id=thread_id, context=ctx, on_update=on_update, files=files
            )
        _export_out(args, graph, thread_id)
    return _finish(console, result, args.json)


def _graph_state(graph: Graph, thread_id: str, db: str | None) -> dict[str, Any]:
    """The thread's state through the graph (for resume); a usage error when it is missing
    or cannot be decoded."""
    from agent.runs.runner import thread_config

    return _decoded(lambda: graph.get_state(thread_config(thread_id)).values, thread_id, db)


def _decoded(read: Callable[[], Any], thread_id: str, db: str | None) -> dict[str, Any]:
    from agent.errors import ConfigError, describe
    from agent.store.checkpointers import is_database_error

    try:
        values = read()
    except Exception as exc:
        if is_database_error(exc):
            raise  # the database, not this thread: _failure names it
        msg = f"thread {thread_id!r} in {_where(db)} cannot be read: {describe(exc)}"
        raise ConfigError(msg) from exc
    if not values:
        raise _not_found(thread_id, db)
    return dict(values)


def _not_found(thread_id: str, db: str | None) -> Exception:
    from agent.errors import ConfigError

    msg = f"thread {thread_id!r} not found in {_where(db)}"
    return ConfigError(msg)


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
    flags = {"token_budget": "token_budget", "time_budget": "time_budget_s"}
    return {name: getattr(args, f) for f, name in flags.items() if getattr(args, f, None)}


def _decisions_json(answer: str | None) -> Any:
    """An answer written as JSON decisions (``{"decisions": [...]}``) for a thread waiting on
    tool calls, as a value; any other text stays text."""
    import json

    if answer is None or not answer.lstrip().startswith(("{", "[")):
        return answer
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return answer
    return value if isinstance(value, dict | list) else answer


def _cmd_resume(args: argparse.Namespace, console: Console) -> int:
    from agent.context import as_context
    from agent.graph.build import build_graph
    from agent.runs.progress import Progress
    from agent.runs.runner import resume
    from agent.store.checkpointers import open_checkpointer

    tools = _tools(args)
    with open_checkpointer(args.db) as saver:
        graph = build_graph(checkpointer=saver, tools=tools)
        stored = _graph_state(graph, args.thread_id, args.db).get("context")
        ctx = _with_flags(as_context(stored), args)
        _check_models(ctx)
        on_update = None if args.json else Progress(console)
        with _running(args.thread_id):
            result = resume(graph, args.thread_id, _answer(args), context=ctx, on_update=on_update)
        _export_out(args, graph, args.thread_id)
    return _finish(console, result, args.json)


def _export_out(args: argparse.Namespace, graph: Graph, thread_id: str) -> None:
    """``--out DIR``: the run's done artifacts written to DIR once it stops (on stderr with
    ``--json``, which keeps stdout for the Result)."""
    from agent.runs.runner import thread_config

    if not getattr(args, "out", None):
        return
    console = Console(stderr=args.json, highlight=False, soft_wrap=True)
    values = graph.get_state(thread_config(thread_id)).values
    _export(console, values, args.out, include_all=False, force=args.force)


# ------------------------------------------------------------------ reading threads


@contextmanager
def _reading(db: str | None, thread_id: str | None = None) -> Iterator[BaseCheckpointSaver]:
    """The database opened read-only: nothing is created or written. With ``thread_id``,
    a missing database is that thread not being found."""
    from agent.errors import ConfigError
    from agent.store.checkpointers import NoThreads, open_checkpointer
    from agent.store.threads import plain_serde

    try:
        with open_checkpointer(db, write=False, serde=plain_serde()) as saver:
            yield saver
    except NoThreads as exc:
        if thread_id is None:
            raise
        msg = f"thread {thread_id!r} not found in {_where(db)} ({exc})"
        raise ConfigError(msg) from exc


def _thread_state(saver: BaseCheckpointSaver, thread_id: str, db: str | None) -> dict[str, Any]:
    from agent.store.threads import thread_values

    return _decoded(lambda: thread_values(saver, thread_id), thread_id, db)


def _cmd_show(args: argparse.Namespace, console: Console) -> int:
    from agent.errors import ConfigError
    from agent.graph.result import build_result
    from agent.runs.progress import history, line, print_result
    from agent.store.threads import INTERRUPTED, shown_status

    with _reading(args.db, args.thread_id) as saver:
        values = _thread_state(saver, args.thread_id, args.db)
        status = shown_status(saver, args.thread_id, values.get("status"))
        holder = _holder(saver, args.thread_id) if status == "running" else None
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
        return 0
    console.print(line(("goal", "bold"), f": {_goal_of(values)}"))
    for text in history(values):
        console.print(line(text))
    if status == INTERRUPTED:  # the state says running, and no run holds it
        result = {**result, "status": INTERRUPTED, "stop_reason": "its run stopped unfinished"}
    elif holder:
        result = {**result, "stop_reason": holder}
    print_result(console, result)
    if status == INTERRUPTED:
        console.print()
        console.print(
            line(
                "its process was killed or its run failed; the checkpoint is kept: ",
                (f"deepreflect resume {args.thread_id}", "bold"),
                " continues it",
            )
        )
    return 0


def _goal_of(values: Mapping[str, Any]) -> str:
    """The thread's goal; for a run that failed before it took its goal, its first message."""
    if values.get("goal"):
        return str(values["goal"])
    for message in values.get("messages") or []:
        kind = message.get("type") if isinstance(message, Mapping) else getattr(message, "type", "")
        if kind == "human":
            content = message.get("content") if isinstance(message, Mapping) else message.content
            return str(content)[:300] or "(an empty goal)"
    return "(no goal was recorded: the run failed before it started)"


def _holder(saver: BaseCheckpointSaver, thread_id: str) -> str | None:
    from agent.store.lease import lease_holder

    return lease_holder(saver, thread_id)


def _cmd_export(args: argparse.Namespace, console: Console) -> int:
    with _reading(args.db, args.thread_id) as saver:
        values = _thread_state(saver, args.thread_id, args.db)
    _export(console, values, args.dir, include_all=args.all, force=args.force)
    return 0


def _export(
    console: Console, values: Mapping[str, Any], folder: str, *, include_all: bool, force: bool
) -> None:
    from agent.errors import ConfigError
    from agent.runs.export import ExportError, export_files
    from agent.runs.progress import line

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


# ------------------------------------------------------------------ listing and deleting


def _when(seconds: float | None) -> str:
    return "?" if seconds is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _cmd_threads(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.checkpointers import NoThreads
    from agent.store.threads import thread_rows

    if args.delete:
        return _cmd_delete(args, console)
    try:
        with _reading(args.db) as saver:
            rows = thread_rows(saver)
    except NoThreads as exc:
        console.print(line(f"no threads: {exc}"))
        return 0
    if not rows:
        console.print(line(f"no threads in {_where(args.db)} yet: `deepreflect demo` starts one"))
        return 0
    width = max(len("thread"), *(len(row.thread_id) for row in rows))
    header = f"{'thread':<{width}}  {'created':<16}  {'updated':<16}  {'status':<16}  goal"
    console.print(line((header, "bold")))
    for row in rows:
        goal = row.goal if len(row.goal) <= 60 else row.goal[:59] + "…"
        console.print(
            line(
                f"{row.thread_id:<{width}}  {_when(row.created):<16}  {_when(row.updated):<16}  "
                f"{row.status:<16}  {goal}"
            )
        )
    return 0


@contextmanager
def _writing(db: str | None) -> Iterator[BaseCheckpointSaver]:
    """The database opened for deleting; a SQLite file that does not exist is not created."""
    from agent.store.checkpointers import NoThreads, db_location, open_checkpointer
    from agent.store.pg_url import is_postgres_url

    location = db_location(db)
    if not is_postgres_url(location) and not Path(location).exists():
        msg = f"there is no threads database at {location}: nothing has run with it yet"
        raise NoThreads(msg)
    with open_checkpointer(db) as saver:
        yield saver


def _cmd_delete(args: argparse.Namespace, console: Console) -> int:
    """``threads --delete ID...``: every id must exist (else nothing is deleted); a thread a
    run holds is refused (exit 4) and the others are deleted."""
    from agent.store.threads import thread_rows

    with _writing(args.db) as saver:
        rows = {row.thread_id: row for row in thread_rows(saver)}
        missing = [thread_id for thread_id in args.delete if thread_id not in rows]
        if missing:
            raise _not_found(missing[0], args.db)
        return _delete(console, saver, [rows[t] for t in dict.fromkeys(args.delete)])


def _delete(console: Console, saver: BaseCheckpointSaver, rows: Sequence[Any]) -> int:
    """Delete each thread of ``rows`` (``ThreadRow``), saying which were deleted and which a
    run holds; exit 4 when any was busy."""
    from agent.runs.progress import line
    from agent.store.lease import LeaseLost, ThreadBusy
    from agent.store.threads import delete_thread

    busy = 0
    for row in rows:
        try:
            delete_thread(saver, row.thread_id)
        except (ThreadBusy, LeaseLost) as exc:
            busy += 1
            _error_line("not deleted", str(exc))
            continue
        console.print(
            line(
                ("deleted", "red"),
                f" {row.thread_id}  {row.status}, updated {_when(row.updated)}: {row.goal[:60]}",
            )
        )
    return EXIT_BUSY if busy else 0


def _cmd_prune(args: argparse.Namespace, console: Console) -> int:
    from agent.runs.progress import line
    from agent.store.checkpointers import NoThreads
    from agent.store.threads import parse_duration, stale_threads, thread_rows

    older_than = parse_duration(args.older_than)
    try:
        with _writing(args.db) as saver:
            stale = set(stale_threads(saver, older_than))
            rows = [row for row in thread_rows(saver) if row.thread_id in stale]
            if not rows:
                console.print(
                    line(f"no thread in {_where(args.db)} is older than {args.older_than}")
                )
                return 0
            code = _delete(console, saver, rows)
    except NoThreads as exc:
        console.print(line(f"nothing to prune: {exc}"))
        return 0
    console.print(line(f"pruned the threads not updated for {args.older_than}"))
    return code


# ------------------------------------------------------------------ eval


def _cmd_eval(args: argparse.Namespace, console: Console) -> int:
    from agent.eval import evaluate, print_report
    from agent.eval.report import eval_progress

    options = {k: getattr(args, k) for k in ("dataset", "model", "critic", "rounds", "limit")}
    options.update(evidence=args.evidence, workers=args.workers, seed=args.seed)
    # progress goes to stderr, so that --json output stays clean
    with eval_progress(Console(stderr=True, highlight=False)) as progress:
        report = evaluate(
            **options,
            seeded_errors=args.seeded_errors,
            timeout_s=args.timeout,
            temperature=args.temperature,
            progress=progress,
        )
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(console, report)
    return 0


# ------------------------------------------------------------------ dispatch and errors


def _dispatch(args: argparse.Namespace, console: Console) -> int:
    if args.command in ("demo", "run"):
        from agent.context import Context
    if args.command == "demo":
        from agent.models.scenarios import SCENARIO_CONTEXT, SCENARIO_GOALS

        needs = SCENARIO_CONTEXT.get(args.scenario, {})
        ctx = _with_flags(Context(model=f"scripted:{args.scenario}", **needs), args)
        return _cmd_run(args, console, SCENARIO_GOALS[args.scenario], ctx)
    if args.command == "run":
        if not args.goal.strip():
            from agent.errors import ConfigError

            msg = "the goal is empty: say what the agent should produce, e.g. "
            raise ConfigError(msg + 'deepreflect run "Write slugify.py with tests"')
        return _cmd_run(args, console, args.goal, _with_flags(Context(), args))
    commands: dict[str, Callable[[argparse.Namespace, Console], int]] = {
        "resume": _cmd_resume,
        "show": _cmd_show,
        "export": _cmd_export,
        "eval": _cmd_eval,
        "threads": _cmd_threads,
        "prune": _cmd_prune,
    }
    return commands[args.command](args, console)


def _failure(exc: BaseException, location: str) -> tuple[int, str, str]:
    """The exit code, label and message for an error that ended a command."""
    from agent.errors import ConfigError, classify, describe
    from agent.store.checkpointers import database_problem, is_damaged, is_database_error
    from agent.store.lease import ThreadBusy

    if isinstance(exc, ThreadBusy):
        return EXIT_BUSY, "error", str(exc)
    if (lost := _lease_lost(exc)) is not None:
        return EXIT_BUSY, "error", str(lost)
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


def _interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C left: a run's checkpoint is kept and the command that continues it."""
    thread_id = getattr(args, "thread", None) or getattr(args, "thread_id", None)
    if args.command in ("demo", "run", "resume") and thread_id:
        return f"the checkpoint is kept: `deepreflect resume {thread_id}` continues the run"
    return "nothing was changed"


def _error_line(label: str, message: str, location: str | None = None) -> None:
    from agent.runs.progress import line
    from agent.store.pg_url import scrub

    one_line = " ".join((scrub(message, location) if location else message).split())
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        line((label, "red"), ": ", one_line)
    )


class _Console(Console):
    """rich's console, except that a reader gone (``| head``) is a BrokenPipeError for
    ``main`` to end quietly with 0, not rich's own ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Exit codes: 0 success, 3 awaiting input or budget exhausted, 1 a failed or stopped run,
    2 bad usage or configuration (the database included), 4 the thread is busy or another
    writer took it over while this run was stalled (nothing more was written), 130
    interrupted (Ctrl-C; a run's checkpoint is kept).
    """
    args = _parser().parse_args(argv)
    # soft_wrap: a long path, URL or message stays on one line, as printed
    console = _Console(highlight=False, stderr=False, soft_wrap=True)
    try:
        return _dispatch(args, console)
    except KeyboardInterrupt:
        _error_line("interrupted", _interrupted(args))
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `deepreflect show ID | head`: the reader has all it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet
        return 0
    except Exception as exc:
        from agent.store.checkpointers import db_location

        location = db_location(getattr(args, "db", None))
        code, label, message = _failure(exc, location)
        _error_line(label, message, location)
        return code

