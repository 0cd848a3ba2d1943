"""The console script in real subprocesses: exit codes, pause and resume across processes."""

from __future__ import annotations

import json
import re

from tests.fakes import cli

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

    again = cli("export", thread_id, str(out), db=db)
    assert again.returncode == 2 and "exists" in again.stderr  # never overwrites unasked
    forced = cli("export", thread_id, str(out), "--force", "--all", db=db)
    assert forced.returncode == 0, forced.stderr
    assert (
        json.loads((out / "deepreflect-export.json").read_text())["slugify.py"]["status"] == "done"
    )
