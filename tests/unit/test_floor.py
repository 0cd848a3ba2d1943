"""The evidence floor (agent/plan/floor.py): what a goal's text states of its artifacts, and
which checks are raised to what a program can prove. Running the raised checks is in
tests/integration/test_floor_checks.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.checks import check_kinds, run_check, validate_check_spec
from agent.checks.examples import shown_check
from agent.checks.sql import READS, VALUES_FROM
from agent.plan.floor import (
    goal_calls,
    goal_column_sources,
    goal_examples,
    goal_functions,
    goal_json_keys,
    goal_smoke_calls,
    raise_to_floor,
    stated_floor,
    without_floor,
)
from agent.plan.steps import Step
from agent.plan.validation import parse_plan as _parse_plan
from tests.fakes import step

ACTIONS = {"writer", "coder"}


def parse_plan(*args, **kwargs):
    """The repairs a small model's profile turns on are under test here."""
    return _parse_plan(*args, repairs=True, **kwargs)


def plan(*steps, goal="", databases=()):
    parsed, errors = parse_plan(
        {"steps": list(steps)},
        actions=ACTIONS,
        max_steps=20,
        goal=goal,
        databases=databases,
        files=(),
    )
    assert errors == []
    return parsed


def stated(spec):
    """The names and examples of the floor's python part (None when there is none)."""
    parts = spec["checks"] if spec.get("kind") == "all" else [spec]
    for part in parts:
        if part.get("kind") == "python" and "stated" in part:
            return part["stated"]
    return None


# ------------------------------------------------------------------ what the goal states


@pytest.mark.parametrize(
    ("goal", "examples"),
    [
        ("median([1, 2, 3, 4]) should be 2.5 but it is wrong", [("median([1, 2, 3, 4])", "2.5")]),
        ("slug('A b') must return 'a-b'.", [("slug('A b')", "'a-b'")]),
        ("f(2)==4 and f(3) -> 9", [("f(2)", "4"), ("f(3)", "9")]),
        (
            "is_even(3) returns False; is_even(4) is True.",
            [("is_even(3)", "False"), ("is_even(4)", "True")],
        ),
        ("parse(x=1, y=[2, 3]) gives {'x': 1}", [("parse(x=1, y=[2, 3])", "{'x': 1}")]),
    ],
)
def test_examples_the_goal_states_are_found(goal, examples):
    assert goal_examples(goal) == examples


@pytest.mark.parametrize(
    "goal",
    [
        "f(2) returns 5 today but should return 4",  # today's behaviour, and no call after
        "area(r) returns the area",  # not a literal argument
        "to_roman(n: int) -> str",  # a signature, not a call
        "g(1) is 2. Later g(1) is 3.",  # two results for one call
        "h(1) is wrong",  # no literal result
        "len([1]) is 1",  # a builtin, not the artifact's function
        "obj.area(2) is 4",  # a method
        "f(1 should be 2",  # unbalanced
    ],
)
def test_what_is_not_a_wanted_example_is_not_asserted(goal):
    assert goal_examples(goal) == []


def test_functions_are_the_calls_and_signatures_the_goal_writes():
    goal = (
        "Write roman.py with to_roman(n: int) -> str; it must not call print(x) or "
        "str.join(a), and test_roman(x) is the tests' business. Use median ( of the list."
    )
    assert goal_functions(goal) == ["to_roman"]


@pytest.mark.parametrize(
    ("goal", "calls"),
    [
        ("Write to_roman(n: int) -> str in roman.py.", [("to_roman(1)", "str")]),
        ("mean(xs: list[float]) -> float", [("mean([1.5, 2.5])", "float")]),
        ("count(s: str, *, ch: str) -> int", [("count('abc', ch='abc')", "int")]),
        ("f(x: Optional[int], m: dict[str, int]) -> dict[str, int]", [("f(1, {'a': 1})", "dict")]),
        ("top(xs: list[int]) -> int | None", [("top([1, 2, 3])", "")]),
        ("log(msg: str) -> None", [("log('abc')", "None")]),
        ("parse(doc: Document) -> str", []),  # no value can be made for a type not known
        ("main() -> None", []),  # nothing to call it with: it may do anything
        ("area(w: int, h: int = 2)", [("area(1)", "")]),
        ("Shape.area(self, k: int) -> float", []),  # a method
        ("it must not call print(x: int)", []),  # a builtin
    ],
)
def test_smoke_calls_are_made_from_the_signatures_the_goal_writes(goal, calls):
    assert goal_smoke_calls(goal) == calls


