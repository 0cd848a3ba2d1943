"""What the criteria state of a JSON file (its lists' orders, its items' keys, its value
lists, its spellings), compiled into the floor's ``json_schema`` check (``x-sortedBy``,
``x-hasKeys``, ``x-valuesOf``, ``x-spelled``) and judged on the document."""

from __future__ import annotations

import json

from agent.checks import run_check
from agent.checks.shown import shown_check
from agent.plan.criteria import (
    FileCriteria,
    GoalCriteria,
    NameCriterion,
    OrderCriterion,
    ValuesCriterion,
    literal_criteria,
    merged,
)
from agent.plan.floor import floor_check
from agent.plan.needs import named_files
from agent.plan.steps import Step

INVENTORY = "inventory.json"
STEP = Step(step_id="S1", action="coder", instructions="w", expected_output=INVENTORY)


def json_floor(goal: str, **stated) -> dict:
    """The floor of inventory.json: the goal's literals and the criteria ``stated``."""
    given = GoalCriteria(files=[FileCriteria(path=INVENTORY, **stated)])
    criteria = merged(literal_criteria(goal, named_files(goal)), given)
    spec = floor_check(STEP, [STEP], goal, criteria)
    assert spec is not None and spec["kind"] == "json_shape"
    return spec


def judged_file(spec: dict, doc) -> dict:
    return run_check(spec, {INVENTORY: json.dumps(doc)}, INVENTORY)


def orders_check(*orders):
    schema = {"x-sortedBy": [{"key": k, "descending": d} for k, d in orders]}
    return {"kind": "json_schema", "schema": schema}


def judged(doc, *orders):
    return run_check(orders_check(*orders), {"a.json": json.dumps(doc)}, "a.json")


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


def test_the_json_floor_carries_the_order_the_criteria_state():
    goal = 'Write inventory.json: "items": a list of {"sku": ..}, sorted by sku; "total": a number.'
    order = OrderCriterion(key="sku", quote="sorted by sku")
    spec = json_floor(goal, sorted_by=[order])
    assert shown_check(spec)["schema"]["x-sortedBy"] == [{"key": "sku", "descending": False}]
    assert shown_check(spec)["schema"]["anyOf"][0]["required"] == [
        "items",
        "total",
    ]  # the goal's literals
    doc = {"items": [{"sku": "B"}, {"sku": "A"}], "total": 2}
    report = judged_file(spec, doc)
    assert not report["passed"] and "not sorted by 'sku'" in report["evidence"]
    assert judged_file(spec, {**doc, "items": doc["items"][::-1]})["passed"]


def test_a_descending_order_is_judged_descending():
    order = OrderCriterion(key="price", descending=True, quote="highest first")
    spec = json_floor("Write inventory.json.", sorted_by=[order])
    assert shown_check(spec)["schema"]["x-sortedBy"] == [{"key": "price", "descending": True}]
    assert judged_file(spec, [{"price": 3}, {"price": 1}])["passed"]
    assert not judged_file(spec, [{"price": 1}, {"price": 3}])["passed"]


def test_without_criteria_the_json_floor_states_no_order():
    goal = 'Write inventory.json: "items": a list of {"sku": ..}, sorted by sku.'
    spec = json_floor(goal)
    assert "x-sortedBy" not in shown_check(spec)["schema"]  # the words alone state nothing
    assert judged_file(spec, {"items": [{"sku": "B"}, {"sku": "A"}]})["passed"]


def test_the_keys_the_goal_spells_inside_its_objects_must_be_somewhere_in_the_document():
    goal = 'Write a.json: "items": a list of {"sku": string, "qty": integer}; "total": a number.'
    step = Step(
        step_id="S1", depends_on=[], action="coder", instructions="x", expected_output="a.json"
    )
    spec = floor_check(step, [step], goal)  # the goal's literals alone
    assert shown_check(spec)["schema"]["x-hasKeys"] == ["sku", "qty"]
    renamed = {"items": [{"sku": "A", "quantity": 1}], "total": 1}
    report = run_check(spec, {"a.json": json.dumps(renamed)}, "a.json")
    assert not report["passed"] and '"qty"' in report["evidence"]
    right = {"items": [{"sku": "A", "qty": 1}], "total": 1}
    assert run_check(spec, {"a.json": json.dumps(right)}, "a.json")["passed"]


INVENTORY_GOAL = (
    'Write inventory.json: "items": a list of {"sku": string, "qty": integer}; '
    '"out_of_stock": the list of skus whose qty is 0; "notes": a list of strings.'
)


def test_a_list_the_criteria_say_holds_one_key_s_values_is_judged_on_them():
    values = ValuesCriterion(key="out_of_stock", of="sku", quote='"out_of_stock": the list')
    spec = json_floor(INVENTORY_GOAL, values_of=[values])
    assert shown_check(spec)["schema"]["x-valuesOf"] == {"out_of_stock": "sku"}
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


def test_a_code_the_criteria_spell_must_be_copied_as_it_is_spelled():
    """On the 1.5B an ``inventory.json`` with ``a-100`` for the goal's ``A-100`` passed."""
    goal = 'Write inventory.json from: A-100, 4\nB-220, 0\n"items": a list of {"sku": string}.'
    codes = [NameCriterion(name=c, quote=f"{c}, ") for c in ("A-100", "B-220")]
    spec = json_floor(goal, spelled=codes)
    assert shown_check(spec)["schema"]["x-spelled"] == ["A-100", "B-220"]
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
    spec = json_floor(goal, sorted_by=[OrderCriterion(key="sku", quote="sorted by sku")])
    both = {"items": [{"sku": "B", "quantity": 1}, {"sku": "A", "quantity": 2}]}
    report = run_check(spec, {"inventory.json": json.dumps(both)}, "inventory.json")
    assert not report["passed"]
    assert "not sorted by 'sku'" in report["evidence"] and '"qty"' in report["evidence"]
