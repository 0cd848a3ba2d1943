"""Context defaults from the environment, and configuration errors a server can show."""

from __future__ import annotations

import pytest

from agent.context import Context
from agent.errors import ConfigError


def test_fields_left_at_their_default_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_MODEL", "scripted:happy")
    monkeypatch.setenv("DEEPREFLECT_MAX_PARALLEL", "8")
    monkeypatch.setenv("DEEPREFLECT_STRICT_END", "false")
    monkeypatch.setenv("DEEPREFLECT_PLANNER_MODEL", "none")

    ctx = Context()

    assert (ctx.model, ctx.max_parallel, ctx.strict_end, ctx.planner_model) == (
        "scripted:happy",
        8,
        False,
        None,
    )
    assert ctx.validate() == []


def test_an_explicit_value_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_MODEL", "scripted:happy")

    assert Context(model="openai:gpt-4.1").model == "openai:gpt-4.1"


def test_an_environment_value_that_does_not_parse_is_a_named_configuration_error(monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_TIME_BUDGET_S", "soon")

    assert Context().validate() == ["time_budget_s must be a finite number, got 'soon' (str)"]


def test_configuration_errors_are_value_errors_so_servers_report_their_text():
    with pytest.raises(ValueError, match="needs a key"):
        raise ConfigError("openai: needs a key")


def test_run_on_a_graph_without_a_checkpointer_says_what_is_needed():
    from agent import build_graph, run

    with pytest.raises(ConfigError, match="checkpointer"):
        run(build_graph(), "goal", context=Context(model="scripted:happy"))


def test_agent_eval_is_there_without_importing_it():
    import agent

    assert callable(agent.eval.evaluate)
