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
    shared_code,
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


def test_probe_calls_reach_the_branches_a_function_compares_with():
    """With edge values alone, ``total > 100`` in the refactor goal's pricing.py was never
    true: a refactor dropping the bulk rebate kept the behaviour on every probe."""
    source = (GOALS / "refactor" / "given" / "pricing.py").read_text()
    namespace: dict = {}
    exec(compile(source, "pricing", "exec"), namespace)
    calls = probe_calls(source, ["book_price"])
    totals = [eval(c.replace("book_price", "_total"), {"_total": _gross}) for c in calls]
    assert any(t > 100 for t in totals) and any(t <= 100 for t in totals)
    members = {eval(c, namespace) for c in calls}
    assert len(members) > 4  # different results, not one case repeated
    # parameters meet in more than one pairing: the same price with other quantities
    assert len({c.split(",")[1] for c in calls if c.startswith("book_price(0.0,")}) > 1


def _gross(price, quantity, member):
    return price * quantity * (0.9 if member else 1)


def test_a_threshold_of_a_negative_number_is_reached_too():
    source = "def grade(score: int) -> str:\n    return 'low' if score < -5 else 'ok'\n"
    calls = probe_calls(source, ["grade"])
    assert "grade(-5)" in calls and "grade(-4)" in calls


SHARING = (
    "def book_price(price: float, quantity: int, member: bool) -> float:\n"
    '    """Books."""\n'
    "    total = price * quantity\n"
    "    if member:\n"
    "        total = total * 0.9\n"
    "    return round(total, 2)\n\n\n"
    "def music_price(price: float, quantity: int, member: bool) -> float:\n"
    "    total = price * quantity\n"
    "    if member:\n"
    "        total = total * 0.9\n"
    "    return round(total * 1.2, 2)\n"
)
MOVE = (
    "Move the shared part of book_price and music_price into "
    "discounted_total(price, quantity, member)."
)


def _signature(source: str):
    import ast

    return ast.parse(source + ": pass").body[0]


def test_the_shared_code_of_a_refactor_s_callers_is_the_new_function_s_reference():
    new = _signature("def discounted_total(price, quantity, member)")
    source = shared_code(MOVE, SHARING, new, ["book_price", "music_price"])
    namespace: dict = {}
    exec(compile(source, "shared", "exec"), namespace)
    assert namespace["discounted_total"](10.0, 3, True) == 10.0 * 3 * 0.9  # not rounded
    assert "price: float" in source  # the callers' annotations, for the probes


@pytest.mark.parametrize(
    ("goal", "signature", "callers"),
    [
        # the goal does not move shared code
        (
            "Add discounted_total(price, quantity, member).",
            "discounted_total(price, quantity, member)",
            ["book_price", "music_price"],
        ),
        # other parameters than the callers': which of them is which is not known
        (MOVE, "discounted_total(total, member)", ["book_price", "music_price"]),
        # one caller shares nothing with itself
        (MOVE, "discounted_total(price, quantity, member)", ["book_price"]),
        # a caller the given file does not define
        (MOVE, "discounted_total(price, quantity, member)", ["book_price", "film_price"]),
    ],
)
def test_no_shared_reference_when_the_goal_or_the_code_does_not_say_what_it_is(
    goal, signature, callers
):
    assert shared_code(goal, SHARING, _signature(f"def {signature}"), callers) == ""


def test_no_shared_reference_when_the_callers_share_no_value():
    new = _signature("def check(x)")
    differ = "def a(x):\n    return x + 1\n\n\ndef b(x):\n    return x + 2\n"
    assert shared_code(MOVE, differ, new, ["a", "b"]) == ""
    returns = (
        "def a(x):\n    if x:\n        return 1\n    y = 2\n    return y\n\n\n"
        "def b(x):\n    if x:\n        return 1\n    y = 2\n    return y + 1\n"
    )
    assert shared_code(MOVE, returns, new, ["a", "b"]) == ""  # the shared part returns
    two = (
        "def a(x):\n    y = x\n    z = x\n    return y + z\n\n\n"
        "def b(x):\n    y = x\n    z = x\n    return y * z\n"
    )
    assert shared_code(MOVE, two, new, ["a", "b"]) == ""  # two values carried: which one?
