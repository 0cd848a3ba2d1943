"""The command line's own words: a suggestion for a mistyped flag or choice, help for every
argument, the scenario names in ``demo --help``."""

from __future__ import annotations

import argparse

import pytest

from agent.cli.parser import build_parser
from agent.models.scenarios import SCENARIOS


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_a_mistyped_flag_is_answered_with_the_flag_meant(capsys):
    assert "did you mean '--scenario'?" in _error(["demo", "--scenaro", "x"], capsys)


def test_a_mistyped_scenario_is_answered_with_the_scenario_meant(capsys):
    assert "did you mean 'escalation'?" in _error(["demo", "--scenario", "escalaton"], capsys)


def test_a_flag_of_another_command_is_named_with_the_commands_that_take_it(capsys):
    said = _error(["demo", "--execute-timeout", "2"], capsys)
    assert "did you mean" not in said  # it was never mistyped
    assert "deepreflect run" in said and "not of this command" in said


def test_a_word_like_nothing_gets_no_suggestion(capsys):
    assert "did you mean" not in _error(["demo", "--zzzzzz"], capsys)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_argument_of_every_command_has_help(command):
    child = _subcommands()[command]
    bare = [a.option_strings or a.dest for a in child._actions if not a.help]
    assert bare == []


def test_demo_help_lists_every_scenario():
    text = _subcommands()["demo"].format_help()
    assert all(name in text for name in SCENARIOS)
