"""A stated example's result is compared kind by kind (agent/checks/examples_program.py): a
bool is not a number, a complex is not a real one, and the kinds of the items count too —
at every isolation level, since the comparison runs beside the artifact's handles."""

from __future__ import annotations

import pytest

from agent.checks import run_check
from agent.checks.examples import examples_check
from tests.fakes import both_isolation_levels

mode = both_isolation_levels(("kernel", "landlock"))


@pytest.mark.parametrize(
    ("body", "call", "expected"),
    [
        ("return 1 if n % 2 == 0 else 0", "is_even(4)", "True"),
        ("return True", "is_even(4)", "1"),
        ("return [1, 0]", "is_even(4)", "[True, False]"),
        ("return {'a': True}", "is_even(4)", "{'a': 1}"),
        ("return complex(1.5, 0)", "is_even(4)", "1.5"),
        ("return (1, [0])", "is_even(4)", "(True, [False])"),
    ],
)
def test_a_result_of_another_kind_fails_though_python_calls_it_equal(body, call, expected):
    artifact = f"def is_even(n):\n    {body}\n"
    report = run_check(examples_check(["is_even"], [(call, expected)]), {"m.py": artifact}, "m.py")
    assert not report["passed"], report
    assert call in report["evidence"] and expected in report["evidence"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return 2.0", "2"),  # a mean of whole numbers is a float: still the stated number
        ("return 2", "2.0"),
        ("return n % 2 == 0", "True"),
        ("return [2.0, {'k': (1, True)}]", "[2, {'k': (1.0, True)}]"),
    ],
)
def test_a_result_of_the_stated_kind_passes(body, expected):
    artifact = f"def is_even(n):\n    {body}\n"
    spec = examples_check(["is_even"], [("is_even(4)", expected)])
    assert run_check(spec, {"m.py": artifact}, "m.py")["passed"]
