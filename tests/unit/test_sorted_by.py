"""The orders a goal states of its JSON lists ("sorted by sku"), from the goal to the floor's
``json_schema`` check (``x-sortedBy``) and judged on the document."""

from __future__ import annotations

import json

import pytest

from agent.checks import run_check
from agent.plan.floor import floor_check, goal_sort_orders
from agent.plan.steps import Step


def orders_check(*orders):
    schema = {"x-sortedBy": [{"key": k, "descending": d} for k, d in orders]}
    return {"kind": "json_schema", "schema": schema}


def judged(doc, *orders):
    return run_check(orders_check(*orders), {"a.json": json.dumps(doc)}, "a.json")


@pytest.mark.parametrize(
    ("goal", "orders"),
    [
        ("a list of items sorted by sku; the total", [("sku", False)]),
        ('rows ordered by "price", highest first', [("price", True)]),
        ("sorted by the name (descending), then sorted by name again", [("name", True)]),
        ("ordered by `year` in decreasing order", [("year", True)]),
        ("a sorted list of the skus", []),
    ],
)
def test_the_goal_s_stated_orders(goal, orders):
    assert goal_sort_orders(goal) == orders


def test_a_list_out_of_the_stated_order_fails_with_its_values_quoted():
    doc = {"items": [{"sku": "B"}, {"sku": "A"}], "other": [1, 2]}
    report = judged(doc, ("sku", False))
    assert (
        not report["passed"]
        and "$.items" in report["evidence"]
        and '"B", "A"' in report["evidence"]
    )


def test_sorted_lists_nested_or_descending_pass_and_lists_without_the_key_are_left_alone():
    doc = {
        "a": {"rows": [{"n": 3}, {"n": 2}, {"n": 2}]},
        "tags": ["z", "a"],
        "mixed": [{"n": 9}, 1],
    }
    assert judged(doc, ("n", True))["passed"]
    assert not judged(doc, ("n", False))["passed"]
    assert judged([{"n": "b"}, {"n": 1}], ("n", False))["passed"]  # not one comparable type


def test_the_json_floor_carries_the_goal_s_order():
    goal = 'Write inventory.json: "items": a list of {"sku": ..}, sorted by sku; "total": a number.'
    step = Step(
        step_id="S1",
        depends_on=[],
        action="coder",
        instructions="x",
        expected_output="inventory.json",
    )
    schema = floor_check(step, [step], goal)["schema"]
    assert schema["x-sortedBy"] == [{"key": "sku", "descending": False}]
    assert schema["anyOf"][0]["required"] == ["items", "total"]


def test_the_keys_the_goal_spells_inside_its_objects_must_be_somewhere_in_the_document():
    goal = 'Write a.json: "items": a list of {"sku": string, "qty": integer}; "total": a number.'
    step = Step(
        step_id="S1", depends_on=[], action="coder", instructions="x", expected_output="a.json"
    )
    spec = floor_check(step, [step], goal)
    assert spec["schema"]["x-hasKeys"] == ["sku", "qty"]
    renamed = {"items": [{"sku": "A", "quantity": 1}], "total": 1}
    report = run_check(spec, {"a.json": json.dumps(renamed)}, "a.json")
    assert not report["passed"] and '"qty"' in report["evidence"]
    right = {"items": [{"sku": "A", "qty": 1}], "total": 1}
    assert run_check(spec, {"a.json": json.dumps(right)}, "a.json")["passed"]


INVENTORY_GOAL = (
    'Write inventory.json: "items": a list of {"sku": string, "qty": integer}; '
    '"out_of_stock": the list of skus whose qty is 0; "notes": a list of strings.'
)


def test_a_list_the_goal_says_holds_one_key_s_values_is_judged_on_them():
    from agent.plan.floor import goal_value_lists

    assert goal_value_lists(INVENTORY_GOAL) == {"out_of_stock": "sku"}
    assert goal_value_lists('"notes": the list of remarks') == {}  # no such key spelled
    step = Step(step_id="S1", action="coder", instructions="w", expected_output="inventory.json")
    spec = floor_check(step, [step], INVENTORY_GOAL)
    assert spec is not None and spec["schema"]["x-valuesOf"] == {"out_of_stock": "sku"}
    items = [{"sku": "A", "qty": 0}, {"sku": "B", "qty": 2}]
    ok = {"items": items, "out_of_stock": ["A"], "notes": []}
    assert run_check(spec, {"inventory.json": json.dumps(ok)}, "inventory.json")["passed"]
    for bad, shown in (
        ({**ok, "out_of_stock": [items[0]]}, "out_of_stock[0]"),  # the item, not its sku
        ({**ok, "out_of_stock": ["Z"]}, "out_of_stock[0]"),  # no item has that sku
        ({**ok, "out_of_stock": "A"}, "not a list"),
    ):
        report = run_check(spec, {"inventory.json": json.dumps(bad)}, "inventory.json")
        assert not report["passed"] and shown in report["evidence"]


@pytest.mark.parametrize(
    ("goal", "codes"),
    [
        ("Write a.json from: A-100, 4, 2.50\nB-220, 10, 1.25", ["A-100", "B-220"]),
        ("Store SKU42 and x9 in a.json; see report2.md and v1.2.", ["SKU42", "x9", "v1.2"]),
        ("Write a.json with the sku A-100 lowercased.", []),  # the goal changes case itself
        ("Write a.json with 4 items at 2.50 EUR.", []),  # no code of letters and digits
    ],
)
def test_the_codes_a_goal_spells(goal, codes):
    from agent.plan.floor import goal_codes

    assert goal_codes(goal) == codes


def test_a_code_the_goal_spells_must_be_copied_as_it_is_spelled():
    """On the 1.5B an ``inventory.json`` with ``a-100`` for the goal's ``A-100`` passed."""
    goal = 'Write inventory.json from: A-100, 4\nB-220, 0\n"items": a list of {"sku": string}.'
    step = Step(step_id="S1", action="coder", instructions="w", expected_output="inventory.json")
    spec = floor_check(step, [step], goal)
    assert spec is not None and spec["schema"]["x-spelled"] == ["A-100", "B-220"]
    right = {"items": [{"sku": "A-100"}, {"sku": "B-220"}]}
    assert run_check(spec, {"inventory.json": json.dumps(right)}, "inventory.json")["passed"]
    for bad in (
        {"items": [{"sku": "a-100"}, {"sku": "B-220"}]},
        {"items": [{"sku": "A-100"}], "by_sku": {"b-220": 0}},  # a key, too
    ):
        report = run_check(spec, {"inventory.json": json.dumps(bad)}, "inventory.json")
        assert not report["passed"] and 'the goal spells it "' in report["evidence"]


def test_every_different_schema_error_is_shown_at_once():
    """Shown one error at a time, the 1.5B fixed the order and renamed the keys back, then
    the other way round, until the depth cap: the evidence lists them together."""
    goal = (
        'Write inventory.json: "items": a list of {"sku": string, "qty": integer}, sorted by sku.'
    )
    step = Step(step_id="S1", action="coder", instructions="w", expected_output="inventory.json")
    spec = floor_check(step, [step], goal)
    both = {"items": [{"sku": "B", "quantity": 1}, {"sku": "A", "quantity": 2}]}
    report = run_check(spec, {"inventory.json": json.dumps(both)}, "inventory.json")
    assert not report["passed"]
    assert "not sorted by 'sku'" in report["evidence"] and '"qty"' in report["evidence"]
