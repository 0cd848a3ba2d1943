"""`langgraph dev` driven by the JavaScript SDK (`@langchain/langgraph-sdk` from npm), as a JS
front end would: stream to the interrupt, read the escalation, resume with `command: {resume}`
or a new message; accept and stop.

`tests/js/drive_langgraph_dev.mjs` does the driving and prints what it saw as JSON. The SDK is
pinned by `tests/js/package-lock.json` and installed outside the checkout: `.ci/run` installs
it and sets `DEEPREFLECT_JS_SDK_DIR`; without that, the test runs `npm ci` into a cache folder
keyed by the lockfile (`$XDG_CACHE_HOME/deepreflect`, else `~/.cache/deepreflect`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.langgraph_server import ROOT, dev_server, langgraph_missing

JS = ROOT / "tests" / "js"
SCRIPT = "drive_langgraph_dev.mjs"
SDK = Path("node_modules") / "@langchain" / "langgraph-sdk" / "package.json"

if shutil.which("node") is None:
    pytest.skip("Node.js is not installed: the JavaScript SDK cannot run", allow_module_level=True)
if reason := langgraph_missing():
    pytest.skip(reason, allow_module_level=True)


def _installed(folder: Path) -> bool:
    return (folder / SDK).is_file()


def _npm_ci(target: Path) -> None:
    """``npm ci`` of tests/js's lockfile into ``target``, atomically (a half-done install is
    never used)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("node is installed but npm is not: cannot install @langchain/langgraph-sdk")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not _installed(target):  # a broken earlier install
        shutil.rmtree(target, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(JS / name, staging / name)
        done = subprocess.run(
            [npm, "ci", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci of tests/js failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
        try:
            staging.rename(target)
        except OSError:  # another process installed it first
            if not _installed(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sdk_folder() -> Path:
    """A folder holding the lockfile's node_modules: the one .ci/run installed, tests/js's own
    (a developer's `npm ci --prefix tests/js`), or one installed now into the cache."""
    for given in (os.environ.get("DEEPREFLECT_JS_SDK_DIR"), JS):
        if given and _installed(Path(given)):
            return Path(given)
    lock = hashlib.sha256((JS / "package-lock.json").read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = cache / "deepreflect" / f"js-sdk-{lock}"
    if not _installed(target):
        _npm_ci(target)
    return target


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    """What the JS script saw, driving a fresh `langgraph dev`."""
    folder = sdk_folder()
    script = folder / SCRIPT
    if script != JS / SCRIPT:
        shutil.copy(JS / SCRIPT, script)  # ESM resolves packages beside the script
    log = tmp_path_factory.mktemp("js-sdk") / "langgraph-dev.log"
    with dev_server(log) as url:
        done = subprocess.run(
            ["node", str(script), url], capture_output=True, text=True, timeout=300, cwd=folder
        )
    assert done.returncode == 0, f"{done.stderr[-4000:]}\nserver log:\n{log.read_text()[-3000:]}"
    return json.loads(done.stdout)


def test_a_streamed_run_shows_the_nodes_and_the_escalation_as_an_interrupt(seen):
    stream = seen["stream"]
    assert stream["nodes"][:3] == ["planner", "subagent", "reflection"]
    (escalation,) = stream["streamed_interrupts"]
    assert escalation["question"].startswith("Who is the report for")
    assert escalation["status"] == "awaiting_input"
    assert escalation["artifacts_ready_for_review"]
    assert {"reflection_depth", "reason"} <= set(escalation)
    assert escalation["suggested_responses"] == [
        {"label": "engineers", "value": {"action": "answer", "text": "engineers"}},
        {"label": "executives", "value": {"action": "answer", "text": "executives"}},
    ]
    paused = stream["paused"]
    assert paused["thread_status"] == "interrupted" and paused["next"] == ["escalate"]
    assert paused["interrupts"] == [escalation] and paused["state_escalation"] == escalation
    assert paused["state_status"] == "awaiting_input"


def test_a_suggested_responses_value_sent_as_command_resume_finishes_the_run(seen):
    stream = seen["stream"]
    assert stream["resume"] == {"action": "answer", "text": "engineers"}
    final = stream["final"]
    assert (final["status"], final["stop_reason"], final["converged"]) == ("success", "end", True)
    assert final["nodes"][0] == "escalate" and final["nodes"][-1] == "finalize"
    assert "planner" in final["nodes"] and final["plan_version"] == 2  # the answer replanned
    assert final["thread_status"] == "idle" and final["interrupts"] == []


@pytest.mark.parametrize("case", ["command_text", "new_message"])
def test_free_text_as_command_resume_or_as_a_new_message_finishes_the_run(seen, case):
    final = seen[case]
    assert (final["status"], final["stop_reason"]) == ("success", "end")
    assert final["plan_version"] == 2
    assert final["thread_status"] == "idle" and final["interrupts"] == []


def test_accept_finishes_at_once_with_the_artifacts_as_they_are(seen):
    final = seen["accept"]
    assert (final["status"], final["stop_reason"]) == ("success", "accepted_by_human")
    assert final["converged"] is False
    assert final["nodes"] == ["escalate", "finalize"]  # no planner, subagent or reflection
    assert final["thread_status"] == "idle" and final["interrupts"] == []


def test_stop_ends_the_run_failed_and_nothing_more_runs(seen):
    final = seen["stop"]
    assert (final["status"], final["stop_reason"]) == ("failed", "stopped_by_human")
    assert "planner" not in final["nodes"] and "subagent" not in final["nodes"]
    assert final["thread_status"] == "idle" and final["interrupts"] == []
