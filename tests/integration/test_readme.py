"""The README's and docs' commands, run as a reader would run them (issue 16: the README
drifts; issue 24: the docs/ pages too).

Discovered from README.md and every docs/*.md at collection time, so each page is tested as
it stands (a case's id names its page). Every
command of a ```bash / ```sh block either runs (offline, scripted models, each in a fresh
folder with ``DEEPREFLECT_DB`` there) or matches one of ``SKIPPED``, which says why; one that
matches neither fails as unclassified. A ``<thread-id>`` is a thread in the situation its line
describes (paused for ``resume``, killed mid-run for "crashed", the finished demo for ``show``
and ``export``); ``[--flag]`` options run once without and once with each. The exit code must
be the one the line's comment names (``exit 3``), else the documented one (0; 1 for
``--stop``), and what the comment claims must show (a ``status/stop_reason``, "pauses",
"prints the thread id", "finishes"); ``show`` and ``export`` must match the thread byte for
byte. The ```python snippets run too: model names swapped for scripted ones, the SDK's against
a `langgraph dev`, fragments (``graph``, ``cfg``, ``ctx`` given) one statement at a time on a
fresh paused thread, each checked against the outcome its comment names.

``run_fragment`` is the fragments' runner, in a subprocess.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox.bridge.names import free_names
from tests.langgraph_server import ROOT, dev_server, langgraph_missing

README = ROOT / "README.md"
# Every page whose commands and snippets run here: the README, then docs/ in name order.
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
STATUSES = ("success", "failed", "awaiting_input", "budget_exhausted")
SHOWN_OUTCOME = rf"\b({'|'.join(STATUSES)})(?:/(\w+)|\s\((\w+)\))"  # success/end, failed (x)
SCRIPTED = "scripted:escalation"  # the model a snippet's real model name is swapped for

# Commands not run here, each with its reason (a regex on the command as written).
SKIPPED: tuple[tuple[str, str], ...] = (
    (r"^pip install\b", "installs packages from the network; the suite runs installed"),
    (r"^python -m pytest\b", "the test suite itself"),
    (r"^langgraph (up|build)\b|^docker\b", "needs Docker, which CI does not have"),
    (
        r"openai:|--model\b|--critic\b|OPENAI_BASE_URL=",
        "needs a model provider (an API key or a server)",
    ),
    (
        r"postgres(ql)?://",
        "a placeholder PostgreSQL server (db-host); tests/integration/test_postgres.py runs "
        "a real one",
    ),
    (
        r"^langgraph dev\b",
        "a server that runs until stopped; tests/langgraph_server.py serves the same configs "
        "on a free port for test_server.py and test_js_sdk.py",
    ),
    (
        r"^python bench/",
        "a benchmark: minutes of CPU, some need a local model; `python bench/figures.py` reruns "
        "them and tests/unit/test_figures.py checks the page they write",
    ),
)
# The seeded-errors evaluation takes ~50 s on all of HumanEval: here, its first task only.
BOUNDED = ((r"^deepreflect eval\b", ["--limit", "1"]),)
# What a resume action ends in, as the "How it stops" table (docs/how-it-stops.md) lists it.
ACTION_OUTCOMES = {
    "--accept": ("success", "accepted_by_human"),
    "--stop": ("failed", "stopped_by_human"),
}
# The names a fragment may use without defining them (the runner gives them).
FRAGMENT_NAMES = {"graph", "cfg", "ctx", "thread_id", "agent"}


def _blocks(*languages: str) -> list[tuple[str, str]]:
    """(page and block number, body) of every fenced block in one of ``languages``, page by
    page: ``README.md:3``, ``docs/cli.md:0``."""
    blocks = []
    for page in PAGES:
        found = re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", page.read_text(), re.M | re.S)
        name = page.relative_to(ROOT).as_posix()
        blocks += [(f"{name}:{n}", m[2]) for n, m in enumerate(found) if m[1] in languages]
    return blocks


def _all_text() -> str:
    return "\n".join(page.read_text() for page in PAGES)


# ---- the shell blocks ----


@dataclass
class Line:
    """One command of a shell block, as the README writes it."""

    block: str  # its page and block number
    text: str  # the command, its [optional] groups still in brackets
    comment: str
    env: dict[str, str] = field(default_factory=dict)
    after_skipped_export: str | None = None

    @property
    def id(self) -> str:
        return f"{self.block}:sh:{self.text}"


def _split_comment(line: str) -> tuple[str, str]:
    """``command  # comment`` split at the first ``#`` that starts a word outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1 :].strip()
    return line.strip(), ""


