"""Acceptance criteria as data (agent/plan/criteria.py): the literals a goal writes, the
planner's criteria kept only when they quote the goal, merging, and bounded reading."""

from __future__ import annotations

import random
import string

import pytest

from agent.checks.shown import shown_check
from agent.plan.criteria import (
    MAX_ITEMS,
    CountCriterion,
    ExampleCriterion,
    FileCriteria,
    GoalCriteria,
    NameCriterion,
    OrderCriterion,
    QuestionCriterion,
    ValuesCriterion,
    json_keys,
    literal_criteria,
    literal_examples,
    merged,
    read_criteria,
    signatures,
    verified,
)

# ------------------------------------------------------------------ literal examples


@pytest.mark.parametrize(
    ("text", "examples"),
    [
        ("median([1, 2, 3, 4]) == 2.5 but it is wrong", [("median([1, 2, 3, 4])", "2.5")]),
        ("f(2)==4 and f(3) -> 9", [("f(2)", "4"), ("f(3)", "9")]),
        ("slug('A b') → 'a-b'", [("slug('A b')", "'a-b'")]),
        ("h(1) => [1, 2] then", [("h(1)", "[1, 2]")]),
        ("parse(x=1, y=[2, 3]) == {'x': 1}", [("parse(x=1, y=[2, 3])", "{'x': 1}")]),
        ("g(1) == 2 and again g(1) == 2", [("g(1)", "2")]),  # stated twice, alike: once
    ],
)
def test_a_call_followed_by_an_operator_and_a_literal_is_an_example(text, examples):
    assert literal_examples(text) == examples


@pytest.mark.parametrize(
    "text",
    [
        "median([1, 2, 3, 4]) should be 2.5",
        "slug('A b') must return 'a-b'.",
        "is_even(3) returns False; is_even(4) is True.",
        "parse(x=1) gives {'x': 1}",
        "median([1, 2, 3, 4]) soll 2.5 sein",
        "median([1, 2, 3, 4]) doit valoir 2.5",
    ],
)
def test_words_between_a_call_and_a_value_state_no_example_in_any_language(text):
    assert literal_examples(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "g(1) == 2. Later g(1) == 3.",  # two results for one call: the text contradicts itself
        "area(r) == 3",  # not a literal argument
        "to_roman(n: int) -> str",  # a signature, not a call
        "h(1) == wrong",  # no literal result
        "len([1]) == 1",  # a builtin, not the artifact's function
        "obj.area(2) == 4",  # a method
        "f(1 == 2",  # unbalanced
    ],
)
def test_what_is_not_an_example_is_not_one(text):
    assert literal_examples(text) == []


# ------------------------------------------------------------------ signatures and keys


def test_signatures_are_the_calls_with_parameters_the_text_writes():
    text = (
        "Write roman.py with to_roman(n: int) -> str; it must not call print(x) or "
        "str.join(a), and test_roman(x) is the tests' business. Use median ( of the list."
    )
    found = signatures(text)
    assert list(found) == ["to_roman"]
    node = found["to_roman"]
    assert [a.arg for a in node.args.args] == ["n"]
    assert node.returns is not None and node.returns.id == "str"


def test_a_call_with_literal_arguments_is_no_signature():
    assert signatures("median([1, 2, 3, 4]) == 2.5") == {}
    assert list(signatures("mean(xs) and median([1, 2])")) == ["mean"]


def test_json_keys_are_split_into_the_document_s_and_its_items():
    text = (
        'Write out.json: "items": a list of {"sku": string, "qty": integer}; '
        '"total": a number; and "missing": the skus with qty 0.'
    )
    assert json_keys(text) == (["items", "total", "missing"], ["sku", "qty"])
    conf = '{"service": "ledger", "region": <r>, "conf": {"a": 1}}'
    assert json_keys(conf) == (["service", "region", "conf"], ["a"])
    assert json_keys("Write out.json with the totals.") == ([], [])


