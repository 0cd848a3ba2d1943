"""The evidence floor's checks run (agent/plan/floor.py, agent/checks/composite.py,
agent/checks/examples.py): the wrong artifacts the 0.5B ended ``success`` on now fail with
evidence a revision can use, right ones pass, and a forged result is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.checks import run_check, validate_check_spec
from agent.checks.composite import MAX_PARTS
from agent.plan.criteria import (
    CallCriterion,
    ExampleCriterion,
    FileCriteria,
    GoalCriteria,
    NameCriterion,
    verified,
)
from agent.plan.validation import parse_plan
from tests.fakes import step

GOALS = Path(__file__).parents[2] / "bench" / "goals"


def stated(goal_text: str, path: str, **criteria) -> GoalCriteria:
    """The criteria of ``path`` as a planner states them, each one the goal's words state
    (``verified`` keeps them all)."""
    given = GoalCriteria(files=[FileCriteria(path=path, **criteria)])
    kept, dropped = verified(given, goal_text)
    assert dropped == []
    return kept


def floor_of(
    goal: str, output: str, check=None, *, databases=(), criteria: GoalCriteria | None = None
) -> dict:
    steps, errors = parse_plan(
        {"steps": [step("S1", output, action="coder", check=check or {"kind": "exists"})]},
        actions={"coder"},
        max_steps=5,
        goal=goal,
        databases=databases,
        criteria=criteria,
    )
    assert errors == []
    return steps[0].done_when


def users_module_floor(
    name: str, path: str, criteria: GoalCriteria | None = None
) -> tuple[str, dict]:
    """The given file of goal ``name`` and the floor of a one-step plan rewriting it."""
    given = (GOALS / name / "given" / path).read_text()
    steps, errors = parse_plan(
        {"steps": [step("S1", path, action="coder")]},
        actions={"coder"},
        max_steps=5,
        goal=goal(name),
        files=[path],
        kept={path: given},
        criteria=criteria,
    )
    assert errors == []
    return given, steps[0].done_when


def goal(name: str) -> str:
    return json.loads((GOALS / name / "goal.json").read_text())["goal"]


BUGHUNT = goal("bughunt")
MEDIAN_EXAMPLE = ExampleCriterion(
    call="median([1, 2, 3, 4])", expected="2.5", quote="median([1, 2, 3, 4]) should be 2.5"
)
KEEP_MEAN = NameCriterion(name="mean", quote="keep mean and the rest of the file as they are")
FIX_MEDIAN = NameCriterion(
    name="median", quote="median([1, 2, 3, 4]) should be 2.5 but it is wrong"
)


def bughunt_criteria(*, keep: bool = False, fixes: bool = False) -> GoalCriteria:
    """What the bughunt goal states of stats.py: the example of the bug, and (when asked)
    that mean is kept as it is and that median's bug is fixed."""
    return stated(
        BUGHUNT,
        "stats.py",
        examples=[MEDIAN_EXAMPLE],
        keep=[KEEP_MEAN] if keep else [],
        fixes=[FIX_MEDIAN] if fixes else [],
    )


MEDIAN_FIXED = """
def mean(xs):
    return sum(xs) / len(xs)

def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
"""


def test_the_bug_the_goal_describes_fails_the_floor_and_its_fix_passes():
    spec = floor_of(BUGHUNT, "stats.py", criteria=bughunt_criteria())
    buggy = (GOALS / "bughunt" / "given" / "stats.py").read_text()
    failed = run_check(spec, {"stats.py": buggy}, "stats.py")
    assert not failed["passed"]
    assert "median([1, 2, 3, 4]) returned 3.5, expected 2.5" in failed["evidence"]
    assert failed["kind"] == "examples"  # the deciding part: a kind the registry lists
    assert run_check(spec, {"stats.py": MEDIAN_FIXED}, "stats.py")["passed"]


