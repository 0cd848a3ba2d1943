"""The evidence floor (agent/plan/floor.py): the goal's criteria (its literals, and the
criteria given as data) compiled into checks, and which checks are raised to what a program
can prove. Reading the literals is in tests/unit/test_criteria.py; running more of the
raised checks is in tests/integration/test_floor_checks.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.checks import check_kinds, run_check, validate_check_spec
from agent.checks.shown import shown_check
from agent.checks.sql import READS
from agent.plan.criteria import (
    CallCriterion,
    CountCriterion,
    ExampleCriterion,
    FileCriteria,
    GoalCriteria,
    NameCriterion,
    OrderCriterion,
    ValuesCriterion,
    signatures,
    verified,
)
from agent.plan.floor import raise_to_floor, smoke_calls, stated_floor, without_floor
from agent.plan.steps import Step
from agent.plan.validation import parse_plan as _parse_plan
from tests.fakes import step

ACTIONS = {"writer", "coder"}


def parse_plan(*args, **kwargs):
    """The repairs a small model's profile turns on are under test here."""
    return _parse_plan(*args, repairs=True, **kwargs)


def plan(*steps, goal="", databases=(), criteria=None):
    parsed, errors = parse_plan(
        {"steps": list(steps)},
        actions=ACTIONS,
        max_steps=20,
        goal=goal,
        databases=databases,
        files=(),
        criteria=criteria,
    )
    assert errors == []
    return parsed


def of(path: str, **stated) -> GoalCriteria:
    """Criteria of one file, as the planner's (verified) or a human's answer give them."""
    return GoalCriteria(files=[FileCriteria(path=path, **stated)])


def bare(part):
    """A check part without the origin the floor marks its own parts with."""
    return {k: v for k, v in part.items() if k != "origin"}


def stated(spec):
    """What the floor's ``examples`` part asserts, as a prompt shows it (None when there
    is none)."""
    parts = spec["checks"] if spec.get("kind") == "all" else [spec]
    for part in parts:
        if part.get("kind") == "examples":
            return {k: v for k, v in shown_check(part).items() if k != "kind"}
    return None


# ------------------------------------------------------------------ what the goal states


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
    assert smoke_calls(signatures(goal)) == calls


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
    goal = "Fix stats.py: median([1, 2, 3, 4]) == 2.5; keep mean(xs) as it is."
    (raised,) = plan(step("S1", "stats.py", action="coder", check=check), goal=goal)
    spec = raised.done_when
    assert spec["kind"] == "all"
    assert [p["origin"] for p in spec["checks"][:2]] == ["floor", "floor"]
    assert list(check_kinds(spec))[:2] == ["non_empty", "examples"]
    assert stated(spec) == {
        "defines": ["mean", "median"],  # the signature written, then the example's call
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
    (data,) = plan(step("S1", "x.json", check=check), goal="Write x.json: f(1) == 2")
    assert data.done_when == check  # the goal's calls are not a JSON file's business


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "python", "code": "assert median([1, 2, 3]) == 2"},  # the 1.5B's, on bughunt
        {"kind": "pytest", "tests": ["test_stats.py"]},
    ],
)
def test_what_the_goal_states_of_its_module_is_asserted_before_a_strong_check(check):
    goal = "stats.py has a bug: median([1, 2, 3, 4]) == 2.5. Fix it in stats.py."
    steps = [
        step("S1", "test_stats.py", action="coder"),
        step("S2", "stats.py", action="coder", deps=("S1",), check=check),
    ]
    raised = plan(*steps, goal=goal)[1].done_when
    parts = raised["checks"]
    assert parts[1]["origin"] == "floor" and stated(parts[1])["examples"] == [
        "median([1, 2, 3, 4]) == 2.5"
    ]
    assert parts[2:] == [check] and without_floor(raised) == check
    once = plan(*steps, goal=goal)
    assert raise_to_floor(once, goal) == once  # raised once