def test_top_level_json_keys_are_the_least_nested_ones():
    goal = (
        'Write out.json: "items": a list of {"sku": string, "qty": integer}; '
        '"total": a number; and "missing": the skus with qty 0.'
    )
    assert goal_json_keys(goal) == ["items", "total", "missing"]
    assert goal_json_keys('{"service": "ledger", "region": <r>, "conf": {"a": 1}}') == [
        "service",
        "region",
        "conf",
    ]
    assert goal_json_keys("Write out.json with the totals.") == []


# ------------------------------------------------------------------ which checks are raised


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "exists"},
        {"kind": "non_empty"},
        {"kind": "contains", "all": ["def to_roman"]},
        {"kind": "regex", "pattern": "def "},
        "the code is clear",
    ],
)
def test_a_weak_check_on_a_module_gets_the_goal_s_names_and_examples(check):
    goal = "Fix stats.py: median([1, 2, 3, 4]) should be 2.5; keep mean(xs) as it is."
    (raised,) = plan(step("S1", "stats.py", action="coder", check=check), goal=goal)
    spec = raised.done_when
    assert spec["kind"] == "all" and spec["floor"] is True
    assert list(check_kinds(spec))[:2] == ["non_empty", "python"]
    assert stated(spec) == {
        "defines": ["median", "mean"],
        "examples": ["median([1, 2, 3, 4]) == 2.5"],
    }
    assert validate_check_spec(spec) == []
    # the planner's own check is kept after the floor (a rubric last: no judge on a failure)
    kept = without_floor(spec)
    assert kept == ({"kind": "non_empty"} if check in ({"kind": "exists"},) else check)


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "python", "code": "assert f(1) == 2"},
        {"kind": "json_schema", "schema": {}},
        {"kind": "all", "checks": [{"kind": "non_empty"}, {"kind": "python", "code": "pass"}]},
    ],
)
def test_a_check_that_runs_or_parses_the_artifact_is_the_planner_s_evidence(check):
    (kept,) = plan(step("S1", "x.py", action="coder", check=check), goal="Write x.py.")
    assert kept.done_when == check
    (data,) = plan(step("S1", "x.json", check=check), goal="Write x.json: f(1) is 2")
    assert data.done_when == check  # the goal's calls are not a JSON file's business


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "python", "code": "assert median([1, 2, 3]) == 2"},  # the 1.5B's, on bughunt
        {"kind": "pytest", "tests": ["test_stats.py"]},
    ],
)
def test_what_the_goal_states_of_its_module_is_asserted_before_a_strong_check(check):
    goal = "stats.py has a bug: median([1, 2, 3, 4]) should be 2.5. Fix it in stats.py."
    steps = [
        step("S1", "test_stats.py", action="coder"),
        step("S2", "stats.py", action="coder", deps=("S1",), check=check),
    ]
    raised = plan(*steps, goal=goal)[1].done_when
    parts = raised["checks"]
    assert raised["floor"] and parts[1]["stated"]["examples"] == ["median([1, 2, 3, 4]) == 2.5"]
    assert parts[2:] == [check] and without_floor(raised) == check
    once = plan(*steps, goal=goal)
    assert raise_to_floor(once, goal) == once  # raised once


def test_a_module_the_goal_does_not_name_as_its_one_module_must_only_run():
    goal = "Write a.py and b.py: a.py has f(x) and b.py has g(x)."
    a, b = plan(
        step("S1", "a.py", action="coder"),
        step("S2", "b.py", action="coder", deps=("S1",)),
        goal=goal,
    )
    # b.py, which it may import, is not written yet: a.py must parse, nothing runs
    assert [c["kind"] for c in a.done_when["checks"]] == ["non_empty", "syntax"]
    assert stated(b.done_when) == {"defines": [], "examples": []}


