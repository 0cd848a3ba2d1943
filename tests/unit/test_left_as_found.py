"""A passing check over a file the draft left as the step found it (agent.controller.evidence)."""

from __future__ import annotations

from agent.controller.evidence import left_as_found
from agent.vfs.entries import file_entry
from agent.vfs.origin import given_module, same_as_given

PASSED = {"kind": "examples", "passed": True, "score": 1.0, "evidence": "3 passed"}
MODULE = "def f(x):\n    return x\n"


def test_a_passing_report_over_the_found_file_fails_with_why():
    report = left_as_found(PASSED, "m.py", MODULE, "def f(x):\n    return x  # same\n")
    assert report["passed"] is False and report["score"] == 0.0
    assert "m.py" in report["evidence"] and report["kind"] == "examples"


def test_a_changed_file_a_failing_report_or_no_rule_keep_the_report():
    assert left_as_found(PASSED, "m.py", MODULE, "def f(x):\n    return x + 1\n") == PASSED
    failed = PASSED | {"passed": False, "score": 0.2, "evidence": "1 failed"}
    assert left_as_found(failed, "m.py", MODULE, MODULE) == failed
    assert left_as_found(PASSED, "m.py", None, MODULE) == PASSED
    assert left_as_found(PASSED, "m.py", "", MODULE) == PASSED  # the step found nothing


def test_sameness_is_code_for_a_module_and_text_for_anything_else():
    assert same_as_given("m.py", MODULE, "def f(x):\n\n\n    return x\n")
    assert not same_as_given("m.py", MODULE, "def f(x:\n")  # unparsable: not the same code
    assert same_as_given("notes.md", "# Notes\n", "\n# Notes")
    assert not same_as_given("notes.md", "# Notes\n", "#  Notes\n")  # layout is text there


def test_only_a_users_module_has_a_text_as_given():
    edited = file_entry("def f(x):\n    return 2\n", step=2, origin="user") | {"given": MODULE}
    files = {
        "m.py": edited,
        "own.py": file_entry(MODULE, step=1),
        "data.md": file_entry("# d", step=0, origin="user"),
    }
    assert given_module(files, "m.py") == MODULE
    assert given_module(files, "own.py") is None and given_module(files, "data.md") is None
    assert given_module(files, "missing.py") is None