@pytest.mark.slow  # runs checks in sandboxed processes
def test_an_example_the_criteria_state_in_words_is_asserted_like_a_literal_one():
    # the goal's "should be" is the planner's to read, as a criterion quoting it
    goal = "stats.py has a bug: median([1, 2, 3, 4]) should be 2.5. Fix it in stats.py."
    example = ExampleCriterion(
        call="median([1, 2, 3, 4])", expected="2.5", quote="median([1, 2, 3, 4]) should be 2.5"
    )
    (words,) = plan(step("S1", "stats.py", action="coder"), goal=goal)
    assert stated(words.done_when) == {"defines": [], "examples": []}
    (raised,) = plan(
        step("S1", "stats.py", action="coder"),
        goal=goal,
        criteria=of("stats.py", examples=[example]),
    )
    assert stated(raised.done_when) == {
        "defines": ["median"],
        "examples": ["median([1, 2, 3, 4]) == 2.5"],
    }
    buggy = "def median(v):\n    return sorted(v)[len(v) // 2]\n"
    report = run_check(raised.done_when, {"stats.py": buggy}, "stats.py")
    assert not report["passed"] and "median([1, 2, 3, 4]) returned 3" in report["evidence"]
    fixed = "def median(v):\n    s = sorted(v)\n    n = len(s)\n"
    fixed += "    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n"
    assert run_check(raised.done_when, {"stats.py": fixed}, "stats.py")["passed"]


@pytest.mark.slow  # runs checks in sandboxed processes
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
    assert [c["kind"] for c in notes] == ["non_empty", "citations", "rubric"]
    assert notes[1]["min"] == 0  # no URL invented, none required
    assert any("Write notes.md." in c for c in notes[2]["criteria"])
    assert without_floor(steps[1].done_when) == {"kind": "non_empty"}


@pytest.mark.slow  # runs checks in sandboxed processes
def test_json_gets_the_goal_s_keys_only_when_it_is_the_goal_s_one_json_file():
    goal = 'Write inventory.json with "items": [...] and "total": a number.'
    (one,) = plan(step("S1", "inventory.json"), goal=goal)
    schema = shown_check(one.done_when["checks"][1])["schema"]
    assert schema["anyOf"][0] == {"type": "object", "required": ["items", "total"]}
    (other,) = plan(step("S1", "notes.json"), goal=goal)
    assert other.done_when["checks"][1] == {"kind": "json_shape", "origin": "floor"}


GENRES = (
    "Write top.sql: one query on the chinook database returning the genre's Name and its "
    "number of tracks, for the 3 genres with the most tracks."
)
DB = ("chinook",)


COUNTED = of("top.sql", reads=[NameCriterion(name="tracks", quote="its number of tracks")])


def test_a_table_the_criteria_say_the_query_counts_must_be_read():
    # on the 1.5B a query counting the genre's rows for its tracks passed (a false success)
    (floor,) = plan(step("S1", "top.sql"), goal=GENRES, databases=DB, criteria=COUNTED)
    stated = {"kind": "sql", "db": "chinook", READS: ["tracks"], "origin": "floor"}
    assert floor.done_when["checks"][1] == stated
    assert validate_check_spec(floor.done_when) == []
    # the planner's own sql check is strong: the tables read are asserted beside it
    own = {"kind": "sql", "db": "chinook", "expect_rows": 3}
    (strong,) = plan(step("S1", "top.sql", check=own), goal=GENRES, databases=DB, criteria=COUNTED)
    parts = strong.done_when["checks"]
    assert stated in parts and own in parts
    # without the criterion the goal's words state no table: the planner's check stands
    (plain,) = plan(step("S1", "top.sql", check=own), goal=GENRES, databases=DB)
    assert plain.done_when == own