def test_keys_braced_beside_names_quoted_without_a_colon_are_the_items_keys():
    # the document's keys written without a colon: the braced ones are of its items
    de = (
        'Erstelle out.json: "items", eine Liste von {"sku": string, "qty": integer}, nach sku '
        'sortiert; "total", die Summe; "missing", die skus mit qty 0.'
    )
    assert json_keys(de) == ([], ["sku", "qty"])
    ja = 'out.json を書く。「items」は {"sku": 文字列, "qty": 整数} のリスト、"total" は合計。'
    assert json_keys(ja) == ([], ["sku", "qty"])
    # a whole template, nothing quoted outside it: its keys are the document's
    assert json_keys('Write conf.json: {"name": "x", "port": 8080}.') == (["name", "port"], [])


def test_literal_criteria_go_to_the_goal_s_one_module_and_one_json_file():
    goal = (
        "Write stats.py with mean(xs: list[float]) -> float; mean([1, 3]) == 2.0. "
        'Write out.json with "mean": a number.'
    )
    found = literal_criteria(goal, ["stats.py", "out.json", "test_stats.py"])
    stats = found.of("stats.py")
    assert [f.name for f in stats.functions] == ["mean"]
    assert [(e.call, e.expected) for e in stats.examples] == [("mean([1, 3])", "2.0")]
    assert [k.name for k in found.of("out.json").keys] == ["mean"]
    assert found.of("test_stats.py") == FileCriteria(path="test_stats.py")  # tests: theirs


def test_with_a_part_per_module_each_gets_the_literals_of_its_part():
    goal = "pkg/a.py: f(t) -> str, f('x') == 'X'. pkg/b.py: g(t) -> int, g('ab') == 2."
    found = literal_criteria(goal, ["pkg/a.py", "pkg/b.py"])
    assert [f.name for f in found.of("pkg/a.py").functions] == ["f"]
    assert [e.call for e in found.of("pkg/a.py").examples] == ["f('x')"]
    assert [e.call for e in found.of("pkg/b.py").examples] == ["g('ab')"]


# ------------------------------------------------------------------ the planner's, verified

GOAL = (
    "Write inventory.json from the rows below.\n"
    "The items   must be Sorted By SKU, highest first; cite at least 2 sources."
)


def one_file(**fields) -> GoalCriteria:
    return GoalCriteria(files=[FileCriteria(path="inventory.json", **fields)])


def test_a_criterion_quoting_the_goal_is_kept_whatever_its_case_and_white_space():
    order = OrderCriterion(key="sku", descending=True, quote="the items must be sorted by sku")
    kept, dropped = verified(one_file(sorted_by=[order]), GOAL)
    assert kept.of("inventory.json").sorted_by == [order] and dropped == []


def test_a_criterion_quoting_a_german_goal_is_kept():
    goal = "Schreibe stats.py: Die Funktion Größe  muss\nerhalten bleiben."
    keep = NameCriterion(name="Größe", quote="DIE FUNKTION GRÖSSE MUSS ERHALTEN BLEIBEN")
    criteria = GoalCriteria(files=[FileCriteria(path="stats.py", keep=[keep])])
    kept, dropped = verified(criteria, goal)
    assert kept.of("stats.py").keep == [keep] and dropped == []


@pytest.mark.parametrize(
    "criteria",
    [
        # a quote the goal does not hold
        one_file(sorted_by=[OrderCriterion(key="sku", quote="sorted by sku, lowest first")]),
        # a name its quote does not hold
        one_file(sorted_by=[OrderCriterion(key="price", quote="must be sorted by sku")]),
        one_file(keys=[NameCriterion(name="total", quote="Write inventory.json")]),
        # a value its quote does not hold
        GoalCriteria(
            files=[
                FileCriteria(
                    path="stats.py",
                    examples=[ExampleCriterion(call="f(1)", expected="3", quote="cite at least 2")],
                )
            ]
        ),
        # no quote at all
        one_file(citations=CountCriterion(least=2)),
        GoalCriteria(question=QuestionCriterion(text="Which rows?", quote="which rows to use")),
    ],
)
def test_a_criterion_the_goal_does_not_state_is_dropped(criteria):
    kept, dropped = verified(criteria, GOAL)
    assert len(dropped) == 1 and "the goal does not state" in dropped[0]
    assert kept.question is None
    assert all(f == FileCriteria(path=f.path) for f in kept.files), (
        "every criterion of every file is dropped"
    )


