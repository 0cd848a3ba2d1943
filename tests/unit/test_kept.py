"""What a step rewriting the user's module must keep (agent/plan/kept.py): the functions the
goal's criteria keep as they are, the calls that compare them with the given file, when the
given file can be the reference at all, and a refactor's shared code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.checks import run_check
from agent.checks.shown import shown_check
from agent.plan.criteria import (
    ExampleCriterion,
    FileCriteria,
    GoalCriteria,
    NameCriterion,
    verified,
)
from agent.plan.floor import stated_floor
from agent.plan.kept import (
    MAX_GIVEN_CHARS,
    MAX_PROBES,
    caller_rests,
    comparable,
    probe_calls,
    public_names,
    shared_code,
)
from agent.plan.steps import Step

GOALS = Path(__file__).parents[2] / "bench" / "goals"


def test_public_names_are_the_top_level_functions_and_classes():
    source = "import math\nX = 1\ndef mean(v): ...\ndef _helper(): ...\nclass Stats: ...\n"
    assert public_names(source) == ["mean", "Stats"] and public_names("def (:") == []


BUGHUNT = json.loads((GOALS / "bughunt" / "goal.json").read_text())["goal"]
STATS = (GOALS / "bughunt" / "given" / "stats.py").read_text()
FIXED = STATS.replace(
    "ordered[middle] + ordered[middle + 1]", "ordered[middle - 1] + ordered[middle]"
)


def bughunt_criteria(*keep: str) -> GoalCriteria:
    """The bughunt goal's criteria of stats.py as a planner states them."""
    criteria = GoalCriteria(
        files=[
            FileCriteria(
                path="stats.py",
                examples=[
                    ExampleCriterion(
                        call="median([1, 2, 3, 4])",
                        expected="2.5",
                        quote="median([1, 2, 3, 4]) should be 2.5",
                    )
                ],
                keep=[NameCriterion(name=n, quote="keep mean and the rest") for n in keep],
            )
        ]
    )
    return criteria


def bughunt_floor(*keep: str) -> dict:
    """The floor of the bughunt goal's stats.py, with its criteria."""
    step = Step(step_id="S1", action="coder", instructions="Fix.", expected_output="stats.py")
    criteria = bughunt_criteria(*keep)
    spec = stated_floor(step, [step], BUGHUNT, criteria, kept={"stats.py": STATS})
    assert spec is not None
    return spec


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_function_the_criteria_keep_ends_as_it_did_in_the_given_file():
    """On the 1.5B a fixed stats.py dropped the ValueError mean raised for no values."""
    assert verified(bughunt_criteria("mean"), BUGHUNT)[1] == []  # each quotes the goal
    spec = bughunt_floor("mean")
    assert shown_check(spec)["ends_as_in_the_given_file"][:2] == ["mean([])", "mean([2.5])"]
    assert run_check(spec, {"stats.py": FIXED}, "stats.py")["passed"]
    lenient = FIXED.replace('raise ValueError("mean of no values")', "return 0.0")
    report = run_check(spec, {"stats.py": lenient}, "stats.py")
    assert not report["passed"] and "mean([])" in report["evidence"]
    report = run_check(spec, {"stats.py": STATS}, "stats.py")  # the bug itself
    assert not report["passed"] and "median([1, 2, 3, 4])" in report["evidence"]


@pytest.mark.slow  # runs checks in sandboxed processes
def test_without_a_keep_criterion_no_function_is_compared_with_the_given_file():
    spec = bughunt_floor()
    assert "ends_as_in_the_given_file" not in shown_check(spec)
    lenient = FIXED.replace('raise ValueError("mean of no values")', "return 0.0")
    assert run_check(spec, {"stats.py": lenient}, "stats.py")["passed"]


def test_a_kept_name_the_given_file_does_not_define_is_not_probed():
    spec = bughunt_floor("mode")
    assert "ends_as_in_the_given_file" not in shown_check(spec)


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
MOVES = True  # the goal's criterion: the callers' shared code moves into the new function


def _signature(source: str):
    import ast

    return ast.parse(source + ": pass").body[0]


def test_the_shared_code_of_a_refactor_s_callers_is_the_new_function_s_reference():
    new = _signature("def discounted_total(price, quantity, member)")
    source = shared_code(MOVES, SHARING, new, ["book_price", "music_price"])
    namespace: dict = {}
    exec(compile(source, "shared", "exec"), namespace)
    assert namespace["discounted_total"](10.0, 3, True) == 10.0 * 3 * 0.9  # not rounded
    assert "price: float" in source  # the callers' annotations, for the probes
    rests = caller_rests(MOVES, SHARING, new, ["book_price", "music_price"])
    assert rests == {
        "book_price": "return round(total, 2)",
        "music_price": "return round(total * 1.2, 2)",
    }


@pytest.mark.parametrize(
    ("shares", "signature", "callers"),
    [
        # the criteria do not move shared code
        (False, "discounted_total(price, quantity, member)", ["book_price", "music_price"]),
        # other parameters than the callers': which of them is which is not known
        (MOVES, "discounted_total(total, member)", ["book_price", "music_price"]),
        # one caller shares nothing with itself
        (MOVES, "discounted_total(price, quantity, member)", ["book_price"]),
        # a caller the given file does not define
        (MOVES, "discounted_total(price, quantity, member)", ["book_price", "film_price"]),
    ],
)
def test_no_shared_reference_when_the_criteria_or_the_code_do_not_say_what_it_is(
    shares, signature, callers
):
    new = _signature(f"def {signature}")
    assert shared_code(shares, SHARING, new, callers) == ""
    assert caller_rests(shares, SHARING, new, callers) == {}


def test_no_shared_reference_when_the_callers_share_no_value():
    new = _signature("def check(x)")
    differ = "def a(x):\n    return x + 1\n\n\ndef b(x):\n    return x + 2\n"
    assert shared_code(MOVES, differ, new, ["a", "b"]) == ""
    returns = (
        "def a(x):\n    if x:\n        return 1\n    y = 2\n    return y\n\n\n"
        "def b(x):\n    if x:\n        return 1\n    y = 2\n    return y + 1\n"
    )
    assert shared_code(MOVES, returns, new, ["a", "b"]) == ""  # the shared part returns
    two = (
        "def a(x):\n    y = x\n    z = x\n    return y + z\n\n\n"
        "def b(x):\n    y = x\n    z = x\n    return y * z\n"
    )
    assert shared_code(MOVES, two, new, ["a", "b"]) == ""  # two values carried: which one?