def test_a_planner_s_python_check_that_misses_the_stated_bug_no_longer_passes_it():
    odd_only = {"kind": "python", "code": "assert median([1, 2, 3]) == 2"}  # the 1.5B's
    spec = floor_of(BUGHUNT, "stats.py", odd_only, criteria=bughunt_criteria())
    buggy = (GOALS / "bughunt" / "given" / "stats.py").read_text()
    assert run_check(odd_only, {"stats.py": buggy}, "stats.py")["passed"]  # what it was
    failed = run_check(spec, {"stats.py": buggy}, "stats.py")
    assert not failed["passed"] and "returned 3.5, expected 2.5" in failed["evidence"]
    assert run_check(spec, {"stats.py": MEDIAN_FIXED}, "stats.py")["passed"]


def test_a_rewrite_of_the_users_module_that_drops_a_function_fails():
    # what the 1.5B wrote for bughunt: median fixed, mean (the goal: keep it) gone
    only_median = (
        "def median(lst):\n    if len(lst) % 2 == 0:\n"
        "        return (lst[len(lst) // 2 - 1] + lst[len(lst) // 2]) / 2\n"
        "    return lst[len(lst) // 2]\n"
    )
    steps, errors = parse_plan(
        {"steps": [step("S1", "stats.py", action="coder")]},
        actions={"coder"},
        max_steps=5,
        goal=goal("bughunt"),
        files=["stats.py"],
        kept={"stats.py": (GOALS / "bughunt" / "given" / "stats.py").read_text()},
    )
    assert errors == []
    failed = run_check(steps[0].done_when, {"stats.py": only_median}, "stats.py")
    assert not failed["passed"] and "mean is not defined" in failed["evidence"]
    given = (GOALS / "bughunt" / "given" / "stats.py").read_text()
    fixed = given.replace(
        "ordered[middle] + ordered[middle + 1]", "ordered[middle - 1] + ordered[middle]"
    )
    assert fixed != given
    assert run_check(steps[0].done_when, {"stats.py": fixed}, "stats.py")["passed"]


def kept_check(goal_text: str, given: str, criteria: GoalCriteria) -> dict:
    steps, errors = parse_plan(
        {"steps": [step("S1", "stats.py", action="coder")]},
        actions={"coder"},
        max_steps=5,
        goal=goal_text,
        files=["stats.py"],
        kept={"stats.py": given},
        criteria=criteria,
    )
    assert errors == []
    return steps[0].done_when


def test_a_rewrite_that_changes_what_the_goal_says_to_keep_fails():
    # what the 1.5B wrote for bughunt at cbf988a: median fixed, mean's ValueError dropped
    given = (GOALS / "bughunt" / "given" / "stats.py").read_text()
    spec = kept_check(BUGHUNT, given, bughunt_criteria(keep=True))
    failed = run_check(spec, {"stats.py": MEDIAN_FIXED}, "stats.py")
    assert not failed["passed"]
    assert (
        "mean([]) raised ZeroDivisionError; in the given file it raised ValueError"
        in (failed["evidence"])
    )
    other_value = MEDIAN_FIXED.replace("return sum(xs) / len(xs)", "return sum(xs) // len(xs)")
    failed = run_check(spec, {"stats.py": other_value}, "stats.py")
    assert not failed["passed"] and "in the given file it returned" in failed["evidence"]


@pytest.mark.parametrize(
    "forged",
    [
        "class A:\n    def __eq__(self, o): return True\n    __hash__ = None\n"
        "def mean(xs): return A()\n",
        "class F(float):\n    def __eq__(self, o): return True\ndef mean(xs): return F(0)\n",
        "class E(ValueError): pass\nE.__name__ = 'ValueError'\ndef mean(xs): return 1.0\n",
        "import sys\ndef mean(xs):\n    sys.exit(0)\n",
    ],
)
def test_a_kept_function_s_result_cannot_be_forged(forged):
    given = (
        "def mean(xs: list[float]) -> float:\n"
        "    if not xs:\n        raise ValueError\n    return sum(xs) / len(xs)\n"
    )
    tidy = "Tidy stats.py; keep mean as it is."
    keep = [NameCriterion(name="mean", quote="keep mean as it is")]
    spec = kept_check(tidy, given, stated(tidy, "stats.py", keep=keep))
    assert run_check(spec, {"stats.py": given}, "stats.py")["passed"]
    assert not run_check(spec, {"stats.py": forged}, "stats.py")["passed"]


