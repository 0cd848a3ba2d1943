"""The whole graph on a real model: the goal suite of ``bench/goals/`` (issue 22, item 4).

Each goal (``bench/goals/<name>/goal.json``) runs through ``deepreflect run`` in a
subprocess, the path a user takes; a goal that escalates is resumed with its human answer
(any other pause is a stop and is recorded as one). The thread is exported
(``deepreflect export THREAD DIR --all``) and the goal's hidden ``grader.py`` grades the
exported artifacts. Per goal: status, stop reason, grader verdict, false success (status
``success`` but the grader fails), rounds, model calls, tokens and wall; then the same goal
asked once of the plain model (one message, its fenced artifact graded the same way).

    python bench/goals.py --model openai:NAME [--goal NAME] [--json] [--out DIR] [--no-plain]
    python bench/goals.py --serve 1.5b [--threads 1]     # llama.cpp started and stopped here
    python bench/goals.py --set heldout ...              # the held-out set (bench/goals_heldout)

The plain model needs ``openai:NAME`` and ``OPENAI_BASE_URL`` (``--serve`` sets both).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import goal_checks

ROOT = Path(__file__).resolve().parents[1]
GOALS_DIR = Path(__file__).with_name("goals")
HELDOUT_DIR = Path(__file__).with_name("goals_heldout")
SETS = {"goals": GOALS_DIR, "heldout": HELDOUT_DIR}
"""The goal sets by ``--set`` name: the suite, and its held-out rewordings (never tuned on)."""
GIVEN = "given/"
PLAIN_MAX_TOKENS = 1024
RUN_TIMEOUT_S = 1800.0
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
Grader = Callable[..., tuple[bool, str]]


@dataclass(frozen=True)
class Goal:
    """One goal of the suite, as its ``goal.json`` declares it."""

    name: str
    folder: Path
    workload: str
    goal: str
    artifacts: list[str]
    files: dict[str, str] = field(default_factory=dict)
    """The files given to the agent, by the path it sees (``given/`` dropped)."""
    databases: dict[str, Path] = field(default_factory=dict)
    """Declared database name -> the SQL script it is built from."""
    search_corpus: Path | None = None
    answer: str | None = None
    escalates: bool = False
    original: str | None = None
    """A held-out goal's original (``"grader"`` in its goal.json): the suite's goal whose
    hidden grader, given files and search corpus it uses."""

    @property
    def home(self) -> Path:
        """The folder of the grader, the given files and the corpus: the original goal's."""
        return GOALS_DIR / self.original if self.original else self.folder


def load_goal(folder: Path) -> Goal:
    """The goal in ``folder``; a clear error for a goal.json that is not complete. A goal.json
    with ``"grader": NAME`` (a held-out goal) takes its grader, its ``given/`` files and its
    search corpus from the suite's goal NAME (``bench/goals/NAME``)."""
    spec = json.loads((folder / "goal.json").read_text(encoding="utf-8"))
    for key in ("workload", "goal", "artifacts"):
        if not spec.get(key):
            msg = f"{folder / 'goal.json'}: {key!r} is missing"
            raise ValueError(msg)
    original = spec.get("grader")
    home = GOALS_DIR / original if original else folder
    if original and not (home / "grader.py").is_file():
        msg = f"{folder / 'goal.json'}: no grader {original!r} in {GOALS_DIR}"
        raise ValueError(msg)
    files = {
        rel.removeprefix(GIVEN): (home / rel).read_text(encoding="utf-8")
        for rel in spec.get("files", [])
    }
    corpus = spec.get("search_corpus")
    return Goal(
        name=folder.name,
        folder=folder,
        workload=spec["workload"],
        goal=spec["goal"],
        artifacts=list(spec["artifacts"]),
        files=files,
        databases={n: GOALS_DIR / p for n, p in (spec.get("databases") or {}).items()},
        search_corpus=home / corpus if corpus else None,
        answer=spec.get("answer"),
        escalates=bool(spec.get("escalates")),
        original=original,
    )


def load_goals(names: Sequence[str] = (), goal_set: str = "goals") -> list[Goal]:
    """Every goal of ``bench/goals`` (or of another set of ``SETS``; or the named ones), in
    name order."""
    folders = sorted(p.parent for p in SETS[goal_set].glob("*/goal.json"))
    known = {f.name for f in folders}
    if unknown := [n for n in names if n not in known]:
        msg = f"unknown goal(s) {', '.join(unknown)}; the goals are {', '.join(sorted(known))}"
        raise SystemExit(msg)
    return [load_goal(f) for f in folders if not names or f.name in names]