def shell_lines() -> list[Line]:
    lines: list[Line] = []
    for block, body in _blocks("bash", "sh", "shell"):
        skipped_export = None
        for raw in body.replace("\\\n", " ").splitlines():
            command, comment = _split_comment(raw)
            for part in (p.strip() for p in command.split(" && ")):
                if not part:
                    continue
                env: dict[str, str] = {}
                while m := re.match(r"(\w+)=(\S+)\s+", part):
                    env[m.group(1)] = m.group(2)
                    part = part[m.end() :]
                line = Line(block, part, comment, env, skipped_export)
                lines.append(line)
                if part.startswith("export ") and skip_reason(line):
                    skipped_export = part
    return lines


def skip_reason(line: Line) -> str | None:
    for pattern, reason in SKIPPED:
        if re.search(pattern, line.text) or any(re.search(pattern, v) for v in line.env.values()):
            return reason
    if line.after_skipped_export:
        return f"runs in the environment `{line.after_skipped_export}` sets up, skipped"
    return None


OPTIONAL = r"(?<=\s)\[([^\]\[]+)\](?=\s|$)"  # `[--json]`, not `".[dev]"`


def variants(text: str) -> list[list[str]]:
    """The command without its ``[optional]`` groups, then with each group alone."""
    base = shlex.split(re.sub(r"\s+" + OPTIONAL, "", text))
    return [base] + [base + shlex.split(group) for group in re.findall(OPTIONAL, text)]


def expected_exit(line: Line, argv: list[str]) -> int:
    if m := re.search(r"\bexit (\d)\b", line.comment):
        return int(m.group(1))
    return 1 if "--stop" in argv else 0  # the README's exit codes: 0 success, 1 failed


def situation(line: Line, argv: list[str]) -> str | None:
    """Which thread a ``<thread-id>`` stands for, from what the line says and does."""
    if "<thread-id>" not in argv:
        return None
    if "crash" in line.comment:
        return "crashed"
    if argv[1] == "resume" or (argv[1] == "show" and "paused" in line.comment):
        return "paused"
    return "finished"


# ---- running deepreflect ----


def _env(folder: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The reader's environment without the host's keys, threads in ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    env.update({"COLUMNS": "200", "DEEPREFLECT_DB": str(folder / "threads.sqlite")})
    return env | (extra or {})


def _command(argv: list[str]) -> list[str]:
    """``deepreflect`` as installed beside this interpreter (else ``python -m agent.cli``)."""
    script = Path(sys.executable).with_name("deepreflect")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "agent.cli"]
    return program + argv[1:]


def deepreflect(argv: list[str], folder: Path, env: dict | None = None):
    return subprocess.run(
        _command(argv),
        cwd=folder,
        env=_env(folder, env),
        capture_output=True,
        text=True,
        timeout=240,
    )


def _thread_id(output: str) -> str:
    found = re.search(rf"thread ({UUID})", output)
    assert found, f"no thread id in:\n{output}"
    return found.group(1)