def test_a_kept_function_whose_given_result_varies_is_not_compared_by_value():
    given = "import random\ndef pick(xs: list[int]) -> int:\n    return random.random()\n"
    docstrings = "Add docstrings to stats.py; keep pick as it is."
    keep = [NameCriterion(name="pick", quote="keep pick as it is")]
    spec = kept_check(docstrings, given, stated(docstrings, "stats.py", keep=keep))
    assert run_check(spec, {"stats.py": "def pick(xs):\n    return 0.5\n"}, "stats.py")["passed"]
    raising = "def pick(xs):\n    raise KeyError(xs)\n"
    assert not run_check(spec, {"stats.py": raising}, "stats.py")["passed"]


@pytest.mark.parametrize(
    "source",
    [
        "class A:\n    def __eq__(self, o): return True\ndef median(xs): return A()\n",
        "class F(float):\n    def __eq__(self, o): return True\ndef median(xs): return F(3.5)\n",
        "import sys\ndef median(xs):\n    sys.exit(0)\n",
        "def median(xs):\n    raise SystemExit(0)\n",
    ],
)
def test_a_forged_result_does_not_meet_a_stated_example(source):
    # the goal's example written as a literal: the floor reads it without criteria
    spec = floor_of("Fix stats.py: median([1, 2, 3, 4]) == 2.5", "stats.py")
    assert run_check(spec, {"stats.py": MEDIAN_FIXED}, "stats.py")["passed"]
    assert not run_check(spec, {"stats.py": source}, "stats.py")["passed"]


def test_a_module_without_the_goal_s_function_or_that_does_not_run_fails():
    spec = floor_of(goal("function"), "roman.py")
    missing = run_check(spec, {"roman.py": "def roman(n):\n    return 'I'\n"}, "roman.py")
    assert not missing["passed"] and "to_roman is not defined" in missing["evidence"]
    broken = run_check(spec, {"roman.py": "def to_roman(n:\n"}, "roman.py")
    assert not broken["passed"] and "SyntaxError" in broken["evidence"]
    empty = run_check(spec, {"roman.py": "  \n"}, "roman.py")
    assert not empty["passed"] and empty["kind"] == "non_empty"
    right = "def to_roman(n):\n    return 'I' * n\n"  # the floor is not the hidden tests
    passed = run_check(spec, {"roman.py": right}, "roman.py")
    assert passed["passed"] and passed["kind"] == "examples"
    assert passed["evidence"].startswith("non_empty: ")  # every part's evidence, in order


@pytest.mark.parametrize(
    ("source", "evidence"),
    [
        # what the 0.5B ended success on: defined, but broken when called
        ("def to_roman(n):\n    return ''.join(n)\n", "to_roman(1) raised TypeError"),
        ("def to_roman(n):\n    return numerals[n]\n", "to_roman(1) raised NameError"),
        ("def to_roman(n):\n    raise NotImplementedError\n", "raised NotImplementedError"),
        ("def to_roman(n):\n    return 1\n", "to_roman(1) returned 1 (int), expected a str"),
        ("def to_roman(n):\n    pass\n", "to_roman(1) returned None (NoneType), expected a str"),
    ],
)
def test_a_function_broken_when_called_with_its_stated_types_fails(source, evidence):
    spec = floor_of(goal("function"), "roman.py")
    report = run_check(spec, {"roman.py": source}, "roman.py")
    assert not report["passed"] and evidence in report["evidence"]


@pytest.mark.parametrize(
    "source",
    [
        "def to_roman(n):\n    raise ValueError(n)\n",  # the goal may refuse a value
        "class S(str):\n    pass\ndef to_roman(n):\n    return S('I')\n",  # a str
    ],
)
def test_a_smoke_call_refusing_the_value_or_returning_a_subtype_passes(source):
    spec = floor_of(goal("function"), "roman.py")
    assert run_check(spec, {"roman.py": source}, "roman.py")["passed"]