def grader(goal: Goal) -> Grader:
    """The goal's hidden ``grade(files, run)`` (its folder's grader.py)."""
    if str(GOALS_DIR) not in sys.path:
        sys.path.insert(0, str(GOALS_DIR))  # grading.py, the graders' shared helpers
    spec = importlib.util.spec_from_file_location(
        f"goal_grader_{goal.name}", goal.home / "grader.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.grade


def build_database(script: Path, dest: Path) -> Path:
    """An SQLite file built from an SQL script (Chinook-like data is committed as SQL)."""
    dest.unlink(missing_ok=True)
    with sqlite3.connect(dest) as db:
        db.executescript(script.read_text(encoding="utf-8"))
    return dest


# ------------------------------------------------------------------ through deepreflect


@dataclass
class Workspace:
    """What one goal's run needs on disk, in a folder of its own; deepreflect runs in its
    ``given/`` folder, which holds the goal's given files."""

    folder: Path
    databases: dict[str, str]
    search_log: Path | None
    mcp_config: Path | None


def workspace(goal: Goal, folder: Path) -> Workspace:
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in goal.files.items():  # --file PATH names a file by its path from the cwd
        (folder / "given" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "given" / path).write_text(text, encoding="utf-8")
    dbs = {n: str(build_database(s, folder / f"{n}.db")) for n, s in goal.databases.items()}
    log = config = None
    if goal.search_corpus is not None:
        log, config = folder / "search.jsonl", folder / "mcp.json"
        log.write_text("")
        server = [str(GOALS_DIR / "search_server.py"), str(goal.search_corpus), str(log)]
        entry: dict[str, Any] = {"command": sys.executable, "args": server}
        entry |= {"roles": ["researcher"], "env": {"PYTHONPATH": str(ROOT)}}  # agent.tools.search
        config.write_text(json.dumps({"mcpServers": {"search": entry}}))
    return Workspace(folder, dbs, log, config)


def supports_files(cli: Sequence[str]) -> bool:
    """Whether this deepreflect's ``run`` takes ``--file`` (the user's files)."""
    proc = subprocess.run([*cli, "run", "--help"], capture_output=True, text=True, check=False)
    return "--file" in proc.stdout


def goal_text(goal: Goal, inline_files: bool) -> str:
    """The goal as the user types it; the given files inline when ``--file`` is missing."""
    if not inline_files or not goal.files:
        return goal.goal
    return goal.goal + given_inline(goal)


def given_inline(goal: Goal) -> str:
    blocks = [f"\n\n{path}:\n```\n{text}```" for path, text in goal.files.items()]
    return "\n\nThe files you are given:" + "".join(blocks) if blocks else ""


def run_command(
    cli: Sequence[str], goal: Goal, model: str, ws: Workspace, *, with_files: bool,
    time_budget: float | None = None,
) -> list[str]:  # fmt: skip
    cmd = [*cli, "run", goal_text(goal, not with_files), "--model", model]
    if time_budget is not None:
        cmd += ["--time-budget", str(time_budget)]
    cmd += ["--db", str(ws.folder / "threads.sqlite"), "--json", "--workload", goal.workload]
    if with_files:
        for path in goal.files:
            cmd += ["--file", path]  # relative to the cwd (the workspace's given/): its path
    for name, path in ws.databases.items():
        cmd += ["--database", f"{name}={path}"]
    if ws.mcp_config is not None:
        cmd += ["--mcp-config", str(ws.mcp_config)]
    return cmd


def _invoke(cmd: Sequence[str], env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """One deepreflect command's JSON Result (or why there is none)."""
    try:
        proc = subprocess.run(
            list(cmd), capture_output=True, text=True, env=dict(env), cwd=cwd,
            timeout=RUN_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"status": "error", "stop_reason": f"no Result within {RUN_TIMEOUT_S:.0f} s"}
    try:
        return dict(json.loads(proc.stdout))
    except (json.JSONDecodeError, TypeError):
        tail = (proc.stderr or proc.stdout).strip()[-600:]
        return {"status": "error", "stop_reason": f"exit {proc.returncode}: {tail}"}


def exported(
    cli: Sequence[str], thread: str, db: Path, dest: Path, env: Mapping[str, str]
) -> dict[str, str]:
    """The thread's files, written by ``deepreflect export --all`` and read back."""
    from agent.runs.export import MANIFEST

    cmd = [*cli, "export", thread, str(dest), "--all", "--db", str(db)]
    subprocess.run(cmd, capture_output=True, text=True, env=dict(env), check=False)
    if not dest.is_dir():
        return {}
    return {
        p.relative_to(dest).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(dest.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def usage_totals(usage: Mapping[str, Mapping[str, int]] | None) -> tuple[int, int]:
    """(model calls, tokens) over every role."""
    roles = (usage or {}).values()
    return sum(int(r.get("calls", 0)) for r in roles), sum(
        int(r.get("total_tokens", 0)) for r in roles
    )


def false_success(status: str | None, passed: bool) -> bool:
    """The run said it succeeded and the hidden grader says it did not."""
    return status == "success" and not passed


def run_goal(
    goal: Goal, model: str, cli: Sequence[str], folder: Path, env: Mapping[str, str],
    *, with_files: bool, time_budget: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One goal through deepreflect: run, resume with the human answer if it escalates,
    export, grade."""
    ws = workspace(goal, folder)
    db = ws.folder / "threads.sqlite"
    started = time.monotonic()
    cwd = ws.folder / "given"
    cwd.mkdir(exist_ok=True)
    first = _invoke(
        run_command(cli, goal, model, ws, with_files=with_files, time_budget=time_budget), env, cwd
    )
    results = [first]
    escalated = first.get("status") == "awaiting_input"
    if escalated and goal.escalates and goal.answer and first.get("thread_id"):
        resume = [*cli, "resume", first["thread_id"], goal.answer, "--db", str(db), "--json"]
        results.append(_invoke(resume, env, cwd))
    wall = time.monotonic() - started
    last = results[-1]
    thread = first.get("thread_id")
    files = exported(cli, thread, db, ws.folder / "export", env) if thread else {}
    passed, evidence = grade_files(goal, files, ws, escalated=escalated)
    # usage and rounds are the thread's so far: the last turn's Result holds both turns
    calls, tokens = usage_totals(max((r.get("usage") or {} for r in results), key=usage_totals))
    return {
        "goal": goal.name,
        "status": last.get("status"),
        "stop_reason": last.get("stop_reason"),
        "escalated": escalated,
        "given_by": "--file" if with_files and goal.files else "goal text" if goal.files else "-",
        "passed": passed,
        "false_success": false_success(last.get("status"), passed),
        "evidence": evidence,
        "rounds": max(int(r.get("rounds") or 0) for r in results),
        "model_calls": calls,
        "tokens": tokens,
        "wall_s": round(wall, 1),
        "thread_id": thread,
        "checks": goal_checks.thread_checks(db, thread, goal.artifacts),
    }


def grade_files(
    goal: Goal, files: Mapping[str, str], ws: Workspace, *, escalated: bool,
    search_results: Sequence[str] | None = None,
) -> tuple[bool, str]:  # fmt: skip
    """The hidden grader's verdict; a grader that raises is a failure, with its error."""
    if search_results is None and ws.search_log is not None and ws.search_log.exists():
        lines = ws.search_log.read_text(encoding="utf-8").splitlines()
        search_results = [json.loads(line)["result"] for line in lines if line.strip()]
    run = {"databases": ws.databases, "search_results": list(search_results or []),
           "escalated": escalated}  # fmt: skip
    try:
        passed, evidence = grader(goal)(dict(files), run)
    except Exception as exc:  # a grader crash must fail the goal, never pass it
        return False, f"grader error: {type(exc).__name__}: {exc}"
    return bool(passed), evidence


# ------------------------------------------------------------------ the plain model


def plain_messages(goal: Goal) -> list[Any]:
    """One request: the goal, its given files inline, and how to reply."""
    from langchain_core.messages import HumanMessage, SystemMessage

    system, _, user = (
        (GOALS_DIR / "plain_prompt.txt").read_text(encoding="utf-8").partition("\n---\n")
    )
    given = given_inline(goal)
    if goal.search_corpus is not None:  # no tools here: the search's documents are given
        corpus = json.loads(goal.search_corpus.read_text(encoding="utf-8"))
        given += "\n\nThe sources you may cite:\n" + search_block(corpus)
    if len(goal.artifacts) == 1:
        reply = "Reply with the complete artifact in one fenced code block."
    else:
        order = ", ".join(goal.artifacts)
        reply = (
            f"Reply with each file complete in its own fenced code block, in this order: {order}."
        )
    text = user.strip().format(goal=goal.goal, given=given, reply=reply)
    return [SystemMessage(system.strip()), HumanMessage(text)]


def search_block(corpus: Mapping[str, str]) -> str:
    """The corpus as the search tool shows results: ``[n] url`` then the text."""
    return "\n\n".join(f"[{n}] {url}\n{text}" for n, (url, text) in enumerate(corpus.items(), 1))


def fenced_artifacts(reply: str, artifacts: Sequence[str]) -> dict[str, str]:
    """The reply's fenced blocks as the artifacts, in order; one artifact and no fence: the
    whole reply."""
    blocks = _FENCE.findall(reply)
    if not blocks and len(artifacts) == 1:
        blocks = [reply]
    return dict(zip(artifacts, blocks, strict=False))


def run_plain(goal: Goal, model: Any, folder: Path) -> dict[str, Any]:
    """The goal asked once of the plain model, graded by the same grader."""
    ws = workspace(goal, folder)
    started = time.monotonic()
    try:
        answer = model.invoke(plain_messages(goal))
    except Exception as exc:  # one failed request must not lose the other goals
        return {
            "goal": goal.name,
            "passed": False,
            "evidence": f"{type(exc).__name__}: {exc}"[:300],
        }
    wall = time.monotonic() - started
    files = fenced_artifacts(str(answer.content), goal.artifacts)
    corpus_results = None
    if goal.search_corpus is not None:
        corpus = json.loads(goal.search_corpus.read_text(encoding="utf-8"))
        corpus_results = [search_block(corpus)]
    passed, evidence = grade_files(goal, files, ws, escalated=False, search_results=corpus_results)
    usage = answer.usage_metadata or {}
    return {
        "goal": goal.name,
        "passed": passed,
        "evidence": evidence,
        "tokens": int(usage.get("total_tokens", 0)),
        "wall_s": round(wall, 1),
    }


def plain_chat(base_url: str, name: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=name, base_url=base_url, api_key="local-llama-server",
        temperature=0, max_tokens=PLAIN_MAX_TOKENS, timeout=600, max_retries=0,
    )  # fmt: skip


# ------------------------------------------------------------------ the table


def _cell(value: Any) -> str:
    """A value on one line of a Markdown table."""
    return " ".join(str(value or "").split())[:60].replace("|", "/")


def table(rows: Sequence[Mapping[str, Any]], plain: Mapping[str, Mapping[str, Any]]) -> str:
    head = ["goal", "status", "stop reason", "grader", "false success", "its checks", "rounds",
            "model calls", "tokens", "wall s", "plain", "plain tokens"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        p = plain.get(r["goal"])
        cells = [
            r["goal"], str(r["status"]), _cell(r["stop_reason"]),
            "pass" if r["passed"] else "fail", "**yes**" if r["false_success"] else "no",
            goal_checks.cell(r["checks"]).replace("|", "/") if "checks" in r else "-",
            str(r["rounds"]), str(r["model_calls"]), str(r["tokens"]), str(r["wall_s"]),
            "-" if p is None else ("pass" if p["passed"] else "fail"),
            "-" if p is None else str(p.get("tokens", "-")),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    solved = sum(1 for r in rows if r["passed"])
    false = sum(1 for r in rows if r["false_success"])
    plain_solved = sum(1 for p in plain.values() if p["passed"])
    lines.append("")
    lines.append(f"deepreflect: {solved}/{len(rows)} graded correct, {false} false successes"
                 + (f"; plain model: {plain_solved}/{len(plain)}" if plain else ""))  # fmt: skip
    lines.extend(goal_checks.summary_lines(rows))
    return "\n".join(lines)


def default_cli() -> list[str]:
    exe = shutil.which("deepreflect") or str(Path(sys.executable).with_name("deepreflect"))
    return [exe] if Path(exe).exists() else [sys.executable, "-m", "agent.cli"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--model",
        help="provider:name, as deepreflect run --model takes it; {goal} in it is replaced by "
        "the goal's name, a held-out goal's original (a scripted tier: scripted:goal-{goal})",
    )
    which.add_argument("--serve", choices=["0.5b", "1.5b"], help="start llama.cpp with this model")
    which.add_argument(
        "--report",
        metavar="DIR",
        help="print the table of a finished run kept in DIR (its goals.json), with each "
        "goal's checks read again from its threads database",
    )
    parser.add_argument("--goal", action="append", default=[], help="only this goal (repeatable)")
    parser.add_argument(
        "--set",
        choices=sorted(SETS),
        default="goals",
        help="the goal set: the suite (bench/goals, the default) or its held-out rewordings "
        "(bench/goals_heldout, never tuned on)",
    )
    parser.add_argument("--json", action="store_true", help="print the records as JSON")
    parser.add_argument("--out", help="keep every goal's workspace here (default: a temp dir)")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain model")
    parser.add_argument(
        "--time-budget", type=float, metavar="S", help="deepreflect run --time-budget per goal"
    )
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (--serve)")
    parser.add_argument("--n-ctx", type=int, default=8192, help="llama.cpp context (--serve)")
    parser.add_argument(
        "--deepreflect", help="the deepreflect command to run (default: the installed one)"
    )
    return parser.parse_args(argv)


@contextmanager
def serving(args: argparse.Namespace, out: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The model string and environment of the run: as given, or a server started here."""
    paths = (os.environ.get("PYTHONPATH") or str(ROOT)).split(os.pathsep)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in paths if p)}
    if not args.serve:
        yield args.model, env
        return
    import real_eval

    real_eval.ensure_model(args.serve)
    with real_eval.served(args.serve, args.threads, args.n_ctx, out / "server.log") as port:
        env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
        env["OPENAI_API_KEY"] = "local-llama-server"
        env["NO_PROXY"] = "127.0.0.1,localhost"
        # one slot on a CPU: a 3,000-token planner prompt alone takes ~110 s at 27 tokens/s
        env.setdefault("DEEPREFLECT_REQUEST_TIMEOUT_S", "600")
        yield f"openai:{real_eval.SERVED_NAME[args.serve]}", env


def report_again(folder: Path, as_json: bool) -> int:
    """The table of a kept run, its checks read from the threads databases (a run made
    before the table had them gets them too)."""
    report = json.loads((folder / "goals.json").read_text(encoding="utf-8"))
    goals = {g.name: g for goal_set in SETS for g in load_goals(goal_set=goal_set)}
    for row in report["goals"]:
        artifacts = goals[row["goal"]].artifacts if row["goal"] in goals else []
        db = folder / row["goal"] / "threads.sqlite"
        row["checks"] = goal_checks.thread_checks(db, row.get("thread_id"), artifacts)
    rows, plain = report["goals"], report.get("plain") or {}
    print(json.dumps(report, indent=1) if as_json else table(rows, plain))
    return 0


def write_report(
    out: Path, model: str, rows: list[Any], plain: Mapping[str, Any], *, finished: bool
) -> dict[str, Any]:
    """``goals.json`` as far as the run got (``finished`` once every goal ran)."""
    report = {"model": model, "goals": rows, "plain": dict(plain), "out": str(out)}
    report["finished"] = finished
    (out / "goals.json").write_text(json.dumps(report, indent=1))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        return report_again(Path(args.report), args.json)
    goals = load_goals(args.goal, args.set)
    out = Path(args.out or tempfile.mkdtemp(prefix="deepreflect-goals-"))
    out.mkdir(parents=True, exist_ok=True)
    cli = shlex.split(args.deepreflect) if args.deepreflect else default_cli()
    cli = [os.path.abspath(c) if os.sep in c and os.path.exists(c) else c for c in cli]
    with serving(args, out) as (model, env):
        with_files = supports_files(cli)
        rows, plain = [], {}
        for goal in goals:
            print(f"goal {goal.name} ...", file=sys.stderr, flush=True)
            # a scripted tier: one per goal (a held-out goal's is its original's)
            model_of = model.replace("{goal}", goal.original or goal.name)
            rows.append(
                run_goal(
                    goal,
                    model_of,
                    cli,
                    out / goal.name,
                    env,
                    with_files=with_files,
                    time_budget=args.time_budget,
                )  # fmt: skip
            )
            base = env.get("OPENAI_BASE_URL")
            if not args.no_plain and model.startswith("openai:") and base:
                chat = plain_chat(base, model.removeprefix("openai:"))
                plain[goal.name] = run_plain(goal, chat, out / goal.name / "plain")
            # written after every goal: a run stopped early still has its rows (--report)
            write_report(out, model, rows, plain, finished=False)
    report = write_report(out, model, rows, plain, finished=True)
    print(json.dumps(report, indent=1) if args.json else table(rows, plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