def test_citations_quoting_the_goal_are_kept():
    cited = CountCriterion(least=2, quote="cite at least 2 sources")
    kept, _ = verified(one_file(citations=cited), GOAL)
    assert kept.of("inventory.json").citations == cited


def test_literals_alone_find_no_criterion_in_a_negated_goal():
    goal = "Write report.md about HNSW. Do not cite any sources and use no examples."
    assert literal_criteria(goal, ["report.md"]) == GoalCriteria()
    assert literal_examples(goal) == [] and signatures(goal) == {}


def test_a_value_list_and_a_spelling_must_name_what_their_quote_names():
    quote = '"out_of_stock": the list of skus'
    goal = f"Write inventory.json: {quote} whose qty is 0. SKUs: A-100."
    values = ValuesCriterion(key="out_of_stock", of="sku", quote=quote)
    spelled = NameCriterion(name="A-100", quote="SKUs: A-100")
    invented = NameCriterion(name="B-200", quote="SKUs: A-100")
    kept, dropped = verified(one_file(values_of=[values], spelled=[spelled, invented]), goal)
    assert kept.of("inventory.json").values_of == [values]
    assert kept.of("inventory.json").spelled == [spelled] and len(dropped) == 1


# ------------------------------------------------------------------ merging and reading


def test_merged_criteria_hold_each_criterion_once_whatever_its_quote():
    a = one_file(sorted_by=[OrderCriterion(key="sku", quote="sorted by sku")])
    b = one_file(
        sorted_by=[
            OrderCriterion(key="sku", quote="Sorted by SKU"),  # the same criterion
            OrderCriterion(key="sku", descending=True, quote="highest first"),
        ],
        citations=CountCriterion(least=2, quote="cite at least 2"),
    )
    question = QuestionCriterion(text="Which rows?", quote="ask which rows")
    both = merged(a, b, GoalCriteria(question=question))
    assert [f.path for f in both.files] == ["inventory.json"]
    orders = both.of("inventory.json").sorted_by
    assert [(o.key, o.descending, o.quote) for o in orders] == [
        ("sku", False, "sorted by sku"),
        ("sku", True, "highest first"),
    ]
    assert both.of("inventory.json").citations == b.files[0].citations
    assert both.question == question
    assert merged() == GoalCriteria()


def test_the_criteria_of_a_file_named_twice_are_merged():
    criteria = GoalCriteria(
        files=[
            FileCriteria(path="a.py", uses=[NameCriterion(name="g")]),
            FileCriteria(path="a.py", uses=[NameCriterion(name="g"), NameCriterion(name="h")]),
        ]
    )
    assert [u.name for u in criteria.of("a.py").uses] == ["g", "h"]


@pytest.mark.parametrize(
    "value",
    [
        None,
        "garbage",
        42,
        ["files"],
        {"files": "not a list"},
        {"files": [{"path": "a.py", "examples": [{"call": 1}]}]},
        {"files": [{"path": "a.py", "citations": {"least": -1}}]},
        {"files": [{"path": "a.py"}] * (MAX_ITEMS + 1)},
    ],
)
def test_criteria_that_do_not_validate_read_as_none(value):
    assert read_criteria(value) == GoalCriteria()


def test_stored_criteria_read_back_as_they_were():
    criteria = one_file(sorted_by=[OrderCriterion(key="sku", quote="sorted by sku")])
    assert read_criteria(criteria.model_dump()) == criteria
    assert read_criteria(criteria) is criteria


# ------------------------------------------------------------------ bounded input


def test_a_long_chain_of_calls_is_read_within_bounds():
    chain = " == ".join(f"f({n})" for n in range(1, 20_000))[:100_000]
    assert len(chain) == 100_000
    assert len(literal_examples(chain)) <= MAX_ITEMS
    assert signatures(chain) == {}
    found = literal_criteria(chain, ["a.py", "a.json"])
    assert all(len(f.examples) <= MAX_ITEMS for f in found.files)