@pytest.mark.parametrize(
    "content",
    [
        '{"kind": "non_empty"}',  # what the 0.5B wrote into deploy.json
        '{"service": "ledger", "replicas": 3}',
        "service: ledger",
        "",
    ],
)
def test_json_without_the_goal_s_keys_fails(content):
    spec = floor_of(goal("escalation"), "deploy.json")
    assert not run_check(spec, {"deploy.json": content}, "deploy.json")["passed"]


def test_json_with_the_goal_s_keys_passes_as_an_object_or_a_list_of_them():
    spec = floor_of(goal("json"), "inventory.json")
    item = {"sku": "A-100", "qty": 4, "price": 2.5}
    doc = {"items": [item], "total_value": 10.0, "out_of_stock": []}
    assert run_check(spec, {"inventory.json": json.dumps(doc)}, "inventory.json")["passed"]
    # no item holds the keys the goal spells inside its objects
    empty = {"items": [], "total_value": 0, "out_of_stock": []}
    assert not run_check(spec, {"inventory.json": json.dumps(empty)}, "inventory.json")["passed"]
    spec = floor_of('Write people.json: a list of {"name": string, "age": int}.', "people.json")
    rows = json.dumps([{"name": "a", "age": 1}])
    assert run_check(spec, {"people.json": rows}, "people.json")["passed"]
    assert not run_check(spec, {"people.json": "[]"}, "people.json")["passed"]


def test_a_query_must_run_on_the_named_database(tmp_path):
    import sqlite3

    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    spec = floor_of("Write q.sql for the shop database.", "q.sql", databases=("shop",))
    databases = {"shop": str(db)}
    ok = run_check(spec, {"q.sql": "SELECT x FROM t"}, "q.sql", databases=databases)
    assert ok["passed"]
    bad = run_check(spec, {"q.sql": "SELECT y FROM nowhere"}, "q.sql", databases=databases)
    assert not bad["passed"] and "query failed" in bad["evidence"]


def test_a_rubric_after_the_floor_asks_no_judge_when_a_program_failed():
    class Judge:
        def invoke(self, *args, **kwargs):
            raise AssertionError("the judge was asked")

    spec = floor_of(goal("function"), "roman.py", check="the code is idiomatic")
    assert spec["checks"][-1] == "the code is idiomatic"
    report = run_check(spec, {"roman.py": "x = 1\n"}, "roman.py", judge=Judge(), task="t")
    assert not report["passed"] and "to_roman" in report["evidence"]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"kind": "all"}, "needs 'checks'"),
        ({"kind": "all", "checks": []}, "needs 'checks'"),
        ({"kind": "all", "checks": [{"kind": "non_empty"}] * (MAX_PARTS + 1)}, "at most"),
        ({"kind": "all", "checks": [{"kind": "all", "checks": [None]}]}, "inside an 'all'"),
        ({"kind": "all", "checks": [{"kind": "nope"}]}, "checks[0] unknown check kind"),
        ({"kind": "all", "checks": [{"kind": "python"}]}, "checks[0] kind 'python' needs"),
    ],
)
def test_an_all_check_that_cannot_run_is_refused_with_why(spec, error):
    errors = validate_check_spec(spec)
    assert errors and any(error in e for e in errors)
    report = run_check(spec, {"a.py": "x = 1"}, "a.py")
    assert not report["passed"] and "invalid check spec" in report["evidence"]


def test_all_runs_and_validates_but_is_not_offered_to_the_planner():
    from agent.checks import describe_kinds

    assert '"kind": "all"' not in describe_kinds()
    assert "all" not in validate_check_spec({"pattern": "x"})[0]  # the kinds an error lists
    assert validate_check_spec({"kind": "all", "checks": [{"kind": "exists"}]}) == []