@pytest.mark.parametrize(
    "goal",
    [
        "Write top.sql on chinook (tables Genre(GenreId, Name) and Track(TrackId, GenreId)): "
        "each genre's Name and its number of tracks.",
        "Schreibe top.sql auf chinook (Tabellen Genre(GenreId, Name) und Track(TrackId, "
        "GenreId)): pro Genre der Name und die Anzahl seiner Tracks.",
        "top.sql を書いて。chinook の Genre(GenreId, Name) と Track(TrackId, GenreId) から。",
    ],
)
def test_the_tables_a_goal_writes_with_their_columns_are_read_by_its_query(goal):
    # on the 1.5B a query counting tracks by their own name passed a check of its rows only
    (floor,) = plan(step("S1", "top.sql"), goal=goal, databases=DB)
    stated = {"kind": "sql", "db": "chinook", READS: ["Genre", "Track"], "origin": "floor"}
    assert floor.done_when["checks"][1] == stated
    # a call with literal arguments, or a function with typed parameters, names no table
    (none,) = plan(step("S1", "top.sql"), goal="Write top.sql on chinook: f(1) == 2.", databases=DB)
    assert READS not in none.done_when["checks"][1]


def test_sql_runs_on_the_database_the_goal_names_or_the_one_declared():
    (named,) = plan(
        step("S1", "q.sql"), goal="Query the chinook database.", databases=("chinook", "hr")
    )
    assert bare(named.done_when["checks"][1]) == {"kind": "sql", "db": "chinook"}
    (only,) = plan(step("S1", "q.sql"), goal="Write q.sql.", databases=("hr",))
    assert bare(only.done_when["checks"][1]) == {"kind": "sql", "db": "hr"}
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
    goal = "Fix stats.py: median([1, 2, 3, 4]) == 2.5."
    (raised,) = plan(step("S1", "stats.py", action="coder"), goal=goal)
    shown = shown_check(raised.done_when)
    assert shown == {
        "kind": "all",
        "checks": [
            {"kind": "non_empty"},
            {
                "kind": "examples",
                "defines": ["median"],
                "examples": ["median([1, 2, 3, 4]) == 2.5"],
            },
        ],
    }


def test_a_users_module_keeps_its_public_names_when_a_step_rewrites_it():
    goal = "stats.py has a bug: median([1, 2, 3, 4]) == 2.5. Fix it in stats.py."
    kept = {"stats.py": "def mean(v): ...\ndef median(v): ...\n"}
    steps = [step("S1", "stats.py", action="coder", check={"kind": "python", "code": "pass"})]
    parsed, errors = parse_plan(
        {"steps": steps}, actions=ACTIONS, max_steps=5, goal=goal, files=["stats.py"], kept=kept
    )
    assert errors == []
    assert stated(parsed[0].done_when["checks"][1])["defines"] == ["median", "mean"]
    other = "Write a.py and b.py."  # the goal names no one module: the kept names still hold
    (raised,) = plan(step("S1", "a.py", action="coder"), goal=other)
    assert stated(raised.done_when["checks"][1])["defines"] == []
    parsed, _ = parse_plan(
        {"steps": [step("S1", "a.py", action="coder")]},
        actions=ACTIONS,
        max_steps=5,
        goal=other,
        kept={"a.py": "def f(x): ...\n"},
    )
    assert stated(parsed[0].done_when["checks"][1])["defines"] == ["f"]


@pytest.mark.parametrize(
    ("fixes", "paths"),
    [
        (
            [NameCriterion(name="median", quote="stats.py has a bug: median")],
            ["median([])", "median([2.5])"],
        ),
        # no bug to fix: the goal changes what median does, not only where it was wrong
        ([], []),
        # a fix of a function the stated examples do not call: no path is known
        ([NameCriterion(name="mean", quote="mean")], []),
    ],
)
def test_a_fix_keeps_the_fixed_function_s_other_paths_only_when_the_criteria_fix_it(fixes, paths):
    goal = "stats.py has a bug: median([1, 2, 3, 4]) == 2.5. Fix it in stats.py."
    given = "def median(v: list[float]) -> float:\n    return v[0]\n\n\ndef mean(v): ...\n"
    steps = [step("S1", "stats.py", action="coder")]
    parsed, errors = parse_plan(
        {"steps": steps},
        actions=ACTIONS,
        max_steps=5,
        goal=goal,
        files=["stats.py"],
        kept={"stats.py": given},
        criteria=of("stats.py", fixes=fixes),
    )
    assert errors == []
    said = stated(parsed[0].done_when["checks"][1])
    assert said.get("ends_as_in_the_given_file_off_the_bug_s_path", [])[:2] == paths


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


