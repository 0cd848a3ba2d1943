"""The CLI's rough edges, as a new user meets them (issue 23, item 6): Ctrl-C, ``--force``
with ``--out``, what ``show`` tells of a human's part, budget continuation, bad paths and an
empty goal, and which commands stay light to start."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from tests.fakes import ROOT, cli


def _silent_server() -> tuple[socket.socket, int]:
    """A loopback listener that accepts and never answers: a model request that hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


def test_ctrl_c_prints_one_line_with_the_resume_command_and_exits_130(tmp_path):
    server, port = _silent_server()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    env |= {
        "PYTHONPATH": ROOT,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "unused",
        "COLUMNS": "200",
    }
    db = tmp_path / "t.sqlite"
    argv = [sys.executable, "-m", "agent.cli", "run", "Write notes.md", "--model", "openai:m"]
    proc = subprocess.Popen(
        [*argv, "--thread", "t-ctrl-c", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while "thread t-ctrl-c" not in (proc.stdout.readline() if proc.stdout else ""):
            assert time.monotonic() < deadline and proc.poll() is None, "the run did not start"
        time.sleep(1.0)  # the planner's request is now waiting on the silent server
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "deepreflect resume t-ctrl-c" in lines[0], err
    shown = cli("show", "t-ctrl-c", "--json", db=db)
    assert shown.returncode == 0, shown.stderr  # the thread is there to resume


def test_resume_out_into_an_earlier_export_succeeds_and_force_overwrites(tmp_path):
    db, out = tmp_path / "t.sqlite", tmp_path / "out"
    paused = cli("demo", "--scenario", "escalation", "--json", "--out", str(out), db=db)
    assert paused.returncode == 3, paused.stderr
    thread_id = json.loads(paused.stdout)["thread_id"]
    (out / "notes.md").write_text("mine\n")
    refused = cli("resume", thread_id, "engineers", "--out", str(out), db=db)
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert (out / "notes.md").read_text() == "mine\n"
    forced = cli("resume", thread_id, "--out", str(out), "--force", db=db)
    assert forced.returncode == 0, forced.stderr
    assert (out / "notes.md").read_text() != "mine\n"


def test_show_tells_the_humans_answer_accept_and_stop(tmp_path):
    db = tmp_path / "t.sqlite"
    answered = json.loads(cli("demo", "--scenario", "escalation", "--json", db=db).stdout)
    assert cli("resume", answered["thread_id"], "engineers", db=db).returncode == 0
    shown = cli("show", answered["thread_id"], db=db).stdout
    assert "human answered: engineers" in shown
    assert "round None" not in shown

    for flag, words in (("--stop", "human: stopped the run"), ("--accept", "human: accepted")):
        paused = json.loads(cli("demo", "--scenario", "depth-cap", "--json", db=db).stdout)
        assert cli("resume", paused["thread_id"], flag, db=db).returncode in (0, 1)
        shown = cli("show", paused["thread_id"], db=db).stdout
        assert words in shown, shown
        assert "round None" not in shown and "goal: None" not in shown


def test_show_names_the_goal_of_a_python_run_that_failed(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agent import build_graph, run
    from agent.models import ScriptedChatModel

    db = tmp_path / "t.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        broken = ScriptedChatModel(["not a plan", "still not a plan", "nor this"])
        graph = build_graph(models={"default": broken}, checkpointer=saver)
        run(graph, "Write a haiku about tides", thread_id="t-failed")
    shown = cli("show", "t-failed", db=db)
    assert shown.returncode == 0, shown.stderr
    assert "goal: Write a haiku about tides" in shown.stdout


def test_a_budget_stop_continues_from_the_cli_with_a_higher_budget(tmp_path):
    db = tmp_path / "t.sqlite"
    stopped = cli("demo", "--token-budget", "300", "--json", db=db)
    result = json.loads(stopped.stdout)
    assert (stopped.returncode, result["status"]) == (3, "budget_exhausted"), stopped.stderr
    resumed = cli("resume", result["thread_id"], "--token-budget", "10000000", "--json", db=db)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "success"


def test_an_export_into_a_file_and_an_empty_goal_are_clear_usage_errors(tmp_path):
    db = tmp_path / "t.sqlite"
    done = json.loads(cli("demo", "--scenario", "happy", "--json", db=db).stdout)
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    exported = cli("export", done["thread_id"], str(a_file), db=db)
    assert exported.returncode == 2
    assert "is a file, not a folder" in exported.stderr and "Errno" not in exported.stderr

    before = cli("threads", db=db).stdout
    for goal in ("", "   \n"):
        empty = cli("run", goal, "--model", "scripted:happy", db=db)
        assert empty.returncode == 2 and "the goal is empty" in empty.stderr
    assert cli("threads", db=db).stdout == before  # no junk thread was made


def test_show_threads_and_export_load_no_graph_and_no_model_library(tmp_path):
    db = tmp_path / "t.sqlite"
    thread_id = json.loads(cli("demo", "--scenario", "happy", "--json", db=db).stdout)["thread_id"]
    probe = (
        "import sys\n"
        "from agent.cli import main\n"
        f"for argv in (['show', {thread_id!r}], ['threads'], "
        f"['export', {thread_id!r}, {str(tmp_path / 'out')!r}]):\n"
        f"    assert main([*argv, '--db', {str(db)!r}]) == 0, argv\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('langchain', "
        "'langchain_openai', 'openai') or m in ('langgraph.graph', 'langgraph.pregel'))\n"
        "print('loaded:', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"loaded: \[\]", done.stderr), done.stderr
