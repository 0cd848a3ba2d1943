"""Threads in a real PostgreSQL server: paused in one process, resumed from another.

The server comes from ``tests/postgres.py`` (``$DEEPREFLECT_TEST_PG`` or a throwaway local
cluster); without one these tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip(
    "langgraph.checkpoint.postgres",
    reason="PostgreSQL threads need `pip install -e '.[postgres]'` (langgraph-checkpoint-postgres)",
)

from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402

from agent import Context, build_graph, open_checkpointer, run  # noqa: E402
from agent.cli import main  # noqa: E402
from agent.runner import thread_config  # noqa: E402

pytest_plugins = ["tests.postgres"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_FILES = {"notes/requirements.md", "test_slugify.py", "slugify.py", "README.md"}


def cli(*args: str, db: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    env.update({"COLUMNS": "200", "PYTHONPATH": ROOT})
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--db", db],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_escalation_pauses_in_one_process_and_another_resumes_it(postgres_url):
    paused = cli("demo", "--scenario", "escalation", db=postgres_url)
    assert paused.returncode == 3, paused.stderr
    assert "Who is the report for" in paused.stdout
    thread_id = re.search(r"deepreflect resume (\S+)", paused.stdout).group(1)

    finished = cli("resume", thread_id, "engineers", "--json", db=postgres_url)
    assert finished.returncode == 0, finished.stderr
    result = json.loads(finished.stdout)
    assert result["status"] == "success" and result["thread_id"] == thread_id
    assert result["plan_version"] == 2
    assert result["artifacts"] and all(a["status"] == "done" for a in result["artifacts"].values())

    listed = cli("threads", db=postgres_url)
    assert listed.returncode == 0, listed.stderr
    line = next(row for row in listed.stdout.splitlines() if row.startswith(thread_id))
    assert "success" in line


def test_a_fresh_saver_sees_every_file_of_a_finished_thread(postgres_url):
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        graph = build_graph(checkpointer=saver)
        result = run(graph, "demo goal", context=Context(model="scripted:demo"))
        first = graph.get_state(thread_config(result["thread_id"])).values
    assert result["status"] == "success" and result["plan_version"] == 2
    assert set(result["artifacts"]) == DEMO_FILES

    # A new connection and a new graph rebuild the DeltaChannel keys from stored writes only.
    with open_checkpointer(postgres_url.replace("postgresql://", "postgres://", 1)) as saver:
        assert isinstance(saver, PostgresSaver)
        again = build_graph(checkpointer=saver).get_state(thread_config(result["thread_id"]))
    values = again.values
    assert {path: entry["status"] for path, entry in values["files"].items()} == dict.fromkeys(
        DEMO_FILES, "done"
    )
    for key in ("files", "trajectory", "decisions", "plan_history", "plan", "status"):
        assert values[key] == first[key], key
    assert "def slugify" in values["files"]["slugify.py"]["content"]
    assert [d["decision"] for d in values["decisions"]][-1] == "end"


def test_deepreflect_db_selects_postgres(postgres_url, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DEEPREFLECT_DB", postgres_url)
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--scenario", "happy", "--json"]) == 0
    thread_id = json.loads(capsys.readouterr().out)["thread_id"]
    assert main(["show", thread_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "success"
    assert not (tmp_path / ".deepreflect").exists()  # nothing went to the SQLite default


def test_an_unreachable_server_is_a_usage_error_without_the_password(capsys, monkeypatch):
    # Port 1 on the loopback refuses at once; no server needed for this one.
    monkeypatch.setenv("COLUMNS", "500")  # rich would wrap the URL
    assert main(["threads", "--db", "postgresql://bob:s3cret@127.0.0.1:1/deepreflect"]) == 2
    err = capsys.readouterr().err
    assert "cannot use PostgreSQL at postgresql://bob:***@127.0.0.1:1/deepreflect" in err
    assert "s3cret" not in err