CITES = of("report.md", citations=CountCriterion(least=2, quote="cite at least 2 of them"))


@pytest.mark.parametrize("check", [{"kind": "exists"}, {"kind": "non_empty"}])
def test_a_report_the_criteria_ask_to_cite_must_cite_what_the_tools_returned(check):
    (raised,) = plan(
        step("S1", "report.md", action="writer", check=check), goal=CITING, criteria=CITES
    )
    parts = raised.done_when["checks"]
    assert {"kind": "citations", "min": 2} in map(bare, parts)
    assert [p["kind"] for p in parts][:2] == ["non_empty", "citations"]
    assert parts[-1]["kind"] == "rubric"  # prose is judged too
    assert validate_check_spec(raised.done_when) == []


@pytest.mark.parametrize(("least", "shown"), [(3, 3), (1, 1), (0, 1)])
def test_the_least_number_of_citations_is_the_one_the_criteria_state_and_at_least_one(least, shown):
    criteria = of("notes.md", citations=CountCriterion(least=least, quote="cite"))
    (raised,) = plan(
        step("S1", "notes.md", action="writer", check={"kind": "exists"}),
        goal="Write notes.md and cite your sources.",
        criteria=criteria,
    )
    assert {"kind": "citations", "min": shown} in map(bare, raised.done_when["checks"])


@pytest.mark.parametrize(
    ("path", "goal", "criteria"),
    [
        ("report.md", CITING, None),  # the words alone ask for nothing
        ("report.md", "Write report.md: a short summary of HNSW.", None),
        ("notes.md", CITING, CITES),  # the criteria are another file's
    ],
)
def test_a_document_without_citations_in_its_criteria_cites_no_invented_url_and_is_judged(
    path, goal, criteria
):
    (kept,) = plan(
        step("S1", path, action="writer", check={"kind": "exists"}), goal=goal, criteria=criteria
    )
    assert list(check_kinds(kept.done_when)) == ["non_empty", "citations", "rubric"]
    traced = kept.done_when["checks"][1]
    assert traced["min"] == 0 and traced["origin"] == "floor"
    floor = {"kind": "all", "checks": kept.done_when["checks"][:2]}  # the rubric needs a judge
    assert run_check(floor, {path: "HNSW is a graph index."}, path)["passed"]
    invented = run_check(floor, {path: "See https://invented.example/hnsw."}, path)
    assert not invented["passed"] and "invented.example" in invented["evidence"]


def test_a_markdown_document_must_have_the_sections_its_criteria_name():
    sections = [NameCriterion(name=n, quote=n) for n in ("Summary", "Sources")]
    (raised,) = plan(
        step("S1", "report.md", action="writer"),
        goal="Write report.md with a Summary and Sources.",
        criteria=of("report.md", sections=sections),
    )
    spec = raised.done_when
    assert list(check_kinds(spec)) == ["non_empty", "sections", "citations", "rubric"]
    assert bare(spec["checks"][1]) == {"kind": "sections", "titles": ["Summary", "Sources"]}
    floor = {"kind": "all", "checks": spec["checks"][:2]}  # the rubric needs a judge
    right = "# Report\n\n## Summary\n\nHNSW.\n\n## Sources\n\n- a\n"
    assert run_check(floor, {"report.md": right}, "report.md")["passed"]
    prose = "# Report\n\nIn summary, HNSW. Sources: a.\n"
    assert not run_check(floor, {"report.md": prose}, "report.md")["passed"]
    (text,) = plan(
        step("S1", "report.txt", action="writer"),
        goal="Write report.txt with a Summary and Sources.",
        criteria=of("report.txt", sections=sections),
    )
    assert {"kind": "sections", "titles": ["Summary", "Sources"]} in map(
        bare, text.done_when["checks"]
    )
    part = text.done_when["checks"][1]  # in plain text, each title somewhere
    assert run_check(part, {"report.txt": "Summary: x. Sources: a."}, "report.txt")["passed"]
    assert not run_check(part, {"report.txt": "Summary: x."}, "report.txt")["passed"]