def test_random_text_is_read_within_bounds():
    rng = random.Random(7)
    text = "".join(rng.choice(string.printable) for _ in range(100_000))
    examples = literal_examples(text)
    assert isinstance(examples, list) and len(examples) <= MAX_ITEMS
    assert len(signatures(text)) <= MAX_ITEMS
    outer, inner = json_keys(text)
    assert len(outer) + len(inner) <= 2 * MAX_ITEMS
    found = literal_criteria(text, ["a.py", "b.json"])
    assert all(len(f.functions) <= MAX_ITEMS and len(f.keys) <= MAX_ITEMS for f in found.files)
    kept, _ = verified(one_file(keys=[NameCriterion(name="a", quote=text[:600])]), text)
    assert len(kept.files) == 1


# ------------------------------------------------------------------ found by review


def test_an_example_followed_by_a_long_sentence_is_still_read():
    text = (
        "median([1, 2, 3, 4]) == 2.5 but today it returns 2, which is wrong; fix it in "
        "stats.py and keep the other functions of the module exactly as they are now, since "
        "other code of ours relies on them and on what they return for the inputs they get."
    )
    assert literal_examples(text) == [("median([1, 2, 3, 4])", "2.5")]


def test_examples_listed_with_commas_keep_their_values():
    assert literal_examples("f(1) == 2, f(2) == 3") == [("f(1)", "2"), ("f(2)", "3")]
    assert literal_examples("f(2) -> 4.") == [("f(2)", "4")]  # the sentence's full stop
    assert literal_examples("g('a, b') == ['a', 'b'].") == [("g('a, b')", "['a', 'b']")]


def test_a_criterion_naming_what_its_quote_does_not_say_is_dropped():
    goal = "Write top.sql: the genres with the most tracks."
    invented = GoalCriteria(
        files=[
            FileCriteria(
                path="top.sql",
                reads=[NameCriterion(name="invoices", quote="the genres")],
                values_of=[ValuesCriterion(key="genres", of="price", quote="the genres")],
            )
        ]
    )
    kept, dropped = verified(invented, goal)
    assert kept.of("top.sql").reads == [] and kept.of("top.sql").values_of == []
    assert len(dropped) == 2


def test_a_goal_writing_many_signatures_or_keys_does_not_raise():
    many = " ".join(f"f{n}(x: int) -> int;" for n in range(MAX_ITEMS + 1))
    assert len(literal_criteria(many, ["a.py"]).of("a.py").functions) == MAX_ITEMS
    keys = " ".join(f'"k{n}": 1,' for n in range(MAX_ITEMS + 1))
    assert len(literal_criteria(keys, ["a.json"]).of("a.json").keys) == MAX_ITEMS


def test_a_kept_behaviour_quoting_the_goal_keeps_every_given_function():
    from agent.plan.criteria import KeptBehaviour
    from agent.plan.floor import raise_to_floor
    from agent.plan.steps import Step

    goal = "Refactor pricing.py. Behaviour must not change."
    given = "def a(x: int) -> int:\n    return x + 1\n\n\ndef b(x: int) -> int:\n    return x * 2\n"
    criteria = GoalCriteria(
        files=[
            FileCriteria(
                path="pricing.py", behaviour_kept=KeptBehaviour(quote="behaviour must not change")
            )
        ]
    )
    kept, dropped = verified(criteria, goal)
    assert dropped == [] and kept.of("pricing.py").behaviour_kept is not None
    step = Step(step_id="S1", action="coder", instructions="x", expected_output="pricing.py")
    [raised] = raise_to_floor([step], goal, kept={"pricing.py": given}, criteria=kept)
    shown = shown_check(raised.done_when["checks"][1])["ends_as_in_the_given_file"]
    assert any(c.startswith("a(") for c in shown) and any(c.startswith("b(") for c in shown)
    invented, dropped = verified(criteria, "Refactor pricing.py.")
    assert invented.of("pricing.py").behaviour_kept is None and dropped
