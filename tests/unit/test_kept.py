"""What a step rewriting the user's module must keep (agent/plan/kept.py): which functions the
goal says to keep as they are, the calls that compare them with the given file, and when
the given file can be the reference at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.plan.kept import (
    MAX_GIVEN_CHARS,
    MAX_PROBES,
    comparable,
    kept_functions,
    probe_calls,
    public_names,
)

GOALS = Path(__file__).parents[2] / "bench" / "goals"
NAMES = ["mean", "median", "mode"]


def test_public_names_are_the_top_level_functions_and_classes():
    source = "import math\nX = 1\ndef mean(v): ...\ndef _helper(): ...\nclass Stats: ...\n"
    assert public_names(source) == ["mean", "Stats"] and public_names("def (:") == []


@pytest.mark.parametrize(
    ("goal", "kept"),
    [
        ("Fix median in stats.py; keep mean as it is.", ["mean"]),
        ("Fix median but leave mean unchanged.", ["mean"]),
        ("Fix median. Do not change mean or mode.", ["mean", "mode"]),
        ("median is wrong for even lists; mean stays unchanged.", ["mean"]),
        ("Fix median so that mean is unchanged", ["mean"]),
        ("Fix median; keep the rest of the file as it is.", ["mean", "mode"]),
        ("Fix median, keep mean and everything else intact.", ["mean", "mode"]),
        ("Preserve mean; median([1, 2]) should be 1.5.", ["mean"]),
        ("Fix median, but keep mean, mode and the rest as they are.", ["mean", "mode"]),
        ("Fix median, mean unchanged.", ["mean"]),
        # the one to fix is never kept, whatever the clause around it says
        ("Keep median working but fix median([1, 2]) to return 1.5.", []),
        ("Fix median and mean.", []),
        ("Rewrite stats.py faster.", []),
        ("Keep it simple: fix median.", []),  # "keep" names no function here
        # the whole behaviour kept: every name, the ones the goal names too
        ("Refactor mean and median. Behaviour must not change.", NAMES),
        ("Tidy stats.py without changing its behaviour.", NAMES),
        ("Split median into helpers; the behaviour stays the same.", NAMES),
        ("Refactor median, keeping the existing behaviour.", NAMES),
        # a qualified behaviour clause is not the whole module's
        ("Fix median. Behaviour must not change for odd lists.", []),
    ],
)
def test_the_functions_a_goal_says_to_keep(goal, kept):
    assert kept_functions(goal, NAMES) == kept


def test_the_bughunt_goal_keeps_mean():
    goal = json.loads((GOALS / "bughunt" / "goal.json").read_text())["goal"]
    assert kept_functions(goal, ["mean", "median"]) == ["mean"]


def test_the_refactor_goal_keeps_both_functions_it_names():
    goal = json.loads((GOALS / "refactor" / "goal.json").read_text())["goal"]
    assert kept_functions(goal, ["book_price", "music_price"]) == ["book_price", "music_price"]


def test_probe_calls_follow_the_signature_edge_values_first():
    source = (
        "def mean(values: list[float]) -> float: ...\n"
        "def scale(x: int, *, by: float) -> float: ...\n"
        "def label(name: str | None = None) -> str: ...\n"  # no required parameter
        "def load(db: Connection) -> list: ...\n"  # a type no value can be made for
        "def anything(x): ...\n"
        "class Stats:\n    def mean(self): ...\n"
    )
    calls = probe_calls(source, ["mean", "scale", "label", "load", "anything", "missing"])
    assert calls[:2] == ["mean([])", "mean([2.5])"]
    assert "scale(0, by=0.0)" in calls and "scale(10, by=10)" in calls
    assert not any(c.startswith(("label(", "load(", "missing(")) for c in calls)
    assert "anything([])" in calls and "anything(None)" in calls
    for call in calls:  # every probe is a plain call with literal arguments
        compile(call, "probe", "eval")


def test_probe_calls_are_bounded():
    source = "".join(f"def f{n}(x): ...\n" for n in range(20))
    assert len(probe_calls(source, [f"f{n}" for n in range(20)])) == MAX_PROBES


@pytest.mark.parametrize(
    ("source", "ok"),
    [
        ("import math\nfrom collections import Counter\ndef f(x): ...\n", True),
        ("import numpy as np\ndef f(x): ...\n", False),  # not the standard library
        ("from .helpers import clean\ndef f(x): ...\n", False),  # a sibling a step may rewrite
        ("from helpers import clean\n", False),
        ("def f(:\n", False),
        ("x = 1\n" * (MAX_GIVEN_CHARS // 6 + 1), False),
    ],
)
def test_a_given_module_is_a_reference_when_it_needs_only_the_standard_library(source, ok):
    assert comparable(source) is ok
