"""Resume values: text, actions and budgets, understood without a graph."""

from __future__ import annotations

import re

import pytest

from agent.errors import ConfigError
from agent.reflection.answers import (
    ESCALATION_ACTION,
    Answer,
    choices,
    offered,
    parse_answer,
    review_request,
    typed_choice,
)


def test_suggested_responses_become_labelled_choices_with_resume_values():
    assert choices(["stop here", "accept the artifacts as they are", "2024"]) == [
        {"label": "stop here", "value": {"action": "stop"}},
        {"label": "accept the artifacts as they are", "value": {"action": "accept"}},
        {"label": "2024", "value": {"action": "answer", "text": "2024"}},
    ]


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        (None, None),
        ("  ", None),
        ({"action": "answer", "text": ""}, None),
        ("engineers", Answer("answer", "engineers")),
        ({"action": "accept"}, Answer("accept")),
        ({"label": "stop here", "value": {"action": "stop"}}, Answer("stop")),
        (
            {"action": "continue", "budget": {"token_budget": 9}},
            Answer("continue", budget={"token_budget": 9}),
        ),
    ],
)
def test_resume_values_are_understood(value, answer):
    assert parse_answer(value) == answer


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"action": "dance"}, "unknown action"),
        ({"action": "continue", "budget": {"tokens": 1}}, "unknown budget"),
        ({"action": "continue", "budget": {"max_steps": 0}}, "positive number"),
        ({"action": "continue", "budget": {"time_budget_s": float("nan")}}, "positive number"),
        ({"action": "continue", "budget": 5}, "must be an object"),
    ],
)
def test_bad_resume_values_are_clear_errors(value, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_answer(value)


# ---------------------------------------------------------------- the review card and its buttons

BUDGET = choices(["continue with a higher budget", "stop here"])
YEARS = choices(["2024", "2023", "stop here"])


def drawn_with_buttons(value) -> bool:
    """agent-chat-ui's test for its review card (``isAgentInboxInterruptSchema``): a
    non-empty ``action_requests`` of named requests with object args, and a non-empty
    ``review_configs`` naming an action and a list of decisions."""
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not (isinstance(requests, list) and requests and isinstance(configs, list) and configs):
        return False
    return all(
        isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("args"), dict)
        for r in requests
    ) and all(
        isinstance(c, dict)
        and isinstance(c.get("action_name"), str)
        and isinstance(c.get("allowed_decisions"), list)
        for c in configs
    )


def _escalation(suggested=YEARS, artifacts=("report.md",)) -> dict:
    return {
        "question": "Which year should the report cover?",
        "artifacts_ready_for_review": list(artifacts),
        "suggested_responses": suggested,
        "reflection_depth": 2,
        "reason": "depth cap",
    }


def test_the_review_request_is_one_escalation_action_that_approve_and_reject_answer():
    request = review_request(_escalation())
    assert drawn_with_buttons(request)
    (action,) = request["action_requests"]
    assert action["name"] == ESCALATION_ACTION
    assert request["review_configs"] == [
        {"action_name": ESCALATION_ACTION, "allowed_decisions": ["approve", "reject"]}
    ]
    args = action["args"]
    assert args["question"] == "Which year should the report cover?"
    assert args["artifacts_ready_for_review"] == "- `report.md`"
    # every choice a reason can name, stop included; accept is the approve button
    assert args["reject"].splitlines()[-3:] == ["- `2024`", "- `2023`", "- `stop here`"]
    assert all(str(v) in action["description"] for v in args.values())
    # the card's configuration every decision type it offers is one agent-chat-ui draws
    assert set(request["review_configs"][0]["allowed_decisions"]) <= {"approve", "edit", "reject"}


def test_stop_is_offered_even_when_the_rule_suggested_only_answers():
    request = review_request(_escalation(choices(["engineers", "executives"]), artifacts=()))
    args = request["action_requests"][0]["args"]
    assert "- `stop here`" in args["reject"].splitlines()
    assert "accept" not in args["reject"].split("\n", 1)[1]  # approve accepts; not listed twice
    assert args["artifacts_ready_for_review"] == "none yet"


def code_span(text: str) -> str:
    """What a markdown renderer shows for ``text`` if it is one whole code span (CommonMark:
    the span closes at the first run of exactly as many backticks as opened it)."""
    opening = re.match(r"`+", text)
    assert opening, f"not a code span: {text!r}"
    rest = text[opening.end() :]
    closing = next(r for r in re.finditer(r"`+", rest) if len(r.group()) == opening.end())
    assert closing.end() == len(rest), f"the span closes early in {text!r}"
    inner = rest[: closing.start()]
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    return inner


