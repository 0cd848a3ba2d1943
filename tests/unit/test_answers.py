"""Resume values: text, actions and budgets, understood without a graph."""

from __future__ import annotations

import pytest

from agent.answers import Answer, choices, parse_answer
from agent.errors import ConfigError


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