def test_an_all_check_scores_the_share_of_its_parts_passed():
    # the revise loop keeps the best-scored draft: a blank report.md tied with one that only
    # lacked a phrase, and the blank one was kept
    spec = {"kind": "all", "checks": [{"kind": "non_empty"}, {"kind": "contains", "all": ["HNSW"]}]}
    blank = run_check(spec, {"r.md": ""}, "r.md")
    partial = run_check(spec, {"r.md": "a report"}, "r.md")
    done = run_check(spec, {"r.md": "a report on HNSW"}, "r.md")
    assert (blank["passed"], partial["passed"], done["passed"]) == (False, False, True)
    assert blank["score"] == 0.0 and partial["score"] == 0.5 and done["score"] == 1.0


def test_an_all_check_s_parts_are_validated_in_the_step_s_scope():
    plan = {
        "steps": [
            step(
                "S1",
                "a.py",
                action="coder",
                check={"kind": "all", "checks": [{"kind": "pytest", "tests": ["test_a.py"]}]},
            )
        ]
    }
    steps, errors = parse_plan(plan, actions={"coder"}, max_steps=5)
    assert steps is None and any("checks[0]" in e and "test_a.py" in e for e in errors)


REFACTOR = goal("refactor")
SHARING = REFACTOR[REFACTOR.index("book_price") : REFACTOR.index(" Behaviour")]
UNCHANGED = REFACTOR[REFACTOR.index("book_price") :]  # to "exactly what it returns today."


def refactor_criteria() -> GoalCriteria:
    """What the refactor goal states of pricing.py: both callers call discounted_total, the
    code they share moves into it, and both callers return what they returned."""
    callers = ("book_price", "music_price")
    calls = [
        CallCriterion(caller=c, callee="discounted_total", shares=True, quote=SHARING)
        for c in callers
    ]
    keep = [NameCriterion(name=c, quote=UNCHANGED) for c in callers]
    return stated(REFACTOR, "pricing.py", calls=calls, keep=keep)


def test_a_refactor_that_drifts_a_float_or_skips_the_new_function_fails():
    # what the 1.5B wrote for refactor at 2228483: music_price returns the unrounded
    # discounted_total(...) * 1.2, 10.799999999999999 where the given file returned 10.8
    given, spec = users_module_floor("refactor", "pricing.py", refactor_criteria())
    shared = (
        "def discounted_total(price, quantity, member):\n    total = price * quantity\n"
        "    if member:\n        total = total - total * 0.10\n"
        "    if total > 100:\n        total = total - 5\n    return total\n\n\n"
        "def book_price(price, quantity, member):\n"
        "    return round(discounted_total(price, quantity, member), 2)\n\n\n"
    )
    drifted = shared + (
        "def music_price(price, quantity, member):\n"
        "    return round(discounted_total(price, quantity, member), 2) * 1.2\n"
    )
    failed = run_check(spec, {"pricing.py": drifted}, "pricing.py")
    assert not failed["passed"] and "in the given file it returned" in failed["evidence"]
    old_body = given + "\n\ndef discounted_total(price, quantity, member):\n    return 0.0\n"
    failed = run_check(spec, {"pricing.py": old_body}, "pricing.py")
    assert not failed["passed"] and "does not call discounted_total()" in failed["evidence"]
    done = shared + (
        "def music_price(price, quantity, member):\n"
        "    return round(discounted_total(price, quantity, member) * 1.2, 2)\n"
    )
    assert run_check(spec, {"pricing.py": done}, "pricing.py")["passed"]


