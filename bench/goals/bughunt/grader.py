"""The bughunt goal: the fixed stats.py against a hidden regression test."""

from pathlib import Path

from grading import Verdict, hidden_pytest


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    return hidden_pytest(files, ["stats.py"], Path(__file__).with_name("hidden_tests.py"))
