"""What a step may read (agent.graph.dispatch.subagent_task): its dependencies' outputs, the
user's files, and the finished artifacts of earlier plans that its plan does not write."""

from __future__ import annotations

from agent.graph.dispatch import subagent_task
from agent.vfs.entries import file_entry
from tests.fakes import step


def test_a_replanned_step_reads_the_finished_modules_no_step_of_its_plan_writes():
    # the 1.5B's replan kept only textkit/__init__.py: its check could not import words.py
    files = {
        "textkit/words.py": file_entry("def split_words(t): ...\n", step=1, status="done"),
        "textkit/count.py": file_entry("x = 1\n", step=2, status="done"),
        "draft.py": file_entry("x = (\n", step=2, status="failed"),
        "work/S1/notes.py": file_entry("n = 1\n", step=1, status="done"),
        "data.csv": {**file_entry("a,b\n", step=0), "origin": "user"},
    }
    plan = {
        "version": 2,
        "steps": [step("S4", "textkit/__init__.py"), step("S5", "textkit/count.py")],
    }
    task = subagent_task(plan["steps"][0], {"plan": plan, "goal": "g"}, files, 3, 1000, 60.0)
    assert sorted(task["readable"]) == ["data.csv", "textkit/words.py"]
