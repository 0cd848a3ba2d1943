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

    assert Context().validate() == [
        "time_budget_s must be a finite number, got 'soon' (str) (from $DEEPREFLECT_TIME_BUDGET_S)"
    ]


def test_a_bad_range_from_the_environment_names_the_variable_too(monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_MAX_PARALLEL", "0")
    monkeypatch.setenv("DEEPREFLECT_STRUCTURED_OUTPUT", "xml")

    assert Context().validate() == [
        "max_parallel must be positive, got 0 (from $DEEPREFLECT_MAX_PARALLEL)",
        "unknown structured_output 'xml'; expected one of auto, function_calling, json_schema, "
        "json_mode (from $DEEPREFLECT_STRUCTURED_OUTPUT)",
    ]
    monkeypatch.delenv("DEEPREFLECT_MAX_PARALLEL")
    assert Context(max_parallel=0).validate()[0] == "max_parallel must be positive, got 0"


def test_reflection_has_a_model_of_its_own_else_the_default(monkeypatch):
    from agent.graph import roles

    monkeypatch.setattr(roles, "load_model", lambda spec, role, **limits: spec)
    chosen = roles.Roles({}).model_for
    assert chosen("reflection", Context(model="a:m")) == "a:m"
    assert chosen("reflection", Context(model="a:m", reflection_model="b:r")) == "b:r"
    assert chosen("planner", Context(model="a:m", reflection_model="b:r")) == "a:m"
    monkeypatch.setenv("DEEPREFLECT_REFLECTION_MODEL", "c:env")
    assert chosen("reflection", Context(model="a:m")) == "c:env"


def test_the_request_timeout_is_a_described_positive_number_of_seconds(monkeypatch):
    from dataclasses import fields

    described = {f.name: f.metadata.get("description") for f in fields(Context)}
    assert described["request_timeout_s"] and described["reflection_model"]
    assert Context().request_timeout_s == 120
    assert Context(request_timeout_s=0).validate() == ["request_timeout_s must be positive, got 0"]
    monkeypatch.setenv("DEEPREFLECT_REQUEST_TIMEOUT_S", "30")
    assert Context().request_timeout_s == 30.0


def test_a_stored_context_keeps_its_values_over_the_environment(monkeypatch):
    from agent.context import as_context

    monkeypatch.setenv("DEEPREFLECT_MAX_PARALLEL", "8")
    monkeypatch.setenv("DEEPREFLECT_TOKEN_BUDGET", "5")

    ctx = as_context({"max_parallel": 4, "model": "scripted:happy"})  # 4 is the default

    assert (ctx.max_parallel, ctx.token_budget) == (4, 5)  # absent keys still default from env


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


def test_fresh_drafts_may_be_zero_but_not_negative():
    assert Context(fresh_drafts=0).validate() == []
    assert Context(fresh_drafts=-1).validate() == ["fresh_drafts must be 0 or more, got -1"]
