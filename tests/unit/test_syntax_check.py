"""The ``syntax`` check: an artifact parses as its language, and nothing of it runs."""

from __future__ import annotations

import pytest

from agent.checks import run_check

SYNTAX = {"kind": "syntax"}


def check(path, text):
    return run_check(SYNTAX, {path: text}, path)


def test_a_module_that_parses_passes_without_running():
    report = check("a.py", "import os\nos.remove('/etc/passwd')\nfrom b import g\n")
    assert report["passed"] and report["kind"] == "syntax"  # parsed, never run


def test_a_syntax_error_is_quoted_with_its_line():
    report = check("textkit/words.py", "def f(t):\n    return re.findall(r'[a']+', t)\n")
    assert not report["passed"]
    assert "SyntaxError" in report["evidence"] and "line 2" in report["evidence"]


@pytest.mark.parametrize(
    ("path", "text"),
    [("a.json", "{'a': 1}"), ("a.py", "x = 1\0"), ("a.py", "(" * 10_000), ("notes.md", "# ok")],
    ids=["json", "null byte", "deep nesting", "no parser"],
)
def test_what_does_not_parse_or_has_no_parser_fails(path, text):
    assert not check(path, text)["passed"]


def test_valid_json_passes_and_a_missing_artifact_fails():
    assert check("a.json", '{"a": [1, 2]}')["passed"]
    assert not run_check(SYNTAX, {}, "gone.py")["passed"]


def test_a_module_must_refer_to_each_name_it_must_use_in_code_not_in_comments():
    spec = {"kind": "syntax", "uses": ["word_lengths"]}
    calls = (
        "def longest(t):\n    from textkit.count import word_lengths\n    return word_lengths(t)\n"
    )
    attr = "import textkit.count as c\ndef longest(t):\n    return c.word_lengths(t)\n"
    for text in (calls, attr):
        assert run_check(spec, {"w.py": text}, "w.py")["passed"]
    comment = "# uses word_lengths\ndef longest(t):\n    return 'word_lengths'\n"
    report = run_check(spec, {"w.py": comment}, "w.py")
    assert not report["passed"] and "does not use word_lengths" in report["evidence"]


def test_uses_is_refused_unless_it_lists_python_names():
    from agent.checks import validate_check_spec

    assert validate_check_spec({"kind": "syntax", "uses": ["ok_name"]}) == []
    assert validate_check_spec({"kind": "syntax", "uses": ["not a name"]})
    assert validate_check_spec({"kind": "syntax", "uses": "word_lengths"})


def test_a_module_defining_its_own_copy_of_the_name_does_not_use_the_sibling_s():
    spec = {"kind": "syntax", "uses": ["split_words"]}
    own = "def split_words(t):\n    return t.split()\n\n"
    own += "def count(t):\n    return len(split_words(t))\n"
    assert not run_check(spec, {"c.py": own}, "c.py")["passed"]


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_python_check_s_calls_are_read_from_the_artifact_s_source_on_the_host():
    from agent.checks import validate_check_spec

    spec = {"kind": "python", "code": "assert f(1) == 2", "calls": [["f", "g"]]}
    assert validate_check_spec(spec) == []
    for bad in ([["f"]], [["f", "not a name"]], "f calls g", [[1, 2]]):
        assert validate_check_spec({**spec, "calls": bad})
    # the check code cannot see the artifact's code (only through the bridge): the host can
    kept = "def f(x):\n    return x + 1  # g(x) is not a call\n\n\ndef g(x):\n    return x + 1\n"
    report = run_check(spec, {"a.py": kept}, "a.py")
    assert not report["passed"] and "f() does not call g()" in report["evidence"]
    called = "def f(x):\n    return g(x)\n\n\ndef g(x):\n    return x + 1\n"
    assert run_check(spec, {"a.py": called}, "a.py")["passed"]
    wrong = called.replace("return x + 1", "return x")
    report = run_check(spec, {"a.py": wrong}, "a.py")  # calls g, but the code's assert fails
    assert not report["passed"] and "does not call" not in report["evidence"]


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_name_called_but_never_imported_is_not_used_but_a_name_error():
    # what the 1.5B wrote for textkit/count.py at cf0a66c: split_words called, not imported
    spec = {"kind": "syntax", "uses": ["split_words"]}
    bare = "def word_lengths(text):\n    return {w: len(w) for w in split_words(text)}\n"
    report = run_check(spec, {"count.py": bare}, "count.py")
    assert not report["passed"] and "never imports" in report["evidence"]
    for used in (
        "from textkit.words import split_words\n\n\n" + bare,
        "def word_lengths(text):\n    from textkit.words import split_words as s\n"
        "    return {w: len(w) for w in s(text)}\n",
        "import textkit.words\n\n\ndef word_lengths(text):\n"
        "    return {w: len(w) for w in textkit.words.split_words(text)}\n",
    ):
        assert run_check(spec, {"count.py": used}, "count.py")["passed"]


def test_a_module_must_define_each_name_it_must_define_at_its_top_level():
    """On the 1.5B a ``textkit/count.py`` without the ``count_words`` its part of the goal
    asked for passed ``syntax`` (a false success)."""
    spec = {"kind": "syntax", "defines": ["word_lengths", "count_words"]}
    both = "def word_lengths(t):\n    return {}\n\n\nclass count_words:\n    pass\n"
    assert run_check(spec, {"c.py": both}, "c.py")["passed"]
    nested = "def word_lengths(t):\n    def count_words(t):\n        return 0\n    return {}\n"
    report = run_check(spec, {"c.py": nested}, "c.py")
    assert not report["passed"] and "does not define count_words" in report["evidence"]
    assert not run_check(spec, {"c.json": "{}"}, "c.json")["passed"]  # not a module
    from agent.checks import validate_check_spec

    assert validate_check_spec({"kind": "syntax", "defines": ["not a name"]})