def test_a_caller_that_lost_its_own_part_is_told_that_part_once():
    # d10 (2026-12-06): both callers became `return discounted_total(...)`; told five times
    # which music_price calls changed, the 1.5B never found the `* 1.2` it had dropped
    _, spec = users_module_floor("refactor", "pricing.py", refactor_criteria())
    lost = (
        "def discounted_total(price, quantity, member):\n    total = price * quantity\n"
        "    if member:\n        total = total - total * 0.10\n"
        "    if total > 100:\n        total = total - 5\n    return round(total, 2)\n\n\n"
        "def book_price(price, quantity, member):\n"
        "    return discounted_total(price, quantity, member)\n\n\n"
        "def music_price(price, quantity, member):\n"
        "    return discounted_total(price, quantity, member)\n"
    )
    report = run_check(spec, {"pricing.py": lost}, "pricing.py")
    evidence = report["evidence"]
    assert not report["passed"]
    assert "music_price does `return round(total * 1.2, 2)`" in evidence
    assert evidence.count("in the given file it returned") == 1  # one call quoted per function
    assert "more call(s) of music_price changed too" in evidence
    assert "book_price(" not in evidence  # book_price still ends as it did


WORDS = """
def split_words(text):
    import re
    return re.findall(r"[a-z0-9']+", text.lower())


def longest_word(text):
    from textkit.count import word_lengths
    lengths = word_lengths(text)
    return max(lengths, key=lengths.get, default="")
"""
COUNT = """
from textkit.words import split_words


def word_lengths(text):
    return {w: len(w) for w in split_words(text)}


def count_words(text):
    return len(split_words(text))
"""


def test_a_package_s_init_is_checked_as_the_package_a_user_imports():
    # the 1.5B's replan left the three steps unordered; its __init__.py re-exported with
    # relative imports and failed its check, run as a script ("no known parent package")
    plan = [
        step("S1", "textkit/words.py", action="coder"),
        step("S2", "textkit/count.py", action="coder"),
        step("S3", "textkit/__init__.py", action="coder"),
    ]
    steps, errors = parse_plan(  # ordering the steps is a small model's repair
        {"steps": plan}, actions={"coder"}, max_steps=5, goal=goal("package"), repairs=True
    )
    assert errors == [] and steps[2].depends_on == ["S1", "S2"]
    spec = steps[2].done_when
    package = {"textkit/words.py": WORDS, "textkit/count.py": COUNT}
    init = "from .words import *\nfrom .count import *\n"
    verdict = run_check(spec, {**package, "textkit/__init__.py": init}, "textkit/__init__.py")
    assert verdict["passed"], verdict["evidence"]
    circular = COUNT.replace(
        "from textkit.words", "from textkit.words import longest_word\nfrom textkit.words"
    )
    circular_words = "from textkit.count import word_lengths\n" + WORDS
    files = {
        "textkit/words.py": circular_words,
        "textkit/count.py": circular,
        "textkit/__init__.py": init,
    }
    failed = run_check(spec, files, "textkit/__init__.py")
    assert not failed["passed"] and "ImportError" in failed["evidence"]


def test_a_fix_that_changes_a_path_the_bug_does_not_take_fails():
    # what the 1.5B wrote for bughunt at c5d2c7c: the even branch fixed, the odd one broken
    # ("median([3, 1, 2])" returned 2.5): the run ended success, the hidden tests failed
    given, spec = users_module_floor("bughunt", "stats.py", bughunt_criteria(fixes=True))
    even = "return (ordered[middle] + ordered[middle + 1]) / 2"
    fixed = given.replace(even, "return (ordered[middle - 1] + ordered[middle]) / 2")
    odd_broken = fixed.replace("return ordered[middle]\n", f"{even}\n")
    assert odd_broken != fixed
    failed = run_check(spec, {"stats.py": odd_broken}, "stats.py")
    assert not failed["passed"] and "a path the failing median([1, 2, 3, 4])" in failed["evidence"]
    assert run_check(spec, {"stats.py": fixed}, "stats.py")["passed"]
    # one formula for both lengths changes the code of the odd path, not what it returns
    uniform = given.split("def median")[0] + (
        "def median(values: list[float]) -> float:\n    if not values:\n"
        "        raise ValueError('median of no values')\n    o = sorted(values)\n"
        "    return (o[(len(o) - 1) // 2] + o[len(o) // 2]) / 2\n"
    )
    assert run_check(spec, {"stats.py": uniform}, "stats.py")["passed"]