def test_test_files_keep_their_check_and_prose_is_judged_beside_it():
    steps = plan(
        step("S1", "test_roman.py", action="coder"),
        step("S2", "notes.md"),
        step("S3", "conftest.py", action="coder"),
        goal="Write roman.py with to_roman(n) and its tests.",
    )
    assert [steps[0].done_when, steps[2].done_when] == [{"kind": "non_empty"}] * 2
    notes = steps[1].done_when["checks"]
    assert [c["kind"] for c in notes] == ["non_empty", "rubric"]
    assert any("Write notes.md." in c for c in notes[1]["criteria"])
    assert without_floor(steps[1].done_when) == {"kind": "non_empty"}


def test_json_gets_the_goal_s_keys_only_when_it_is_the_goal_s_one_json_file():
    goal = 'Write inventory.json with "items": [...] and "total": a number.'
    (one,) = plan(step("S1", "inventory.json"), goal=goal)
    schema = one.done_when["checks"][1]["schema"]
    assert schema["anyOf"][0] == {"type": "object", "required": ["items", "total"]}
    (other,) = plan(step("S1", "notes.json"), goal=goal)
    assert other.done_when["checks"][1] == {"kind": "json_schema", "schema": {}}


GENRES = (
    "Write top.sql: one query on the chinook database returning the genre's Name and its "
    "number of tracks, for the 3 genres with the most tracks."
)
DB = ("chinook",)


def test_a_column_the_goal_says_comes_from_a_table_is_checked_against_that_table():
    # on the 1.5B a query returning the track's Name for the genre's passed (a false success)
    (floor,) = plan(step("S1", "top.sql"), goal=GENRES, databases=DB)
    sources = [{"column": "Name", "table": "genre", "distinct": True}]
    stated = {"kind": "sql", "db": "chinook", VALUES_FROM: sources, READS: ["tracks"]}
    assert floor.done_when["checks"][1] == stated
    # the planner's own sql check is strong: the goal's columns are asserted beside it
    own = {"kind": "sql", "db": "chinook", "expect_rows": 3}
    (strong,) = plan(step("S1", "top.sql", check=own), goal=GENRES, databases=DB)
    parts = strong.done_when["checks"]
    assert stated in parts and own in parts
    (plain,) = plan(step("S1", "top.sql", check=own), goal="Write top.sql.", databases=DB)
    assert plain.done_when == own


def test_the_goal_s_owned_columns_are_read_as_table_and_column():
    goal = "List each customer's Email and the artist\u2019s Name (not the user's guess)."
    assert goal_column_sources(goal) == [
        {"column": "Email", "table": "customer"},
        {"column": "Name", "table": "artist"},
        {"column": "guess", "table": "user"},  # the database tells, when the check runs
    ]


@pytest.mark.parametrize(
    ("goal", "distinct"),
    [
        ("the genre's Name for the 3 genres with the most tracks", True),
        ("the genre's Name and its track count, per genre", True),
        ("the top 5 genres: the genre's Name", True),
        ("each track's Name with its genre's Name", False),  # one row per track
        ("the genre's Name of every track", False),
    ],
)
def test_one_row_per_table_row_is_read_where_the_goal_asks_for_it(goal, distinct):
    genre = next(s for s in goal_column_sources(goal) if s["table"] == "genre")
    assert genre.get("distinct", False) is distinct


def test_sql_runs_on_the_database_the_goal_names_or_the_one_declared():
    (named,) = plan(
        step("S1", "q.sql"), goal="Query the chinook database.", databases=("chinook", "hr")
    )
    assert named.done_when["checks"][1] == {"kind": "sql", "db": "chinook"}
    (only,) = plan(step("S1", "q.sql"), goal="Write q.sql.", databases=("hr",))
    assert only.done_when["checks"][1] == {"kind": "sql", "db": "hr"}
    (unknown,) = plan(step("S1", "q.sql"), goal="Write q.sql.", databases=("a", "b"))
    assert unknown.done_when == {"kind": "non_empty"}  # which one is not for code to guess


def test_raising_is_idempotent_and_a_replan_sees_the_planner_s_check():
    goal = "Write roman.py with to_roman(n)."
    once = raise_to_floor(
        [Step.model_validate(step("S1", "roman.py", action="coder", check={"kind": "exists"}))],
        goal,
    )
    assert raise_to_floor(once, goal) == once
    assert without_floor(once[0].done_when) == {"kind": "non_empty"}