def _killed_mid_run(folder: Path) -> tuple[str, str]:
    """``deepreflect demo`` SIGKILLed as its first round starts: a checkpointed thread with
    steps left to run. Returns the thread id and what it printed."""
    proc = subprocess.Popen(
        _command(["deepreflect", "demo"]),
        cwd=folder,
        env=_env(folder, {"PYTHONUNBUFFERED": "1"}),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for row in proc.stdout:
        seen.append(row)
        if row.startswith("round 1:"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    return _thread_id("".join(seen)), "".join(seen)


@dataclass
class Thread:
    """A thread in one situation, in its own database."""

    folder: Path  # holds threads.sqlite
    thread_id: str
    printed: str  # what the command that made it printed
    shown: dict[str, Any]  # `deepreflect show ID --json`

    def copy_into(self, folder: Path) -> None:
        for path in self.folder.glob("threads.sqlite*"):
            shutil.copy(path, folder / path.name)


PRODUCERS = {"paused": ["deepreflect", "demo", "--scenario", "escalation"]}
PRODUCERS["finished"] = ["deepreflect", "demo"]


def _make(name: str, folder: Path) -> Thread:
    if name == "crashed":
        thread_id, printed = _killed_mid_run(folder)
    else:
        done = deepreflect(PRODUCERS[name], folder)
        assert done.returncode == (3 if name == "paused" else 0), done.stdout + done.stderr
        thread_id, printed = _thread_id(done.stdout), done.stdout
    shown = deepreflect(["deepreflect", "show", thread_id, "--json"], folder)
    assert shown.returncode in (0, 1, 3), shown.stdout + shown.stderr
    return Thread(folder, thread_id, printed, json.loads(shown.stdout))


def _workers() -> int:
    return max(2, min(4, os.cpu_count() or 2))


@pytest.fixture(scope="module")
def threads(tmp_path_factory) -> dict[str, Thread]:
    names = ("paused", "finished", "crashed")
    folders = [tmp_path_factory.mktemp(name) for name in names]
    with ThreadPoolExecutor(_workers()) as pool:
        made = dict(zip(names, pool.map(_make, names, folders), strict=True))
    crashed = made["crashed"].shown
    assert crashed["status"] not in ("success", "failed"), f"the killed run finished: {crashed}"
    return made


@dataclass
class Ran:
    argv: list[str]  # as run: placeholders filled, bounds added
    which: str | None
    folder: Path
    done: subprocess.CompletedProcess


CASES = [(line, argv) for line in shell_lines() for argv in variants(line.text)]


def case_id(line: Line, argv: list[str]) -> str:
    return line.id if argv == variants(line.text)[0] else f"{line.id} -> {shlex.join(argv)}"


def _unrunnable(line: Line, argv: list[str]) -> str | None:
    if argv[0] != "deepreflect":
        page = line.block.split(":")[0]
        return f"{page} command `{line.text}` is not classified: run it here or add to SKIPPED"
    if bad := [a for a in argv if re.fullmatch(r"<[^>]+>", a) and a != "<thread-id>"]:
        return f"{line.block} command `{line.text}` has a placeholder this test cannot fill: {bad}"
    return None


def _execute(line: Line, argv: list[str], threads: dict[str, Thread], folder: Path) -> Ran:
    for pattern, extra in BOUNDED:
        if re.search(pattern, line.text):
            argv = argv + extra
    which = situation(line, argv)
    if which:
        threads[which].copy_into(folder)
        argv = [threads[which].thread_id if a == "<thread-id>" else a for a in argv]
    for name, producer in PRODUCERS.items():  # the same command in a fresh folder: reuse it
        if argv == producer and not line.env:
            made = threads[name]
            done = subprocess.CompletedProcess(argv, 3 if name == "paused" else 0, made.printed, "")
            return Ran(argv, None, made.folder, done)
    return Ran(argv, which, folder, deepreflect(argv, folder, line.env))


@pytest.fixture(scope="module")
def ran(threads, tmp_path_factory) -> dict[str, Ran]:
    """Every runnable shell case, run side by side."""
    todo = [(ln, a) for ln, a in CASES if not skip_reason(ln) and not _unrunnable(ln, a)]
    folders = [tmp_path_factory.mktemp("command") for _ in todo]
    with ThreadPoolExecutor(_workers()) as pool:
        results = pool.map(lambda c, folder: _execute(c[0], c[1], threads, folder), todo, folders)
        return {case_id(*case): result for case, result in zip(todo, results, strict=True)}


def test_the_readme_has_commands_to_test():
    runnable = [line for line in shell_lines() if not skip_reason(line)]
    in_readme = [line for line in runnable if line.block.startswith("README.md:")]
    assert len(in_readme) >= 5, [line.text for line in shell_lines()]
    from_docs = {line.block.split(":")[0] for line in runnable} - {"README.md"}
    assert "docs/cli.md" in from_docs, from_docs  # the docs' commands are discovered too


@pytest.mark.parametrize(("line", "argv"), CASES, ids=[case_id(*case) for case in CASES])
def test_a_readme_command_does_what_the_readme_says(line: Line, argv: list[str], request):
    if reason := skip_reason(line):
        pytest.skip(f"`{line.text}`: {reason}")
    if problem := _unrunnable(line, argv):
        pytest.fail(problem)
    threads: dict[str, Thread] = request.getfixturevalue("threads")
    run = request.getfixturevalue("ran")[case_id(line, argv)]
    out, argv = run.done.stdout, run.argv
    shown = f"`{shlex.join(argv)}` ({line.comment or 'no comment'}):\n{out}{run.done.stderr}"
    assert run.done.returncode == expected_exit(line, argv), shown
    assert "Traceback" not in run.done.stderr, shown

    for status, slash, paren in re.findall(SHOWN_OUTCOME, line.comment):
        assert f"{status} ({slash or paren})" in out, shown
    if "pauses" in line.comment:
        assert "awaiting_input" in out, shown
    if "prints the thread id" in line.comment:
        assert re.search(rf"deepreflect resume {UUID}", out), shown
    action = next((a for a in ACTION_OUTCOMES if a in argv), None)
    if argv[1] == "resume" and action:  # the README's table lists the outcome, and it happens
        status, reason = ACTION_OUTCOMES[action]
        assert re.search(rf"\|\s*`{status}`\s*\|\s*`{reason}`\s*\|", _all_text()), action
        assert f"{status} ({reason})" in out, shown
    elif argv[1] == "resume" and re.search(r"\bfinish", line.comment):
        assert "success (" in out, shown
    if run.which == "crashed":  # the killed run went on from its checkpoint to its end
        assert "success (" in out, shown
    if argv[1] == "show":
        _check_show(argv, out, threads[run.which or "finished"])
    if argv[1] == "export":
        _check_export(argv, run.folder, threads[run.which or "finished"])


def _check_show(argv: list[str], out: str, thread: Thread) -> None:
    if "--file" in argv:  # the file's content, as the thread holds it
        path = argv[argv.index("--file") + 1]
        assert path in thread.shown["artifacts"], f"`show --json` lists no {path}: {thread.shown}"
        digest = thread.shown["artifacts"][path]["sha256"]
        printed = {hashlib.sha256(o.encode()).hexdigest() for o in (out, out.removesuffix("\n"))}
        assert digest in printed, out
    elif "--json" in argv:
        assert json.loads(out) == thread.shown
    else:
        assert f"{thread.shown['status']} ({thread.shown['stop_reason']})" in out, out
        assert all(path in out for path in thread.shown["artifacts"]), out
        if question := (thread.shown.get("escalation") or {}).get("question"):
            assert question in out, out  # a paused thread shows what it asks


def _check_export(argv: list[str], folder: Path, thread: Thread) -> None:
    """Byte for byte: each exported file hashes as the thread's artifact does."""
    target = folder / argv[3]
    written = {
        p.relative_to(target).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in target.rglob("*")
        if p.is_file() and p.name != "deepreflect-export.json"
    }
    artifacts = thread.shown["artifacts"]
    done = {path for path, a in artifacts.items() if a["status"] == "done"}
    assert done <= set(written), written
    if "--all" not in argv:
        assert set(written) == done, written
    for path, digest in written.items():
        if path in artifacts:
            assert artifacts[path]["sha256"] == digest, path


# What the README says the plain `deepreflect demo` shows, and the output that proves it.
DEMO_CLAIMS = (
    (r"plans four steps", r"^ S4 .*\n(?! S5 )"),
    (r"runs two of them in parallel", r"running \S+, \S+ in parallel"),
    (r"`pytest` check failing with the real assertion", r"check pytest: fail.*AssertionError"),
    (r"the patch that fixes it", r"edit_file .*\n.*check pytest: pass"),
    (r"a step that stalls", r"\(stalled\)"),
    (r"a step that oscillates|oscillat", r"\(oscillating\)"),
    (r"a replan", r"reflection → replan"),
    (r"ends with `success`", r"^success \("),
)


def test_the_demo_shows_what_the_readme_says_it_shows(threads):
    text = " ".join(README.read_text().split())
    described = re.search(r"`deepreflect demo` .*?\.(\s|$)", text)
    assert described, "the README no longer describes what `deepreflect demo` shows"
    out = threads["finished"].printed  # `deepreflect demo`
    missing = [
        claim
        for claim, proof in DEMO_CLAIMS
        if re.search(claim, described.group(0)) and not re.search(proof, out, re.M)
    ]
    assert not missing, f"the README says the demo shows {missing}; it prints:\n{out}"


# ---- the python blocks ----


def python_kind(code: str) -> tuple[str, str | None]:
    """(kind, skip reason): ``script``, ``sdk`` (needs a server), ``fragment`` or ``skip``."""
    if re.search(r"postgres(ql)?://", code):
        return "skip", dict(SKIPPED)[r"postgres(ql)?://"]
    if "get_sync_client" in code or "get_client" in code:
        return "sdk", langgraph_missing()
    free = free_names(code) - set(dir(builtins))
    if not free:
        return "script", None
    if free <= FRAGMENT_NAMES:
        return "fragment", None
    return "unclassified", f"uses {sorted(free - FRAGMENT_NAMES)}, which no runner here gives"


PY_CASES = [pytest.param(code, id=f"{n}:py") for n, code in _blocks("python")]


def _offline(code: str) -> str:
    """The snippet with real model names swapped for a scripted one."""
    return re.sub(r"openai:[\w.\-]+", SCRIPTED, code)


def _python(code: str, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = _env(folder, {"PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture(scope="module")
def sdk_url(tmp_path_factory):
    with dev_server(tmp_path_factory.mktemp("readme-server") / "langgraph-dev.log") as url:
        yield url


@pytest.mark.parametrize("code", PY_CASES)
def test_a_readme_python_snippet_runs(code: str, tmp_path, request):
    kind, reason = python_kind(code)
    if kind == "unclassified":
        pytest.fail(f"README python snippet {reason}:\n{code}")
    if reason:
        pytest.skip(reason)
    if kind == "fragment":
        _check_fragment(code, tmp_path)
        return
    if kind == "sdk":
        url = request.getfixturevalue("sdk_url")
        code = re.sub(r"http://(127\.0\.0\.1|localhost):\d+", url, code)
    done = _python(_offline(code), tmp_path)
    assert done.returncode == 0, f"{code}\n{done.stdout}{done.stderr}"
    if re.search(r"print\(result\[\"status\"\]", code):  # the run it started finished
        assert done.stdout.splitlines()[-1].startswith("success"), done.stdout
    if kind == "sdk":  # the nodes its comment says the stream shows
        for node in re.findall(r"\b(planner|subagent|reflection|finalize)\b", code):
            assert node in done.stdout, done.stdout


def _statements(code: str) -> tuple[str, list[tuple[str, str]]]:
    """A fragment as (its imports, [(statement, its trailing comment)])."""
    tree = ast.parse(code)
    lines = code.splitlines()
    imports, statements = [], []
    for node in tree.body:
        source = ast.get_source_segment(code, node) or ""
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(source)
        else:
            end = lines[(node.end_lineno or node.lineno) - 1]
            statements.append((source, _split_comment(end)[1]))
    return "\n".join(imports), statements


def _check_fragment(code: str, folder: Path) -> None:
    imports, statements = _statements(code)
    spec = {"imports": imports, "statements": [s for s, _ in statements]}
    runner = "from tests.integration.test_readme import run_fragment; run_fragment()"
    done = _python(runner, folder, json.dumps(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    outcomes = json.loads(done.stdout.splitlines()[-1])
    for (statement, comment), outcome in zip(statements, outcomes, strict=True):
        assert outcome["error"] is None, f"{statement}\n{outcome['error']}"
        for status, slash, paren in re.findall(SHOWN_OUTCOME, comment):
            outcome_shown = (outcome["status"], outcome["stop_reason"])
            assert outcome_shown == (status, slash or paren), statement


def run_fragment() -> None:
    """Run each statement of ``sys.argv[1]``'s fragment on a fresh paused thread (the
    escalation scenario), with ``graph``, ``cfg``, ``ctx``, ``thread_id`` and ``agent`` given;
    print each one's error and the thread's status and stop reason after it, as JSON."""
    import sqlite3
    import traceback

    from langgraph.checkpoint.sqlite import SqliteSaver

    import agent
    from agent import Context, build_graph, run
    from agent.runs.runner import thread_config

    spec = json.loads(sys.argv[1])
    saver = SqliteSaver(sqlite3.connect("fragment.sqlite", check_same_thread=False))
    graph = build_graph(checkpointer=saver)
    ctx = Context(model=SCRIPTED)
    outcomes = []
    for statement in spec["statements"]:
        paused = run(graph, "Write a report", context=ctx)
        thread_id = paused["thread_id"]
        assert paused["status"] == "awaiting_input" and thread_id, paused
        cfg = thread_config(thread_id)
        names = {"graph": graph, "cfg": cfg, "ctx": ctx, "agent": agent, "thread_id": thread_id}
        error = None
        try:
            exec(spec["imports"] + "\n" + statement, names)
        except Exception:
            error = traceback.format_exc()
        values = graph.get_state(cfg).values
        status, reason = values.get("status"), values.get("stop_reason")
        outcomes.append({"error": error, "status": status, "stop_reason": reason})
    print(json.dumps(outcomes))
