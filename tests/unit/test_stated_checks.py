"""The typed checks of what a goal states (``agent.checks.stated``): their specs validate as
data, they run by compiling to a kind of the table, and a prompt shows what they assert."""

from __future__ import annotations

import json

import pytest

from agent.checks import run_check, validate_check_spec
from agent.checks.composite import proves_criteria
from agent.checks.shown import checks_listed, shown_check
from agent.checks.stated import ExamplesSpec, JsonShapeSpec, SectionsSpec, StatedExample
from agent.plan.floor import without_floor


@pytest.mark.parametrize(
    ("spec", "wrong"),
    [
        ({"kind": "examples", "examples": [{"call": "f(1)"}]}, "examples.0.expected"),
        ({"kind": "examples", "code": "assert True"}, "code"),  # no program slipped in
        ({"kind": "examples", "timeout_s": 0}, "timeout_s"),
        ({"kind": "json_shape", "keys": "name"}, "keys"),
        ({"kind": "json_shape", "sorted_by": [{"descending": True}]}, "sorted_by.0.key"),
        ({"kind": "sections", "titles": []}, "titles"),
        ({"kind": "sections", "titles": ["A"], "origin": "planner"}, "origin"),
    ],
)
def test_a_typed_spec_that_is_not_what_its_kind_says_is_refused_with_where(spec, wrong):
    errors = validate_check_spec(spec)
    assert errors and any(wrong in e for e in errors)


def test_a_json_shape_passes_a_document_with_its_keys_in_order_and_fails_one_without():
    spec = JsonShapeSpec(keys=["items"], sorted_by=[{"key": "sku"}]).as_spec()
    assert validate_check_spec(spec) == []
    right = {"items": [{"sku": "A"}, {"sku": "B"}]}
    report = run_check(spec, {"a.json": json.dumps(right)}, "a.json")
    assert report["passed"] and report["kind"] == "json_shape"
    unsorted = {"items": [{"sku": "B"}, {"sku": "A"}]}
    report = run_check(spec, {"a.json": json.dumps(unsorted)}, "a.json")
    assert not report["passed"] and "sorted by 'sku'" in report["evidence"]
    report = run_check(spec, {"a.json": json.dumps({"other": 1})}, "a.json")
    assert not report["passed"] and "items" in report["evidence"]


def test_a_json_shape_that_states_nothing_does_not_prove_the_file():
    assert not proves_criteria({"kind": "json_shape", "origin": "floor"})
    assert proves_criteria({"kind": "json_shape", "keys": ["a"]})


@pytest.mark.parametrize(
    ("path", "right", "wrong"),
    [
        ("r.md", "# R\n\n## Background\n\nx\n\n### The recommendation\n", "Background: x."),
        ("r.txt", "Background: x. Recommendation: y.", "Background: x."),
        ("r.md", "# R\n\n## Hintergrund\n\n## Empfehlung\n", "# R\n\nHintergrund, Empfehlung"),
    ],
)
def test_sections_are_headings_in_markdown_and_words_elsewhere(path, right, wrong):
    titles = ["Hintergrund", "Empfehlung"] if "Hinter" in right else ["Background", "ecommend"]
    spec = SectionsSpec(titles=titles).as_spec()
    assert run_check(spec, {path: right}, path)["passed"]
    report = run_check(spec, {path: wrong}, path)
    assert not report["passed"] and report["kind"] == "sections"


def test_a_prompt_shows_the_examples_a_check_asserts_never_its_program_or_the_given_file():
    spec = ExamplesSpec(
        defines=["median"],
        examples=[StatedExample(call="median([1, 2])", expected="1.5")],
        given="def median(xs):\n    return 0\n",
        keep=["median([])"],
        origin="floor",
    ).as_spec()
    shown = shown_check(spec)
    assert shown == {
        "kind": "examples",
        "defines": ["median"],
        "examples": ["median([1, 2]) == 1.5"],
        "ends_as_in_the_given_file": ["median([])"],
    }
    listed = checks_listed({"kind": "all", "checks": [{"kind": "non_empty"}, spec]})
    assert "def median" not in listed and "origin" not in listed and "median([1, 2])" in listed
    compiled = ExamplesSpec.model_validate(spec).compiled()
    assert compiled["kind"] == "python" and "median([1, 2])" in compiled["code"]


def test_a_replan_is_shown_the_planner_s_parts_by_their_origin_and_an_older_plan_by_its_count():
    own = {"kind": "contains", "all": ["x"]}
    floor = [{"kind": "non_empty", "origin": "floor"}, {"kind": "sections", "titles": ["A"]}]
    floor[1]["origin"] = "floor"
    assert without_floor({"kind": "all", "checks": [*floor, own]}) == own
    older = {
        "kind": "all",
        "checks": [{"kind": "non_empty"}, {"kind": "regex", "pattern": "A"}, own],
    }
    assert without_floor({**older, "floor": True}) == own
    assert without_floor(older) == older  # not raised: the planner's own all


def test_a_rubric_proves_prose_only_where_the_judges_pass_is_proof():
    rubric = {"kind": "rubric", "criteria": ["It answers the goal."]}
    prose = {"kind": "all", "checks": [{"kind": "non_empty"}, rubric]}
    assert proves_criteria(prose) and not proves_criteria(prose, judged=False)
    stated = {"kind": "all", "checks": [rubric, {"kind": "citations", "min": 2}]}
    assert proves_criteria(stated, judged=False)  # a stated count is a program's check
    # min 0 refuses invented sources and states nothing: it proves no criterion alone
    assert not proves_criteria({"kind": "citations", "min": 0})
    assert proves_criteria({"kind": "citations"})  # one unless said
