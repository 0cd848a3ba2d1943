"""The function goal: roman.py against hidden pytest tests."""

from pathlib import Path

from grading import Verdict, hidden_pytest


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    return hidden_pytest(files, ["roman.py"], Path(__file__).with_name("hidden_tests.py"))