@pytest.mark.parametrize(
    "hostile",
    [
        "![x](https://evil.example/p.png)",
        "[click](javascript:alert(1))",
        "a`b``c",
        "`",
        "``lead",
        "**bold** <b>x</b>",
    ],
)
def test_paths_and_labels_are_shown_as_literal_code_not_markdown(hostile):
    request = review_request(_escalation(choices([hostile]), artifacts=[hostile, "ok.md"]))
    args = request["action_requests"][0]["args"]
    path = args["artifacts_ready_for_review"].splitlines()[0]
    label = args["reject"].splitlines()[1]
    for listed in (path, label):
        assert listed.startswith("- ")
        assert code_span(listed[2:]) == hostile


def test_a_long_artifact_list_is_cut_short_with_a_count():
    paths = [f"part{i}.md" for i in range(25)]
    listed = review_request(_escalation(artifacts=paths))["action_requests"][0]["args"]
    lines = listed["artifacts_ready_for_review"].splitlines()
    assert len(lines) == 11 and lines[-1] == "- … 15 more"


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        # agent-chat-ui today: {"decisions": [...]} from the review card's buttons
        ({"decisions": [{"type": "approve"}]}, Answer("accept")),
        (
            {"decisions": [{"type": "reject", "message": "cover 2022 instead"}]},
            Answer("answer", "cover 2022 instead"),
        ),
        ({"decisions": [{"type": "reject", "message": "2024"}]}, Answer("answer", "2024")),
        ({"decisions": [{"type": "reject", "message": "  Stop   HERE. "}]}, Answer("stop")),
        ({"decisions": [{"type": "reject", "message": "stop"}]}, Answer("stop")),
        (
            {"decisions": [{"type": "reject", "message": "Accept the artifacts as they are"}]},
            Answer("accept"),
        ),
        ({"decisions": [{"type": "reject", "message": ""}]}, None),
        ({"decisions": [{"type": "reject"}]}, None),
        ([{"type": "approve"}], Answer("accept")),
        ({"type": "approve"}, Answer("accept")),
        # the older agent inbox: [{"type": "accept" | "ignore" | "response", "args": ...}]
        ([{"type": "accept", "args": None}], Answer("accept")),
        ([{"type": "ignore", "args": None}], Answer("stop")),
        ([{"type": "response", "args": "cover 2022"}], Answer("answer", "cover 2022")),
        ([{"type": "response", "args": "STOP HERE"}], Answer("stop")),
        ([{"type": "response", "args": None}], None),
        # typed text naming a choice
        ("stop here", Answer("stop")),
        ("\tStop\n here!", Answer("stop")),
        ("'stop here'", Answer("stop")),
        ("accept", Answer("accept")),
        ("stop here please", Answer("answer", "stop here please")),
        ("2023", Answer("answer", "2023")),
        ("continue", Answer("answer", "continue")),  # not offered here: just words
        # the contract's values still work
        ({"action": "stop"}, Answer("stop")),
        ({"action": "answer", "text": "stop here"}, Answer("answer", "stop here")),
        (
            {"label": "2024", "value": {"action": "answer", "text": "2024"}},
            Answer("answer", "2024"),
        ),
    ],
)
def test_every_button_and_typed_label_is_understood(value, answer):
    assert parse_answer(value, YEARS) == answer


@pytest.mark.parametrize("typed", ["continue", "Continue.", "continue with a higher budget"])
def test_continue_typed_after_a_budget_stop_continues(typed):
    assert parse_answer(typed, BUDGET) == Answer("continue")
    assert typed_choice(typed, BUDGET) == {"action": "continue"}
    assert parse_answer({"decisions": [{"type": "reject", "message": typed}]}, BUDGET) == Answer(
        "continue"
    )


def test_a_labelled_choice_acts_with_its_own_value_not_its_label():
    suggested = [{"label": "Go wide", "value": {"action": "answer", "text": "cover all years"}}]
    assert parse_answer("  go WIDE ", suggested) == Answer("answer", "cover all years")
    assert offered(suggested)[-2:] == [
        {"label": "accept the artifacts as they are", "value": {"action": "accept"}},
        {"label": "stop here", "value": {"action": "stop"}},
    ]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, "one decision, got 2"),
        ({"decisions": []}, "one decision, got 0"),
        ({"decisions": "approve"}, "decisions must be a list"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": "x", "args": {}}}]}, "'edit'"),
        ([{"type": "dance"}], "'dance' does not answer"),
    ],
)
def test_review_decisions_that_answer_nothing_are_clear_errors(value, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_answer(value, YEARS)
