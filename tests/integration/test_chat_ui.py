"""agent-chat-ui in headless Chromium against `langgraph dev`, as a chat user drives it: a
normal run showing its progress and final artifact (and still showing them after a reload),
an escalation answered by typing, by the Approve button, by the Reject button's reason and
by a typed label, a repeat pause drawn under the last message, a tool call approved on its
card (the email goes out once), and a model error that stays.

`tests/js/drive_agent_chat_ui.mjs` does the driving with `playwright-core`. Nothing of
agent-chat-ui is in this repository: `DEEPREFLECT_AGENT_CHAT_UI_DIR` names a checkout with
its `node_modules`, `DEEPREFLECT_PLAYWRIGHT_DIR` a folder whose `node_modules` holds
`playwright-core`, and Chromium is Debian's (`/usr/bin/chromium`, or `DEEPREFLECT_CHROMIUM`);
without any of them the test is skipped with the reason. Screenshots are kept in a temporary
folder, printed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.langgraph_server import ROOT, _stop, dev_server, free_port, langgraph_missing

SCRIPT = ROOT / "tests" / "js" / "drive_agent_chat_ui.mjs"
OUTBOX = Path(tempfile.mkdtemp(prefix="deepreflect-chat-ui-outbox-")) / "outbox.jsonl"
CHROMIUM = os.environ.get("DEEPREFLECT_CHROMIUM", "/usr/bin/chromium")
SCENARIOS = {
    "demo": {"model": "scripted:demo"},
    "escalation": {"model": "scripted:escalation"},
    "depthCap": {"model": "scripted:depth-cap", "workload": "qa"},
    "error": {"model": "openai:gpt-4.1-mini"},  # no key in the server's environment
}


def _missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    ui = os.environ.get("DEEPREFLECT_AGENT_CHAT_UI_DIR")
    playwright = os.environ.get("DEEPREFLECT_PLAYWRIGHT_DIR")
    if shutil.which("node") is None:
        return "Node.js is not installed"
    if not ui or not (Path(ui) / "node_modules" / "next").is_dir():
        return "DEEPREFLECT_AGENT_CHAT_UI_DIR names no agent-chat-ui checkout with node_modules"
    if not playwright or not (Path(playwright) / "node_modules" / "playwright-core").is_dir():
        return "DEEPREFLECT_PLAYWRIGHT_DIR names no folder with node_modules/playwright-core"
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    return langgraph_missing()


if reason := _missing():
    pytest.skip(reason, allow_module_level=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


@contextmanager
def chat_ui(api: str, log: Path) -> Iterator[str]:
    """agent-chat-ui's `next dev` on a free port, pointed at ``api``; yields its URL."""
    folder = Path(os.environ["DEEPREFLECT_AGENT_CHAT_UI_DIR"])
    port = free_port()
    env = os.environ | {
        "NEXT_PUBLIC_API_URL": api,
        "NEXT_PUBLIC_ASSISTANT_ID": "deep_agent",
        "NEXT_TELEMETRY_DISABLED": "1",
        "PORT": str(port),
    }
    next_bin = folder / "node_modules" / ".bin" / "next"
    command = [str(next_bin), "dev", "-p", str(port), "-H", "127.0.0.1"]
    with open(log, "w") as handle:
        server = subprocess.Popen(
            command, cwd=folder, stdout=handle, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900  # the first page compiles on demand (minutes, loaded)
        while not _answers(url):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("next dev did not start:\n" + log.read_text()[-3000:])
            time.sleep(1)
        yield url
    finally:
        _stop(server)


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> dict[str, dict]:
    """Every flow of the driver, run once: its outcome by name."""
    from langgraph_sdk import get_sync_client

    logs = tmp_path_factory.mktemp("chat-ui-logs")
    shots = Path(tempfile.mkdtemp(prefix="deepreflect-chat-ui-shots-"))
    served = dev_server(
        logs / "langgraph.log",
        config="tests/approval.langgraph.json",  # deep_agent and the approval graph
        env_extra={"APPROVAL_OUTBOX": str(OUTBOX)},
    )
    with served as api, chat_ui(api, logs / "next.log") as ui:
        client = get_sync_client(url=api)
        assistants = {
            name: client.assistants.create("deep_agent", context=context)["assistant_id"]
            for name, context in SCENARIOS.items()
        }
        assistants["approval"] = client.assistants.create("approval")["assistant_id"]
        config = {
            "playwrightDir": os.environ["DEEPREFLECT_PLAYWRIGHT_DIR"],
            "chromium": CHROMIUM,
            "ui": ui,
            "api": api,
            "shots": str(shots),
            "assistants": assistants,
        }
        (logs / "config.json").write_text(json.dumps(config))
        done = subprocess.run(
            ["node", str(SCRIPT), str(logs / "config.json")],
            capture_output=True,
            text=True,
            timeout=1500,
        )
    print(f"\nagent-chat-ui screenshots: {shots}")
    outcomes = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            outcome = json.loads(line)
            outcomes[outcome["flow"]] = outcome
    assert outcomes, f"the driver reported nothing:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return outcomes


def _ok(flows: dict[str, dict], name: str) -> dict:
    outcome = flows.get(name)
    assert outcome is not None, f"{name} did not run: {sorted(flows)}"
    assert outcome["ok"], outcome.get("error")
    assert all(Path(shot).is_file() for shot in outcome["shots"])
    return outcome


def test_a_normal_run_shows_its_progress_and_artifact_also_after_a_reload(flows):
    outcome = _ok(flows, "normal_run_shows_progress_and_the_artifact")
    assert (outcome["status"], outcome["stop_reason"]) == ("success", "end")


def test_an_escalation_answered_by_typing_succeeds(flows):
    outcome = _ok(flows, "escalation_answered_by_typing")
    assert (outcome["status"], outcome["stop_reason"]) == ("success", "end")


def test_the_approve_button_accepts_the_artifacts(flows):
    outcome = _ok(flows, "escalation_accepted_by_the_approve_button")
    assert (outcome["status"], outcome["stop_reason"]) == ("success", "accepted_by_human")


def test_the_reject_buttons_reason_is_the_answer(flows):
    outcome = _ok(flows, "escalation_answered_by_the_reject_reason")
    assert (outcome["status"], outcome["stop_reason"]) == ("success", "end")


def test_a_typed_label_acts_as_its_choice(flows):
    outcome = _ok(flows, "escalation_stopped_by_a_typed_label")
    assert (outcome["status"], outcome["stop_reason"]) == ("failed", "stopped_by_human")


def test_a_repeat_pause_is_a_new_card_under_the_last_message(flows):
    outcome = _ok(flows, "a_repeat_pause_is_a_new_card_under_the_last_message")
    assert outcome["status"] == "awaiting_input" and outcome["pauses"] == 2
    assert outcome["last_id"].startswith("escalation-")


def test_a_tool_call_approved_on_its_card_runs_once(flows):
    outcome = _ok(flows, "a_tool_call_approved_by_the_approve_button")
    assert (outcome["status"], outcome["stop_reason"]) == ("success", "end")
    sent = [json.loads(line) for line in OUTBOX.read_text().splitlines() if line]
    assert [(s["to"], s["body"]) for s in sent] == [("ops@example.com", "deploy done")]


def test_a_model_error_stays_in_the_thread_after_a_reload(flows):
    outcome = _ok(flows, "a_model_error_stays_in_the_thread")
    assert outcome["status"] == "failed"