def test_a_prompt_shows_what_the_floor_asserts_not_its_program():
    goal = "Fix stats.py: median([1, 2, 3, 4]) should be 2.5."
    (raised,) = plan(step("S1", "stats.py", action="coder"), goal=goal)
    shown = shown_check(raised.done_when)
    assert shown == {
        "kind": "all",
        "checks": [
            {"kind": "non_empty"},
            {
                "kind": "python",
                "runs": True,
                "defines": ["median"],
                "examples": ["median([1, 2, 3, 4]) == 2.5"],
            },
        ],
    }


def test_a_users_module_keeps_its_public_names_when_a_step_rewrites_it():
    goal = "stats.py has a bug: median([1, 2, 3, 4]) should be 2.5. Fix it in stats.py."
    kept = {"stats.py": "def mean(v): ...\ndef median(v): ...\n"}
    steps = [step("S1", "stats.py", action="coder", check={"kind": "python", "code": "pass"})]
    parsed, errors = parse_plan(
        {"steps": steps}, actions=ACTIONS, max_steps=5, goal=goal, files=["stats.py"], kept=kept
    )
    assert errors == []
    assert parsed[0].done_when["checks"][1]["stated"]["defines"] == ["median", "mean"]
    other = "Write a.py and b.py."  # the goal names no one module: the kept names still hold
    (raised,) = plan(step("S1", "a.py", action="coder"), goal=other)
    assert raised.done_when["checks"][1]["stated"]["defines"] == []
    parsed, _ = parse_plan(
        {"steps": [step("S1", "a.py", action="coder")]},
        actions=ACTIONS,
        max_steps=5,
        goal=other,
        kept={"a.py": "def f(x): ...\n"},
    )
    assert parsed[0].done_when["checks"][1]["stated"]["defines"] == ["f"]


@pytest.mark.parametrize(
    ("goal", "paths"),
    [
        (
            "stats.py has a bug: median([1, 2, 3, 4]) should be 2.5. Fix it in stats.py.",
            ["median([])", "median([2.5])"],
        ),
        # no bug to fix: the goal changes what median does, not only where it was wrong
        ("In stats.py, make median([1, 2, 3, 4]) return 2 (the lower middle).", []),
    ],
)
def test_a_fix_keeps_the_fixed_function_s_other_paths_only_when_the_goal_fixes(goal, paths):
    kept = {"stats.py": "def median(v: list[float]) -> float:\n    return v[0]\n"}
    steps = [step("S1", "stats.py", action="coder")]
    parsed, errors = parse_plan(
        {"steps": steps}, actions=ACTIONS, max_steps=5, goal=goal, files=["stats.py"], kept=kept
    )
    assert errors == []
    stated = parsed[0].done_when["checks"][1]["stated"]
    assert stated.get("ends_as_in_the_given_file_off_the_bug_s_path", [])[:2] == paths


def test_the_planner_keeps_the_users_modules_as_given_only():
    from agent.plan.planner import user_modules
    from agent.vfs.entries import file_entry

    mine = {**file_entry("def mean(v): ...\n", step=0), "origin": "user"}
    theirs = file_entry("def made(v): ...\n", step=1)  # a step's artifact, not the user's
    notes = {**file_entry("def x(): ...\n", step=0), "origin": "user"}
    edited = {**file_entry("X = 1\n", step=2), "origin": "user", "given": "def f(): ...\n"}
    files = {"stats.py": mine, "gen.py": theirs, "notes.md": notes, "old.py": edited}
    # as the user gave them: a step's rewrite of old.py does not change what it must keep
    assert user_modules(files) == {"stats.py": "def mean(v): ...\n", "old.py": "def f(): ...\n"}


CITING = (
    "Write report.md: a short report on vector indexes. Use the search tool to find sources "
    "and cite at least 2 of them by the URLs the search returned; cite no other URL."
)


