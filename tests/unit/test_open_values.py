"""A value the goal leaves open ("key": <...>) is the agent's guess unless a source gives it."""

from __future__ import annotations

import json

from agent.plan.open_values import open_keys, unsourced_values
from agent.reflection.rules import Decision, held_to_evidence
from agent.vfs.entries import file_entry
from agent.vfs.origin import USER
from agent.vocabulary import Decision as Choice
from agent.vocabulary import StopReason
from tests.fakes import situation

# the same template in three languages: the placeholder is a literal, not a phrase
GOALS = {
    "en": 'Write deploy.json: {"service": "ledger", "region": <the region ops chose>, '
    '"replicas": 3}. Ask which region first.',
    "de": 'Schreibe deploy.json: {"service": "ledger", "region": <die Region des Teams>, '
    '"replicas": 3}.',
    "ja": 'deploy.json を書いて: {"service": "ledger", "region": <運用チームが選んだリージョン>, '
    '"replicas": 3}',
}


STEPS = [{"step_id": "S1", "expected_output": "deploy.json", "done_when": {"kind": "json"}}]


def done(doc: object) -> dict:
    return {"deploy.json": file_entry(json.dumps(doc), step=1, status="done")}


def test_the_placeholders_of_a_goal_literal_are_read_in_any_language():
    for goal in GOALS.values():
        assert list(open_keys(goal)) == ["region"]
    assert open_keys('Write a.json: {"n": 1, "m": "<b>"}') == {}  # a string, not a placeholder
    assert open_keys("x" * 30_000 + '"k": <v>') == {}  # past the scanned part


def test_a_guessed_value_is_unsourced_and_a_given_one_is_not():
    for goal in GOALS.values():
        guessed = unsourced_values(goal, done({"service": "ledger", "region": "us-east-1"}))
        assert guessed["deploy.json"][0][:2] == ("region", '"us-east-1"')
        answered = goal + "\n\nThe human answered that question: it is eu-north-1."
        right = done({"service": "ledger", "region": "eu-north-1", "replicas": 3})
        assert unsourced_values(answered, right) == {}
    # a user's file gives it as well; a part of a longer word does not
    given = {"ops.txt": file_entry("region: eu-north-1", step=0, origin=USER)}
    goal = GOALS["en"]
    assert unsourced_values(goal, done({"region": "eu-north-1"}) | given) == {}
    assert unsourced_values(goal, done({"region": "eu-north"}) | given) != {}
    assert unsourced_values(goal, done({"region": "ops"})) != {}  # "ops chose": the hole's words


def test_numbers_lists_and_items_are_compared_leaf_by_leaf():
    goal = 'Write a.json: {"items": [{"sku": <the sku>, "qty": 4}]} for sku A-1 and qty 2.50'
    files = {"a.json": file_entry(json.dumps({"items": [{"sku": "A-1", "qty": 4}]}), step=1)}
    assert unsourced_values(goal, files) == {}
    files = {"a.json": file_entry(json.dumps({"items": [{"sku": "A-11"}]}), step=1)}
    assert unsourced_values(goal, files)["a.json"][0][1] == '"A-11"'
    number = 'Write a.json: {"price": <the price>} at 2.50 EUR'
    assert unsourced_values(number, {"a.json": file_entry('{"price": 2.5}', step=1)}) == {}
    assert unsourced_values(number, {"a.json": file_entry('{"price": 2}', step=1)}) != {}


def test_unparsed_files_missing_keys_and_goals_without_one_json_file_are_left_to_checks():
    goal = GOALS["en"]
    assert unsourced_values(goal, {"deploy.json": file_entry("{not json", step=1)}) == {}
    assert unsourced_values(goal, done({"service": "ledger"})) == {}
    two = goal + " Also write other.json."
    assert unsourced_values(two, done({"region": "us-east-1"})) == {}
    assert unsourced_values("Write deploy.json for ledger.", done({"region": "x"})) == {}


def test_an_end_over_a_guessed_value_pauses_unverified_naming_the_value():
    goal = GOALS["de"]
    s = situation(
        done({"service": "ledger", "region": "us-east-1", "replicas": 3}), goal=goal, steps=STEPS
    )
    for by in ("rule", "model"):
        held = held_to_evidence(Decision(Choice.END, "all checks passed", by=by), s)
        assert held.decision == Choice.ESCALATE and held.stop_reason == StopReason.UNVERIFIED
        assert "us-east-1" in held.question and "die Region des Teams" in held.question
        assert not held.counts_depth
    sourced = situation(done({"region": "eu-north-1"}), goal=goal + " eu-north-1", steps=STEPS)
    end = Decision(Choice.END, "all checks passed", by="rule")
    assert held_to_evidence(end, sourced) is end
    replan = Decision(Choice.REPLAN, "again", by="model")
    assert held_to_evidence(replan, s) is replan
