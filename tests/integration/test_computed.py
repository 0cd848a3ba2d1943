"""A data file printed by a program the model writes, run in the real sandbox
(``agent.controller.computed`` and the worker's use of it)."""

from __future__ import annotations

import asyncio
import json

from agent.controller.computed import run_program
from agent.models.scripted import tool_call
from tests.fakes import prompt_values, step_worker


def computed_worker(*args, **kwargs):
    """A step worker whose profile prints data files with a program (small-local)."""
    return step_worker(*args, computed_data=True, **kwargs)


SCHEMA = {"type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}}
STEP = {
    "step_id": "S1",
    "depends_on": [],
    "action": "coder",
    "instructions": "Write totals.json.",
    "expected_output": "totals.json",
    "done_when": {"kind": "json_schema", "schema": SCHEMA},
}
GOOD = (
    "```python\nrows = [(2, 1.5), (4, 0.25)]\n"
    "print(json.dumps({'total': sum(q * p for q, p in rows)}))\n```"
)
BROKEN = "```python\nprint(json.dumps({'total': totl}))\n```"


def run_step(responses, inputs=None):
    goal = "Write totals.json: total is the sum of qty * price."
    worker, model = computed_worker(responses, step=STEP, goal=goal, inputs=inputs)
    return asyncio.run(worker.aexecute()), model


def test_what_the_program_prints_is_the_file_and_json_is_imported_for_it():
    ran = run_program("print(json.dumps(sorted([3, 1, 2])))", {})
    assert ran.ok and ran.output == "[1, 2, 3]\n"


def test_the_program_reads_the_step_s_input_files_from_its_folder():
    ran = run_program("print(open('data/in.csv').read().upper(), end='')", {"data/in.csv": "a,b\n"})
    assert ran.ok and ran.output == "A,B\n"


def test_a_failing_program_is_reported_with_its_own_traceback_only():
    ran = run_program("x = 1\nprint(1 / 0)", {})
    assert not ran.ok and "ZeroDivisionError" in ran.error
    assert 'File "the program", line 2' in ran.error and "<string>" not in ran.error


def test_a_program_printing_nothing_or_running_forever_is_no_file():
    assert run_program("x = 1", {}).error == "the program printed nothing"
    looping = run_program("while True:\n    pass", {})
    assert not looping.ok and "killed" in looping.error


def test_a_flood_is_refused_whole_and_the_host_is_out_of_reach():
    flood = run_program("print('x' * 300_000)", {})
    assert not flood.ok and "over" in flood.error  # never truncated into a broken file
    escape = run_program("print(open('/root/.bashrc').read())", {})
    assert not escape.ok  # the program runs in the sandbox, not on the host


def test_a_step_writing_json_is_asked_for_a_program_whose_output_is_the_artifact():
    run, model = run_step([GOOD])
    assert len(model.calls) == 1
    assert prompt_values("subagent_computed", str(model.calls[0][1].content))
    entry = run.files["totals.json"]
    assert json.loads(entry["content"]) == {"total": 4.0} and entry["status"] == "done"
    assert "sum(q * p" in run.files["work/S1/totals_json.py"]["content"]  # kept, for review
    assert any(e["action"] == "compute" and e["ok"] for e in run.trajectory)


def test_a_program_that_fails_is_the_evidence_and_its_revision_sees_the_program():
    run, model = run_step([BROKEN, GOOD])
    values = prompt_values("subagent_computed_revision", str(model.calls[1][1].content))
    assert values and "totl" in values["draft"] and "NameError" in values["issues"]
    assert run.files["totals.json"]["status"] == "done" and run.files["totals.json"]["rounds"] == 1


def test_a_program_that_never_works_leaves_no_artifact_and_a_failed_step():
    run, _ = run_step([BROKEN, BROKEN, BROKEN, BROKEN])
    assert "totals.json" not in run.files or run.files["totals.json"]["status"] == "failed"
    assert any("NameError" in str(e.get("observation", "")) for e in run.trajectory)


def test_a_reply_with_the_file_itself_is_taken_as_it_is():
    run, model = run_step(['```json\n{"total": 3.5}\n```'])
    assert len(model.calls) == 1 and run.files["totals.json"]["status"] == "done"
    run, _ = run_step([tool_call("write_file", path="totals.json", content='{"total": 1}')])
    assert run.files["totals.json"]["status"] == "done"


def test_a_reply_with_neither_program_nor_file_is_asked_for_the_file():
    run, model = run_step(["I would sum the rows.", '```json\n{"total": 3.5}\n```'])
    assert prompt_values("subagent_direct", str(model.calls[1][1].content))
    assert run.files["totals.json"]["status"] == "done"


def test_a_failed_program_is_reported_under_the_kind_of_check_that_judges_the_file():
    run, _ = run_step([BROKEN, BROKEN, BROKEN, BROKEN])
    checks = [e for e in run.trajectory if e["action"] == "check"]
    assert checks and all(e["check"]["kind"] == "json_schema" for e in checks)