TWO_MODULES = (
    "Write a package of two modules. pkg/a.py: f(t) returns the words and must use g "
    "from pkg/b.py. pkg/b.py: g(t) must use f from pkg/a.py; h(t) counts."
)


USES = GoalCriteria(
    files=[
        FileCriteria(path="pkg/a.py", uses=[NameCriterion(name="g", quote="must use g")]),
        FileCriteria(path="pkg/b.py", uses=[NameCriterion(name="f", quote="must use f")]),
    ]
)


def two_modules(goal: str = TWO_MODULES, criteria: GoalCriteria | None = USES) -> tuple[Any, Any]:
    """The plan of a package whose two modules use each other's functions."""
    a, b = plan(
        step("S1", "pkg/a.py", action="coder"),
        step("S2", "pkg/b.py", action="coder"),
        goal=goal,
        criteria=criteria,
    )
    return a, b


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_module_that_cannot_run_yet_must_use_what_its_criteria_say():
    a, b = two_modules()
    # uses: the criteria's; defines: the signature its part of the goal writes
    assert bare(a.done_when["checks"][1]) == {"kind": "syntax", "uses": ["g"], "defines": ["f"]}
    plain, _ = two_modules(criteria=None)
    assert bare(plain.done_when["checks"][1]) == {"kind": "syntax", "defines": ["f"]}
    report = run_check(a.done_when, {"pkg/a.py": "def f(t):\n    return t\n"}, "pkg/a.py")
    assert not report["passed"] and "g" in report["evidence"]
    # the plan's other module runs after it, and its check runs the package
    assert b.depends_on == ["S1"] and "python" in check_kinds(b.done_when)
    a_py = "def f(t):\n    from pkg.b import g\n    return t.split()\n"
    missing_h = "from pkg.a import f\n\n\ndef g(t):\n    return f(t)\n"
    files = {"pkg/a.py": a_py, "pkg/b.py": missing_h}
    report = run_check(b.done_when, files, "pkg/b.py")
    assert not report["passed"] and "h is not defined" in report["evidence"]


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_module_that_runs_after_its_siblings_must_still_use_what_its_criteria_say():
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


@pytest.mark.slow  # runs checks in sandboxed processes
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


REFACTOR = (
    "Refactor pricing.py: move the shared product into one function base(p, q) and make "
    "both book_price and music_price call it. Behaviour must not change."
)
BOTH_CALL = [
    CallCriterion(caller=c, callee="base", quote="both book_price and music_price call it")
    for c in ("book_price", "music_price")
]


@pytest.mark.slow  # runs checks in sandboxed processes
@pytest.mark.parametrize(
    ("calls", "pairs"),
    [
        (BOTH_CALL, ["book_price calls base", "music_price calls base"]),
        # a callee the given file defines already is not the refactor's new function
        ([CallCriterion(caller="music_price", callee="tax", quote="call tax")], []),
        # a caller the given file does not define is not the user's to keep calling it
        ([CallCriterion(caller="film_price", callee="base", quote="call base")], []),
        ([CallCriterion(caller="base", callee="base", quote="base")], []),
    ],
)
def test_a_call_criterion_is_asserted_for_a_given_function_calling_a_new_one(calls, pairs):
    step = Step(
        step_id="S1", action="coder", instructions="Refactor.", expected_output="pricing.py"
    )
    criteria = of("pricing.py", calls=calls)
    spec = stated_floor(step, [step], REFACTOR, criteria, kept={"pricing.py": PRICING})
    assert spec is not None and stated(spec).get("calls", []) == pairs
    assert spec.get("calls", []) == [p.split(" calls ") for p in pairs]
    assert stated_floor(step, [step], REFACTOR, criteria) is None  # no user's module


