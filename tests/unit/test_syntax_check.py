"""The ``syntax`` check: an artifact parses as its language, and nothing of it runs."""

from __future__ import annotations

import pytest

from agent.checks import run_check

SYNTAX = {"kind": "syntax"}


def check(path, text):
    return run_check(SYNTAX, {path: text}, path)


def test_a_module_that_parses_passes_without_running():
    report = check("a.py", "import os\nos.remove('/etc/passwd')\nfrom b import g\n")
    assert report["passed"] and report["kind"] == "syntax"  # parsed, never run


def test_a_syntax_error_is_quoted_with_its_line():
    report = check("textkit/words.py", "def f(t):\n    return re.findall(r'[a']+', t)\n")
    assert not report["passed"]
    assert "SyntaxError" in report["evidence"] and "line 2" in report["evidence"]


@pytest.mark.parametrize(
    ("path", "text"),
    [("a.json", "{'a': 1}"), ("a.py", "x = 1\0"), ("a.py", "(" * 10_000), ("notes.md", "# ok")],
    ids=["json", "null byte", "deep nesting", "no parser"],
)
def test_what_does_not_parse_or_has_no_parser_fails(path, text):
    assert not check(path, text)["passed"]


def test_valid_json_passes_and_a_missing_artifact_fails():
    assert check("a.json", '{"a": [1, 2]}')["passed"]
    assert not run_check(SYNTAX, {}, "gone.py")["passed"]