@pytest.mark.parametrize("check", [{"kind": "exists"}, {"kind": "non_empty"}])
def test_a_report_the_goal_asks_to_cite_must_cite_what_the_tools_returned(check):
    (raised,) = plan(step("S1", "report.md", action="writer", check=check), goal=CITING)
    assert {"kind": "citations", "min": 2} in raised.done_when["checks"]
    assert "citations" in check_kinds(raised.done_when)


@pytest.mark.parametrize(
    ("goal", "least"),
    [
        ("Write notes.md and cite your sources.", 1),
        ("Write notes.md; cite at least three sources.", 3),
        ("Write notes.md citing no fewer than 4 papers.", 4),
    ],
)
def test_the_least_number_of_citations_is_the_one_the_goal_states(goal, least):
    (raised,) = plan(step("S1", "notes.md", action="writer", check={"kind": "exists"}), goal=goal)
    assert {"kind": "citations", "min": least} in raised.done_when["checks"]


@pytest.mark.parametrize(
    ("path", "goal"),
    [
        ("report.md", "Write report.md: a short summary of HNSW."),  # no citations asked
        ("notes.md", CITING),  # a document the goal does not name
    ],
)
def test_a_document_without_asked_citations_keeps_the_planner_s_check(path, goal):
    (kept,) = plan(step("S1", path, action="writer", check={"kind": "exists"}), goal=goal)
    assert "citations" not in check_kinds(kept.done_when)


TWO_MODULES = (
    "Write a package of two modules. pkg/a.py: f(t) returns the words and must use g "
    "from pkg/b.py. pkg/b.py: g(t) must use f from pkg/a.py; h(t) counts."
)


def two_modules(goal: str = TWO_MODULES) -> tuple[Any, Any]:
    """The plan of a package whose two modules use each other's functions."""
    a, b = plan(
        step("S1", "pkg/a.py", action="coder"),
        step("S2", "pkg/b.py", action="coder"),
        goal=goal,
    )
    return a, b


def test_a_module_that_cannot_run_yet_must_use_what_its_part_of_the_goal_says():
    a, b = two_modules()
    assert a.done_when["checks"][1] == {"kind": "syntax", "uses": ["g"], "defines": ["f"]}
    report = run_check(a.done_when, {"pkg/a.py": "def f(t):\n    return t\n"}, "pkg/a.py")
    assert not report["passed"] and "g" in report["evidence"]
    # the plan's other module runs after it, and its check runs the package
    assert b.depends_on == ["S1"] and "python" in check_kinds(b.done_when)
    a_py = "def f(t):\n    from pkg.b import g\n    return t.split()\n"
    missing_h = "from pkg.a import f\n\n\ndef g(t):\n    return f(t)\n"
    files = {"pkg/a.py": a_py, "pkg/b.py": missing_h}
    report = run_check(b.done_when, files, "pkg/b.py")
    assert not report["passed"] and "h is not defined" in report["evidence"]


def test_a_module_that_runs_after_its_siblings_must_still_use_what_the_goal_says():
    # on the 1.5B, textkit/count.py split words itself, never calling split_words: it ran,
    # defined its functions and passed, and the run ended success (a false success)
    _, b = two_modules()
    a_py = "def f(t):\n    import pkg.b\n    return pkg.b.g(t)\n"
    own = "def g(t):\n    return t.split()\n\n\ndef h(t):\n    return len(g(t))\n"
    report = run_check(b.done_when, {"pkg/a.py": a_py, "pkg/b.py": own}, "pkg/b.py")
    assert not report["passed"] and "f" in report["evidence"]
    uses = "from pkg.a import f\n\n\n" + own.replace("t.split()", "f(t)")
    report = run_check(b.done_when, {"pkg/a.py": a_py, "pkg/b.py": uses}, "pkg/b.py")
    assert report["passed"], report["evidence"]