@pytest.mark.slow  # runs checks in sandboxed processes
def test_the_refactor_floor_refuses_old_bodies_that_keep_the_behaviour():
    step = Step(
        step_id="S1", action="coder", instructions="Refactor.", expected_output="pricing.py"
    )
    criteria = of("pricing.py", calls=BOTH_CALL)
    spec = stated_floor(step, [step], REFACTOR, criteria, kept={"pricing.py": PRICING})
    assert spec is not None and stated(spec)["calls"] == [
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


@pytest.mark.slow  # runs checks in sandboxed processes
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


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_refactor_s_new_function_computes_what_its_callers_shared():
    """A ``discounted_total`` that rounds kept both callers' results (each rounds again)
    and failed the hidden test of the function itself: the floor compares it with the
    code the callers shared, up to float rounding."""
    from pathlib import Path

    goals = Path(__file__).parents[2] / "bench" / "goals" / "refactor"
    goal = json.loads((goals / "goal.json").read_text())["goal"]
    given = (goals / "given" / "pricing.py").read_text()
    quote = goal[goal.index("book_price and") : goal.index("call it.") + len("call it")]
    calls = [
        CallCriterion(caller=c, callee="discounted_total", shares=True, quote=quote)
        for c in ("book_price", "music_price")
    ]
    # "Behaviour must not change": both callers kept, quoted with the words naming them
    whole = goal[goal.index("book_price and") :]
    keep = [NameCriterion(name=n, quote=whole) for n in ("book_price", "music_price")]
    criteria, dropped = verified(of("pricing.py", calls=calls, keep=keep), goal)
    assert dropped == []  # the planner's criteria, as it quotes the goal
    step = Step(
        step_id="S1", action="coder", instructions="Refactor.", expected_output="pricing.py"
    )
    spec = stated_floor(step, [step], goal, criteria, kept={"pricing.py": given})
    assert spec is not None and stated(spec)["returns_as_the_shared_code"]
    unshared = of("pricing.py", calls=[c.model_copy(update={"shares": False}) for c in calls])
    assert stated(spec)["ends_as_in_the_given_file"]  # the kept callers are probed
    plain = stated_floor(step, [step], goal, unshared, kept={"pricing.py": given})
    assert plain is not None and "returns_as_the_shared_code" not in stated(plain)
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
    from agent.checks.shown import checks_listed

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
    from agent.checks.shown import checks_listed

    goal = (
        'Write inventory.json: "items": a list of {"sku": string, "qty": integer}, sorted by '
        'sku, and "out_of_stock": the list of skus whose qty is 0. SKUs: A-100, B-2.'
    )
    criteria = of(
        "inventory.json",
        sorted_by=[OrderCriterion(key="sku", quote="sorted by sku")],
        values_of=[ValuesCriterion(key="out_of_stock", of="sku", quote='"out_of_stock": the list')],
    )
    (one,) = plan(step("S1", "inventory.json"), goal=goal, criteria=criteria)
    listed = checks_listed(one.done_when)
    assert "x-" not in listed
    said = [line[4:] for line in listed.splitlines() if line.startswith("  - ")]
    assert 'every list of objects with "sku" is sorted by it, ascending' in said
    assert any('"sku"' in line and '"qty"' in line for line in said)
    assert '"out_of_stock" lists "sku" values, not whole objects' in said


def test_a_planner_s_pattern_over_json_text_gives_way_to_the_floor():
    # d12: '^inventory.json \\{ "total_value": \\d+, ...' failed a right file to the depth cap
    goal = 'Write inventory.json with "items": a list and "total": a number.'
    pattern = {"kind": "regex", "pattern": '^\\{ "total": \\d+ \\}$'}
    (one,) = plan(step("S1", "inventory.json", check=pattern), goal=goal)
    assert "regex" not in check_kinds(one.done_when) and "json_shape" in check_kinds(one.done_when)
    (md,) = plan(step("S1", "notes.md", check=pattern), goal="Write notes.md.")
    assert "regex" in check_kinds(md.done_when)  # a document's pattern stays
