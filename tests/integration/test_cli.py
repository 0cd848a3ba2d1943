"""The console script in real subprocesses: exit codes, pause and resume across processes."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.models.scenarios import SCENARIO_GOALS
from tests.fakes import ROOT, cli

SAMPLE = Path(ROOT) / "datasets" / "sample.jsonl"

pytest_plugins = ["tests.postgres"]


def test_demo_shows_parallel_steps_a_failed_check_a_replan_and_success(tmp_path):
    done = cli("demo", db=tmp_path / "t.sqlite")
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "running S1, S2 in parallel" in out
    assert "check pytest: fail" in out and "AssertionError" in out
    assert "edit_file slugify.py" in out and "check pytest: pass" in out
    assert "reflection → replan" in out and "plan v2" in out
    assert "success (end)" in out


def test_a_run_under_the_weaker_sandbox_warns_on_stderr_and_keeps_json_clean(tmp_path):
    weaker = cli(
        "demo", "--json", db=tmp_path / "a.sqlite", env_extra={"DEEPREFLECT_SANDBOX": "process"}
    )
    assert weaker.returncode == 0, weaker.stderr
    assert "warning: generated code runs in the weaker process sandbox" in weaker.stderr
    assert json.loads(weaker.stdout)["status"] == "success"

    kernel = cli(
        "demo", "--json", db=tmp_path / "b.sqlite", env_extra={"DEEPREFLECT_SANDBOX": "kernel"}
    )
    if kernel.returncode == 0:  # bubblewrap usable here
        assert "warning" not in kernel.stderr


def test_escalation_exits_3_and_a_new_process_resumes_it(threads_db):
    paused = cli("demo", "--scenario", "escalation", db=threads_db)
    assert paused.returncode == 3, paused.stderr
    assert "Who is the report for" in paused.stdout
    thread_id = re.search(r"deepreflect resume (\S+)", paused.stdout).group(1)
    finished = cli("resume", thread_id, "engineers", "--json", db=threads_db)
    assert finished.returncode == 0, finished.stderr
    result = json.loads(finished.stdout)
    assert result["status"] == "success" and result["thread_id"] == thread_id
    assert result["artifacts"] and all(a["status"] == "done" for a in result["artifacts"].values())
    shown = cli("show", thread_id, "--json", db=threads_db)
    assert json.loads(shown.stdout)["plan_version"] == 2
    listed = cli("threads", db=threads_db)
    line = next(row for row in listed.stdout.splitlines() if row.startswith(thread_id))
    assert "success" in line


def test_json_result_has_the_documented_fields(tmp_path):
    done = cli("demo", "--scenario", "depth-cap", "--json", db=tmp_path / "t.sqlite")
    assert done.returncode == 3
    result = json.loads(done.stdout)
    for key in (
        "status",
        "stop_reason",
        "converged",
        "final_answer",
        "artifacts",
        "open_issues",
        "rounds",
        "plan_version",
        "usage",
        "thread_id",
    ):
        assert key in result
    assert result["stop_reason"] == "depth_cap"


def test_openai_without_credentials_is_a_usage_error(tmp_path):
    done = cli("run", "a goal", "--model", "openai:gpt-4.1-mini", db=tmp_path / "t.sqlite")
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr and "OPENAI_BASE_URL" in done.stderr
    assert "deepreflect demo" in done.stderr


def test_unknown_thread_is_a_usage_error(tmp_path):
    done = cli("resume", "no-such-thread", "hi", db=tmp_path / "t.sqlite")
    assert done.returncode == 2 and "not found" in done.stderr


def test_a_depth_capped_demo_is_accepted_or_stopped_at_once_from_the_cli(tmp_path):
    for flag, status, stop_reason, code in (
        ("--accept", "success", "accepted_by_human", 0),
        ("--stop", "failed", "stopped_by_human", 1),
    ):
        db = tmp_path / f"{flag}.sqlite"
        paused = cli("demo", "--scenario", "depth-cap", "--json", db=db)
        assert paused.returncode == 3, paused.stderr
        before = json.loads(paused.stdout)
        done = cli("resume", before["thread_id"], flag, "--json", db=db)
        result = json.loads(done.stdout)
        assert done.returncode == code, done.stderr
        assert (result["status"], result["stop_reason"]) == (status, stop_reason)
        assert result["converged"] is False
        assert result["usage"] == before["usage"]  # no model was called


def test_export_writes_the_threads_artifacts_as_they_are_and_show_prints_one(tmp_path):
    db = tmp_path / "t.sqlite"
    out = tmp_path / "out"
    done = cli("demo", "--json", "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    thread_id = json.loads(done.stdout)["thread_id"]
    shown = cli("show", thread_id, "--file", "slugify.py", db=db)
    assert shown.returncode == 0 and (out / "slugify.py").read_text() == shown.stdout

    same = cli("export", thread_id, str(out), db=db)
    assert same.returncode == 0, same.stderr  # the same bytes again: nothing to overwrite
    (out / "slugify.py").write_text("# the user's own edit\n")
    again = cli("export", thread_id, str(out), db=db)
    assert again.returncode == 2 and "exists with other content" in again.stderr
    assert (out / "slugify.py").read_text() == "# the user's own edit\n"  # never overwritten
    forced = cli("export", thread_id, str(out), "--force", "--all", db=db)
    assert forced.returncode == 0, forced.stderr
    assert (
        json.loads((out / "deepreflect-export.json").read_text())["slugify.py"]["status"] == "done"
    )


# ------------------------------------------------------------------ startup


def test_help_loads_neither_langgraph_nor_langchain():
    probe = (
        "import sys\n"
        "from agent.cli import main\n"
        "for argv in (['--help'], ['threads', '--help'], ['run', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', 'langchain_core',"
        " 'langchain', 'pydantic', 'openai'})\n"
        "print('loaded:', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stderr
    assert "--reflection-model" in done.stdout and "--mcp-config" in done.stdout


# ------------------------------------------------------------------ run settings


def _stored_context(db, thread_id: str) -> dict:
    from agent import open_checkpointer
    from agent.store.threads import thread_values

    with open_checkpointer(str(db), write=False) as saver:
        return thread_values(saver, thread_id)["context"]


def test_every_run_setting_comes_from_the_environment_and_a_flag_wins(tmp_path):
    db = tmp_path / "t.sqlite"
    env = {
        "DEEPREFLECT_MODEL": "scripted:happy",
        "DEEPREFLECT_STRUCTURED_OUTPUT": "json_schema",
        "DEEPREFLECT_MAX_PARALLEL": "8",
        "DEEPREFLECT_TOKEN_BUDGET": "50000",
        "DEEPREFLECT_REQUEST_TIMEOUT_S": "30",
    }
    from_env = cli("run", "a goal", "--thread", "env", "--json", db=db, env_extra=env)
    assert from_env.returncode == 0, from_env.stderr
    stored = _stored_context(db, "env")
    assert (stored["model"], stored["structured_output"], stored["max_parallel"]) == (
        "scripted:happy",
        "json_schema",
        8,
    )
    assert (stored["token_budget"], stored["request_timeout_s"]) == (50000, 30.0)

    flags = [
        *("--structured-output", "function_calling", "--max-parallel", "4"),  # 4: the default
        *("--token-budget", "9000", "--time-budget", "60", "--max-revisions", "1"),
        *("--request-timeout", "5", "--planner-model", "scripted:happy"),
        *("--subagent-model", "scripted:happy", "--judge-model", "scripted:happy"),
        *("--reflection-model", "scripted:happy"),
    ]
    flagged = cli("run", "a goal", "--thread", "flags", *flags, "--json", db=db, env_extra=env)
    assert flagged.returncode == 0, flagged.stderr
    stored = _stored_context(db, "flags")
    assert stored["structured_output"] == "function_calling" and stored["max_parallel"] == 4
    assert (stored["token_budget"], stored["time_budget_s"], stored["max_revisions"]) == (
        9000,
        60.0,
        1,
    )
    assert stored["request_timeout_s"] == 5.0
    for role in ("planner", "subagent", "judge", "reflection"):
        assert stored[f"{role}_model"] == "scripted:happy", role


@pytest.mark.parametrize(
    ("env", "flags", "words"),
    [
        (
            {"DEEPREFLECT_MAX_PARALLEL": "lots"},
            [],
            "max_parallel must be an integer, got 'lots' (str) (from $DEEPREFLECT_MAX_PARALLEL)",
        ),
        (
            {"DEEPREFLECT_STRUCTURED_OUTPUT": "xml"},
            [],
            "unknown structured_output 'xml'; expected one of auto, function_calling",
        ),
        ({}, ["--request-timeout", "0"], "request_timeout_s must be positive, got 0.0"),
        ({}, ["--max-parallel", "lots"], "argument --max-parallel: invalid int value: 'lots'"),
        ({}, ["--structured-output", "xml"], "argument --structured-output: invalid choice"),
    ],
)
def test_a_bad_setting_from_the_environment_or_a_flag_is_a_usage_error(env, flags, words, tmp_path):
    db = tmp_path / "t.sqlite"
    done = cli("run", "g", "--model", "scripted:happy", *flags, db=db, env_extra=env)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr
    assert not db.exists()  # refused before the database was opened


def test_resume_takes_settings_for_its_turn_and_keeps_the_rest_of_the_threads(tmp_path):
    db = tmp_path / "t.sqlite"
    env = {"DEEPREFLECT_MAX_REVISIONS": "1"}
    paused = cli("demo", "--scenario", "escalation", "--max-parallel", "3", "--json", db=db)
    assert paused.returncode == 3, paused.stderr
    thread_id = json.loads(paused.stdout)["thread_id"]
    done = cli(
        "resume", thread_id, "engineers", "--time-budget", "100", "--json", db=db, env_extra=env
    )
    assert done.returncode == 0, done.stderr
    stored = _stored_context(db, thread_id)
    assert (stored["time_budget_s"], stored["max_parallel"]) == (100.0, 3)
    assert stored["max_revisions"] == 2  # the thread's own, not the environment's


def test_an_mcp_config_from_the_flag_or_the_environment_gives_its_tools_to_the_run(tmp_path):
    db = tmp_path / "t.sqlite"
    missing = tmp_path / "nope.json"
    by_flag = cli("run", "g", "--model", "scripted:happy", "--mcp-config", str(missing), db=db)
    assert by_flag.returncode == 2 and f"MCP config {str(missing)!r} not found" in by_flag.stderr
    by_env = cli(
        "run", "g", "--model", "scripted:happy", db=db,
        env_extra={"DEEPREFLECT_MCP_CONFIG": str(missing)},
    )  # fmt: skip
    assert by_env.returncode == 2 and "not found" in by_env.stderr
    empty = tmp_path / "mcp.json"
    empty.write_text('{"mcpServers": {}}')
    done = cli("run", "g", "--model", "scripted:happy", "--mcp-config", str(empty), db=db)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ threads, show, delete, prune


def test_read_only_commands_on_a_missing_database_create_nothing(tmp_path):
    db = tmp_path / "sub" / "threads.sqlite"
    listed = cli("threads", db=db)
    assert listed.returncode == 0 and "no threads: there is no threads database at" in listed.stdout
    for command in (["show", "t"], ["export", "t", str(tmp_path / "out")], ["show", "t", "--json"]):
        done = cli(*command, db=db)
        assert done.returncode == 2 and "thread 't' not found in " in done.stderr, command
    pruned = cli("prune", "--older-than", "1d", db=db)
    assert pruned.returncode == 0 and "nothing to prune" in pruned.stdout
    deleted = cli("threads", "--delete", "t", db=db)
    assert deleted.returncode == 2
    assert not db.parent.exists() and not (tmp_path / "out").exists()


def test_threads_lists_a_header_with_dates_and_says_when_there_are_none(tmp_path):
    db = tmp_path / "t.sqlite"
    assert cli("demo", "--scenario", "happy", db=db).returncode == 0
    listed = cli("threads", db=db)
    header, row = listed.stdout.splitlines()
    assert header.split() == ["thread", "created", "updated", "status", "goal"]
    thread_id, created, created_at, updated, updated_at, status, *goal = row.split()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", created) and re.fullmatch(r"\d\d:\d\d", updated_at)
    assert (created, created_at) <= (updated, updated_at) and status == "success"
    assert " ".join(goal) == SCENARIO_GOALS["happy"]

    deleted = cli("threads", "--delete", thread_id, db=db)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith(f"deleted {thread_id}  success, updated ")
    none = cli("threads", db=db)
    assert none.returncode == 0 and "no threads in " in none.stdout and "yet" in none.stdout


def _poll(condition, what: str, deadline_s: float = 30.0):
    deadline = time.monotonic() + deadline_s
    while True:
        if (value := condition()) is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_a_running_thread_is_kept_and_a_killed_one_is_shown_as_interrupted(threads_db):
    paused = cli("demo", "--scenario", "escalation", "--json", db=threads_db)
    thread_id = json.loads(paused.stdout)["thread_id"]
    assert cli("demo", "--scenario", "happy", db=threads_db).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.lease_worker", threads_db, thread_id, "engineers"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**env, "PYTHONPATH": ROOT},
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "leased\n"
        running = cli("threads", db=threads_db)
        assert re.search(rf"^{thread_id} .* running +", running.stdout, re.M), running.stdout
        shown = cli("show", thread_id, db=threads_db)
        assert f"running (process {worker.pid} on " in shown.stdout or "PostgreSQL session" in (
            shown.stdout
        )
        refused = cli("threads", "--delete", thread_id, db=threads_db)
        assert refused.returncode == 4 and f"thread {thread_id} is busy" in refused.stderr
        pruned = cli("prune", "--older-than", "0s", db=threads_db)
        assert pruned.returncode == 4 and f"thread {thread_id} is busy" in pruned.stderr
        assert pruned.stdout.startswith("deleted ")  # the other, finished thread
    finally:
        worker.kill()
        worker.wait()

    def interrupted():
        shown = cli("show", thread_id, db=threads_db)
        return shown if "interrupted" in shown.stdout else None

    shown = _poll(interrupted, "the killed worker's lease to go")
    assert shown.returncode == 0 and "running (None)" not in shown.stdout
    assert f"interrupted (its run stopped unfinished)  thread {thread_id}" in shown.stdout
    assert f"deepreflect resume {thread_id} continues it" in shown.stdout
    assert re.search(rf"^{thread_id} .* interrupted +", cli("threads", db=threads_db).stdout, re.M)

    resumed = cli("resume", thread_id, "--json", db=threads_db)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "success"
    assert cli("prune", "--older-than", "0s", db=threads_db).returncode == 0
    assert "no threads in " in cli("threads", db=threads_db).stdout


def test_prune_keeps_what_is_newer_than_its_age_and_refuses_a_bad_one(tmp_path):
    db = tmp_path / "t.sqlite"
    assert cli("demo", "--scenario", "happy", db=db).returncode == 0
    kept = cli("prune", "--older-than", "1h", db=db)
    assert (
        kept.returncode == 0 and "no thread in " in kept.stdout and "older than 1h" in kept.stdout
    )
    bad = cli("prune", "--older-than", "soon", db=db)
    assert bad.returncode == 2 and "--older-than wants a duration" in bad.stderr
    assert len(cli("threads", db=db).stdout.splitlines()) == 2


# ------------------------------------------------------------------ eval output


def _report(ids: list[str]) -> dict:
    task = {
        "first_correct": False,
        "final_correct": True,
        "change": "fix",
        "rounds": 2,
        "stop_reason": "converged",
        "tokens": {"on": 1234, "off": 500},
        "calls": {"on": 3, "off": 1},
    }
    summary = {
        "tasks": len(ids), "errors": 0, "first_correct": 0, "final_correct": len(ids),
        "fixes": len(ids), "regressions": 0, "unchanged_right": 0, "unchanged_wrong": 0,
        "net_fixes": len(ids), "stop_reasons": {"converged": len(ids)}, "avg_rounds": 2,
        "critic": None, "tokens": {"on": 1, "off": 1}, "calls": {"on": 1, "off": 1},
    }  # fmt: skip
    return {
        "mode": "reflection",
        "tasks": [{"id": i, **task} for i in ids],
        "summary": summary,
        "dataset": "humaneval",
        "model": "openai:gpt-4.1-mini",
        "critic": None,
        "evidence": "check",
        "max_revisions": 2,
        "wall_time_s": 1.0,
        "workers": 4,
    }


def test_the_eval_report_prints_whole_task_ids_in_80_columns():
    from rich.console import Console

    from agent.eval import print_report

    sink = io.StringIO()
    print_report(Console(file=sink, width=80), _report(["HumanEval/0", "HumanEval/163"]))
    out = sink.getvalue()
    assert "HumanEval/163" in out and "HumanEval/0 " in out and "HumanEval/…" not in out


def test_eval_progress_is_a_bar_on_a_terminal_and_short_plain_lines_otherwise():
    from rich.console import Console

    from agent.eval.report import eval_progress

    plain = io.StringIO()
    with eval_progress(Console(file=plain, width=80)) as progress:
        for done in range(1, 101):
            progress(done, 100)
    lines = plain.getvalue().splitlines()
    assert 10 <= len(lines) <= 21 and lines[-1].startswith("evaluating: 100/100 tasks, ")
    assert re.fullmatch(r"evaluating: 5/100 tasks, \d+s elapsed, about \d+s left", lines[0])

    bar = io.StringIO()
    with eval_progress(Console(file=bar, width=100, force_terminal=True)) as progress:
        progress(1, 3)
        progress(3, 3)
    assert "evaluating" in bar.getvalue() and "3/3" in bar.getvalue()


def test_the_eval_command_shows_its_progress_on_stderr():
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--dataset", str(SAMPLE), "--seeded-errors",
         "--limit", "2", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
             "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "evaluating: 2/2 tasks, " in done.stderr
    assert json.loads(done.stdout)["summary"]["problems"] == 2


def test_show_into_a_pipe_whose_reader_has_gone_exits_quietly(tmp_path):
    db = tmp_path / "t.sqlite"
    thread = json.loads(cli("demo", "--json", db=db).stdout)["thread_id"]
    shown = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "show", thread, "--db", str(db)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert shown.stdout is not None and shown.stderr is not None
    shown.stdout.close()  # like `| head` that has read enough: every write meets EPIPE
    error = shown.stderr.read().decode()
    assert shown.wait(timeout=60) == 0
    assert "BrokenPipe" not in error and "error" not in error


def test_the_demo_shows_the_patch_that_fixes_the_failing_check(tmp_path):
    done = cli("demo", db=tmp_path / "t.sqlite")
    lines = done.stdout.splitlines()
    at = next(i for i, text in enumerate(lines) if "edit_file slugify.py" in text)
    assert lines[at + 1].strip().startswith("- ") and lines[at + 2].strip().startswith("+ ")
    assert "re.findall" in lines[at + 2]