def test_the_module_written_last_runs_the_goal_s_examples_of_every_module_of_the_package():
    # the modules written before their siblings only parse: the goal's (or a human's)
    # example of split_words was never run, and a split_words that kept case passed
    examples = " f('Hi you') == ['hi', 'you'] and h('a b') == 2."
    a, b = two_modules(TWO_MODULES.replace("the words", "the words, lowercased,") + examples)
    assert "python" not in check_kinds(a.done_when)  # its sibling is not written yet
    b_py = (
        "from pkg.a import f\n\n\ndef g(t):\n    return f(t)\n\n\ndef h(t):\n    return len(f(t))\n"
    )
    keeps_case = "def f(t):\n    import pkg.b\n    return t.split()\n"
    report = run_check(b.done_when, {"pkg/a.py": keeps_case, "pkg/b.py": b_py}, "pkg/b.py")
    assert not report["passed"] and "pkg.a.f('Hi you') returned ['Hi', 'you']" in report["evidence"]
    lowered = keeps_case.replace("t.split()", "t.lower().split()")
    report = run_check(b.done_when, {"pkg/a.py": lowered, "pkg/b.py": b_py}, "pkg/b.py")
    assert report["passed"], report["evidence"]


PRICING = (
    "def book_price(p, q, m):\n    return p * q\n\n\n"
    "def music_price(p, q, m):\n    return p * q * 1.2\n\n\n"
    "def tax(p):\n    return p * 0.2\n"
)


@pytest.mark.parametrize(
    ("goal", "pairs"),
    [
        (
            "Refactor pricing.py: book_price and music_price repeat the discount. Move it into "
            "one function discounted_total(price, quantity, member) and make both functions "
            "call it.",
            [("book_price", "discounted_total"), ("music_price", "discounted_total")],
        ),
        (
            "Add a helper base(p, q) to pricing.py and use it in book_price; keep tax as it is.",
            [("book_price", "base")],
        ),
        ("Make book_price call base(p, q), a new helper.", [("book_price", "base")]),
        # no new function, or nothing said about calling it: no pair
        ("Fix music_price in pricing.py: make it call tax.", []),
        ("Add a function total(p) to pricing.py.", []),
    ],
)
def test_a_refactor_s_new_function_must_be_called_where_the_goal_says(goal, pairs):
    assert goal_calls(goal, PRICING) == pairs
    assert goal_calls(goal, "") == []  # no user's module: nothing to refactor


def test_the_refactor_floor_refuses_old_bodies_that_keep_the_behaviour(tmp_path):

    goal = (
        "Refactor pricing.py: move the shared product into one function base(p, q) and make "
        "both book_price and music_price call it. Behaviour must not change."
    )
    step = Step(
        step_id="S1", action="coder", instructions="Refactor.", expected_output="pricing.py"
    )
    spec = stated_floor(step, [step], goal, kept={"pricing.py": PRICING})
    assert spec is not None and spec["stated"]["calls"] == [
        "book_price calls base",
        "music_price calls base",
    ]
    kept_bodies = PRICING + "\n\ndef base(p, q):\n    return p * q\n"
    report = run_check(spec, {"pricing.py": kept_bodies}, "pricing.py")
    assert not report["passed"] and "music_price() does not call base()" in report["evidence"]
    assert "book_price() does not call base()" in report["evidence"]
    done = (
        "def base(p, q):\n    return p * q\n\n\n"
        "def book_price(p, q, m):\n    return base(p, q)\n\n\n"
        "def music_price(p, q, m):\n    return base(p, q) * 1.2\n\n\n"
        "def tax(p):\n    return p * 0.2\n"
    )
    assert run_check(spec, {"pricing.py": done}, "pricing.py")["passed"]


PACKAGE_GOAL = (
    "Write a package textkit of two modules. textkit/words.py: split_words(text) returns the "
    "words of text. textkit/count.py: word_lengths(text) must use split_words from "
    "textkit/words.py. Also write textkit/__init__.py."
)
CIRCULAR = {
    "textkit/__init__.py": "# textkit\n",
    "textkit/words.py": "from textkit.count import word_lengths\n\n\ndef split_words(t):\n"
    "    return t.split()\n",
    "textkit/count.py": "from textkit.words import split_words\n\n\ndef word_lengths(t):\n"
    "    return {w: len(w) for w in split_words(t)}\n",
}


