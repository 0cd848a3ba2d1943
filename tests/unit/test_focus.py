"""A revision asked for the failing functions only: what the evidence names, the sources
shown, and the splice that puts the reply's functions back into the file."""

from __future__ import annotations

import ast

from agent.controller.focus import MAX_FOCUSED, focus_for, splice

GIVEN = '''"""Small statistics helpers."""

import math


def mean(values):
    return sum(values) / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return (ordered[middle] + ordered[middle + 1]) / 2
    return ordered[middle]


@staticmethod
def spread(values):
    return max(values) - mean(values)
'''

FIXED = """def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return (ordered[middle - 1] + ordered[middle]) / 2
    return ordered[middle]
"""


def test_the_function_the_evidence_calls_is_the_focus():
    focus = focus_for(GIVEN, GIVEN, "median([1, 2, 3, 4]) returned 3.5, expected 2.5")
    assert focus is not None and focus.names == ("median",)
    assert focus.current.startswith("def median(values):") and "def mean" not in focus.current
    assert focus.given == ""  # unchanged from the user's file: not shown twice
    assert focus.helpers == ""  # median calls no function of the module


def test_a_name_only_mentioned_or_called_as_an_attribute_is_no_focus():
    assert focus_for(GIVEN, GIVEN, "the median is wrong") is None
    assert focus_for(GIVEN, GIVEN, "statistics.median([1]) differs") is None
    assert focus_for(GIVEN, GIVEN, "my_median([1]) differs") is None


def test_the_whole_file_is_asked_for_when_there_is_nothing_to_narrow():
    every = "mean([1]) median([1]) spread([1])"
    assert focus_for(GIVEN, GIVEN, every) is None  # every function fails
    assert focus_for("def median(v):\n    return 0\n", "", "median([1]) returned 0") is None
    assert focus_for("def median(v:\n", "", "median([1]) failed") is None
    many = "".join(f"def f{i}(x):\n    return x\n\n" for i in range(MAX_FOCUSED + 2))
    named = " ".join(f"f{i}(1)" for i in range(MAX_FOCUSED + 1))
    assert focus_for(many, many, named) is None


def test_the_user_s_version_and_the_functions_it_calls_are_shown():
    draft = GIVEN.replace("return max(values) - mean(values)", "return 0")
    focus = focus_for(draft, GIVEN, "spread([1, 3]) returned 0, expected 1")
    assert focus is not None and focus.names == ("spread",)
    assert focus.current.startswith("@staticmethod\ndef spread")  # its decorator with it
    assert "return max(values) - mean(values)" in focus.given
    assert focus.helpers == ""  # the draft's spread no longer calls mean
    calling = focus_for(GIVEN, GIVEN, "spread([1, 3]) returned 1")
    assert calling is not None and calling.helpers.startswith("def mean(values):")


def test_the_reply_s_function_replaces_its_namesake_and_the_rest_is_kept_byte_for_byte():
    spliced = splice(GIVEN, FIXED)
    assert spliced is not None
    assert spliced == GIVEN.replace(
        "ordered[middle] + ordered[middle + 1]", "ordered[middle - 1] + ordered[middle]"
    )


def test_new_functions_are_appended_and_missing_imports_added_after_the_module_s_own():
    reply = (
        "import statistics\nimport math\n\n"
        + FIXED
        + "\n\ndef mode(values):\n    return statistics.mode(values)\n"
    )
    spliced = splice(GIVEN, reply)
    assert spliced is not None
    tree = ast.parse(spliced)
    names = [getattr(n, "name", None) for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert names == ["mean", "median", "spread", "mode"]
    assert spliced.count("import math") == 1
    lines = spliced.splitlines()
    assert lines.index("import statistics") == lines.index("import math") + 1
    assert "ordered[middle - 1] + ordered[middle]" in spliced


def test_a_reply_without_a_function_or_that_does_not_parse_is_no_splice():
    assert splice(GIVEN, "median = None\n") is None
    assert splice(GIVEN, "def median(values:\n") is None
    assert splice("def broken(:\n", FIXED) is None


def test_a_hostile_reply_nested_beyond_the_parser_is_no_splice():
    assert splice(GIVEN, "def median(v):\n    return " + "(" * 200_000 + ")" * 200_000) is None
    assert splice(GIVEN, "def median(v):\n    return " + "-" * 200_000 + "1\n") is None
