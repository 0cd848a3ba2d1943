"""bench/plain_model.py: the plain model asked once, graded by the task's hidden check, and
bench/real_eval.py's side-by-side columns (issue 22, item 1)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import plain_model  # noqa: E402
import real_eval  # noqa: E402

from agent.eval.datasets import humaneval_task  # noqa: E402

PROBLEM = {
    "task_id": "Toy/0",
    "prompt": 'def add(a, b):\n    """Return a + b.\n    >>> add(1, 2)\n    3\n    """\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": (
        "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
    ),
}


class OneReply:
    """A chat model that answers every request with one reply and records what it was asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.asked: list = []

    def invoke(self, messages):
        self.asked.append(messages)
        usage = {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52}
        return AIMessage(self.text, usage_metadata=usage)


def test_the_prompt_is_the_documented_one_and_holds_the_problem_in_a_fence():
    system, user = plain_model.messages(PROBLEM["prompt"])
    assert system.content == "You are a helpful coding assistant."
    assert user.content.startswith("Complete the following Python function.")
    assert f"```python\n{PROBLEM['prompt']}```" in user.content


@pytest.mark.slow  # runs checks in sandboxed processes
def test_the_fenced_code_is_the_program_and_the_hidden_check_grades_it():
    task = humaneval_task(PROBLEM)
    right = OneReply("Here:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.")
    wrong = OneReply("```python\ndef add(a, b):\n    return a - b\n```")
    good, bad = plain_model.solve(right, task), plain_model.solve(wrong, task)
    assert good["correct"] is True and bad["correct"] is False
    assert "assert" in bad["evidence"] or "Error" in bad["evidence"]
    assert good["input_tokens"] == 40 and good["output_tokens"] == 12
    assert len(right.asked) == 1  # asked once, never again


def test_a_reply_without_a_fence_is_graded_whole():
    assert plain_model.fenced_program("def f():\n    return 1\n") == "def f():\n    return 1\n"
    text = "```py\nx = 1\n```\n```python\ny = 2\n```"
    assert plain_model.fenced_program(text) == "x = 1\n"


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_failed_request_is_recorded_and_the_others_still_count():
    task = humaneval_task(PROBLEM)

    class Broken:
        def invoke(self, messages):
            raise TimeoutError("the server took too long")

    report = plain_model.run_plain(Broken(), [task])
    assert report["errors"] == 1 and report["correct"] == 0
    assert "TimeoutError" in report["records"][0]["error"]


def test_columns_put_cost_beside_quality_per_solved_task():
    plain = {
        "tasks": 4,
        "errors": 0,
        "correct": 2,
        "input_tokens": 300,
        "output_tokens": 100,
        "wall_s": 20.0,
    }
    summary = {
        "tasks": 4,
        "errors": 0,
        "first_correct": 1,
        "final_correct": 3,
        "io_tokens": {"off": {"input": 700, "output": 100}, "on": {"input": 1100, "output": 100}},
        "wall_s": {"off": 30.0, "on": 60.0},
    }
    table = real_eval.columns(plain, {"summary": summary})
    assert list(table) == ["plain model", "first draft", "reflection on"]
    assert table["plain model"]["tokens per solved task"] == "200"
    assert table["first draft"]["tokens per solved task"] == "800 (4.0x plain)"
    assert table["reflection on"]["tokens per solved task"] == "400 (2.0x plain)"
    assert table["reflection on"]["pass"].startswith("3/4")
    assert table["first draft"]["wall per solved task"] == "30 s"


def test_nothing_solved_is_a_dash_not_a_division_error():
    plain = {
        "tasks": 1,
        "errors": 1,
        "correct": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "wall_s": 0.0,
    }
    table = real_eval.columns(plain, None)
    assert table["plain model"]["tokens per solved task"] == "-"


def test_a_task_without_a_problem_prompt_is_refused():
    task = dataclasses.replace(humaneval_task(PROBLEM), stub=None)
    with pytest.raises(ValueError, match="no problem prompt"):
        plain_model.solve(OneReply("x"), task)


def _task_record(i: int, first: bool, final: bool) -> dict:
    return {
        "id": f"T/{i}", "first_correct": first, "final_correct": final,
        "change": "fix" if final and not first else "right" if final else "wrong",
        "rounds": 0 if first else 1, "converged": final, "stop_reason": "pass",
        "tokens": {"off": 10, "on": 20 if not first else 10}, "calls": {"off": 1, "on": 2},
        "io_tokens": {"off": {"input": 8, "output": 2}, "on": {"input": 16, "output": 4}},
        "wall_s": {"off": 1.0, "on": 2.0}, "usage": {}, "history": [],
    }  # fmt: skip


def test_a_kept_run_is_reported_again_over_its_first_tasks(tmp_path):
    import json

    records = [
        {"id": f"T/{i}", "correct": i % 2 == 0, "input_tokens": 5, "output_tokens": 5,
         "wall_s": 1.0} for i in range(4)
    ]  # fmt: skip
    (tmp_path / "plain.json").write_text(json.dumps(plain_model.summary(records)))
    tasks = [
        _task_record(0, True, True),
        _task_record(1, False, True),
        _task_record(2, False, False),
    ]
    (tmp_path / "eval.json").write_text(json.dumps({"summary": {"critic": None}, "tasks": tasks}))
    plain, report = real_eval.kept_run(tmp_path, first=2)
    assert plain is not None and (plain["tasks"], plain["correct"]) == (2, 1)
    assert report is not None and len(report["tasks"]) == 2
    s = report["summary"]
    assert (s["first_correct"], s["final_correct"], s["fixes"]) == (1, 2, 1)
    assert report["wall_time_s"] == 4.0
    whole = real_eval.kept_run(tmp_path)[1]
    assert whole is not None and whole["summary"]["tasks"] == 3