def test_the_step_after_every_module_of_a_package_imports_each_of_them():

    steps = [
        Step(step_id="S1", action="coder", instructions="w", expected_output="textkit/words.py"),
        Step(
            step_id="S2",
            action="coder",
            instructions="c",
            expected_output="textkit/count.py",
            depends_on=["S1"],
        ),
        Step(
            step_id="S3",
            action="coder",
            instructions="i",
            expected_output="textkit/__init__.py",
            depends_on=["S1", "S2"],
        ),
    ]
    raised = raise_to_floor(steps, PACKAGE_GOAL)
    assert "syntax" in set(check_kinds(raised[0].done_when))  # count.py is not written yet
    # count.py runs after words.py (the __init__.py need not be there): the cycle fails
    # at the step that can break it, before the package's own step
    second = raised[1].done_when
    assert "python" in set(check_kinds(second))
    siblings = {k: v for k, v in CIRCULAR.items() if k != "textkit/__init__.py"}
    report = run_check(second, siblings, "textkit/count.py")
    assert not report["passed"] and "circular import" in report["evidence"]
    lazy = "def split_words(t):\n    return t.split()\n"
    assert run_check(second, {**siblings, "textkit/words.py": lazy}, "textkit/count.py")["passed"]
    last = raised[2].done_when
    # each module parses alone; the package imported as a user would is the proof
    report = run_check(last, CIRCULAR, "textkit/__init__.py")
    assert not report["passed"] and "circular import" in report["evidence"]
    fixed = dict(CIRCULAR)
    fixed["textkit/words.py"] = "def split_words(t):\n    return t.split()\n"
    assert run_check(last, fixed, "textkit/__init__.py")["passed"]
    # a package's __init__.py may be empty; it must still exist
    assert run_check(last, {**fixed, "textkit/__init__.py": ""}, "textkit/__init__.py")["passed"]
    missing = {k: v for k, v in fixed.items() if k != "textkit/__init__.py"}
    assert not run_check(last, missing, "textkit/__init__.py")["passed"]
    alone = raise_to_floor([steps[0]], "Write textkit/words.py with split_words(text).")
    assert "import textkit" not in json.dumps(alone[0].done_when)


def test_a_refactor_s_new_function_computes_what_its_callers_shared():
    """A ``discounted_total`` that rounds kept both callers' results (each rounds again)
    and failed the hidden test of the function itself: the floor compares it with the
    code the callers shared, up to float rounding."""
    from pathlib import Path

    goals = Path(__file__).parents[2] / "bench" / "goals" / "refactor"
    goal = json.loads((goals / "goal.json").read_text())["goal"]
    given = (goals / "given" / "pricing.py").read_text()
    step = Step(
        step_id="S1", action="coder", instructions="Refactor.", expected_output="pricing.py"
    )
    spec = stated_floor(step, [step], goal, kept={"pricing.py": given})
    assert spec is not None and spec["stated"]["returns_as_the_shared_code"]
    done = (
        "def discounted_total(price, quantity, member):\n"
        "    total = price * quantity * (0.9 if member else 1)\n"  # rearranged: equal enough
        "    return total - 5 if total > 100 else total\n\n\n"
        "def book_price(price, quantity, member):\n"
        "    return round(discounted_total(price, quantity, member), 2)\n\n\n"
        "def music_price(price, quantity, member):\n"
        "    return round(discounted_total(price, quantity, member) * 1.2, 2)\n"
    )
    assert run_check(spec, {"pricing.py": done}, "pricing.py")["passed"]
    rounds = done.replace("return total - 5 if", "return round(total - 5, 2) if")
    rounds = rounds.replace("else total\n", "else round(total, 2)\n")
    report = run_check(spec, {"pricing.py": rounds}, "pricing.py")
    assert not report["passed"] and "book_price and music_price share" in report["evidence"]
    no_rebate = done.replace(
        "    return total - 5 if total > 100 else total\n", "    return total\n"
    )
    report = run_check(spec, {"pricing.py": no_rebate}, "pricing.py")
    assert not report["passed"] and "book_price(" in report["evidence"]


def test_a_weak_check_the_planner_wrote_wrong_gives_way_to_the_floor():
    """On the 1.5B a replan's ``syntax`` check with ``uses`` that were not Python names
    refused the whole plan (``invalid_plan``); the floor proves more than that check."""
    goal = "Write a package. pkg/a.py: f(t) must use g from pkg/b.py. pkg/b.py: g(t) counts."
    wrong = {"kind": "syntax", "uses": "pkg.b.g()", "defines": ["f(t)"]}
    (a,) = plan(step("S1", "pkg/a.py", action="coder", check=wrong), goal=goal)
    assert validate_check_spec(a.done_when) == []
    assert wrong not in a.done_when["checks"]


def test_a_weak_check_that_cannot_pass_on_its_file_gives_way():
    # a replan of the 1.5B: a syntax check with "uses" on top_genres.sql failed every
    # draft of a right query until the depth cap
    impossible = {"kind": "syntax", "uses": ["query"], "defines": ["query"]}
    sql = {"kind": "sql", "db": "chinook"}
    plan_ = {
        "steps": [
            step(
                "S1", "top.sql", action="coder", check={"kind": "all", "checks": [sql, impossible]}
            ),
            step(
                "S2",
                "notes.md",
                check={"kind": "all", "checks": [{"kind": "contains", "all": ["x"]}, impossible]},
            ),
        ]
    }
    parsed, errors = parse_plan(plan_, actions=ACTIONS, max_steps=5, databases=["chinook"])
    assert errors == []
    top = set(check_kinds(parsed[0].done_when))
    assert "syntax" not in top and "sql" in top
    notes = set(check_kinds(parsed[1].done_when))
    assert "syntax" not in notes and "contains" in notes
    alone = {"steps": [step("S1", "notes.md", check={"kind": "syntax"})]}
    # without repairs (the default profile) a check that cannot pass is sent back, never dropped
    parsed, errors = _parse_plan(alone, actions=ACTIONS, max_steps=5)
    assert parsed is None and any("cannot pass here: no syntax check for .md" in e for e in errors)


def test_a_program_printing_json_is_shown_its_checks_as_lines_not_as_json():
    from agent.checks.examples import checks_listed

    spec = {
        "kind": "all",
        "checks": [{"kind": "non_empty"}, {"kind": "json_schema", "schema": {"type": "object"}}],
        "floor": True,
    }
    listed = checks_listed(spec)
    assert listed.splitlines() == ["- non_empty", '- json_schema: {"schema": {"type": "object"}}']
    assert '"kind"' not in listed and "checks" not in listed
    assert checks_listed("clear and short") == "- rubric: clear and short"


def test_a_program_is_told_the_schema_s_own_keywords_in_words():
    # d9/d10: shown "x-sortedBy": [{"key": "sku", ...}], the 1.5B's program never sorted
    from agent.checks.examples import checks_listed

    goal = (
        'Write inventory.json: "items": a list of {"sku": string, "qty": integer}, sorted by '
        'sku, and "out_of_stock": the list of skus whose qty is 0. SKUs: A-100, B-2.'
    )
    (one,) = plan(step("S1", "inventory.json"), goal=goal)
    listed = checks_listed(one.done_when)
    assert "x-" not in listed
    said = [line[4:] for line in listed.splitlines() if line.startswith("  - ")]
    assert 'every list of objects with "sku" is sorted by it, ascending' in said
    assert any('"sku"' in line and '"qty"' in line for line in said)
    assert '"out_of_stock" lists "sku" values, not whole objects' in said


@pytest.mark.parametrize(
    ("goal", "counted"),
    [
        ("the genre's Name and its number of tracks", ["tracks"]),
        (
            "how many invoices each customer has, and the count of their lines",
            ["invoices", "lines"],
        ),
        ("the 3 genres with the most tracks", []),
    ],
)
def test_the_tables_a_goal_counts_are_read(goal, counted):
    from agent.plan.floor import goal_counted_tables

    assert goal_counted_tables(goal) == counted


def test_a_planner_s_pattern_over_json_text_gives_way_to_the_floor():
    # d12: '^inventory.json \\{ "total_value": \\d+, ...' failed a right file to the depth cap
    goal = 'Write inventory.json with "items": a list and "total": a number.'
    pattern = {"kind": "regex", "pattern": '^\\{ "total": \\d+ \\}$'}
    (one,) = plan(step("S1", "inventory.json", check=pattern), goal=goal)
    assert "regex" not in check_kinds(one.done_when) and "json_schema" in check_kinds(one.done_when)
    (md,) = plan(step("S1", "notes.md", check=pattern), goal="Write notes.md.")
    assert "regex" in check_kinds(md.done_when)  # a document's pattern stays
