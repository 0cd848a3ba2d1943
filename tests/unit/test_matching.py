"""glob and grep: on the thread's own files, with no folder, and their limits."""

from __future__ import annotations

import pytest

from agent.tools.filesystem import vfs_tools
from agent.vfs.entries import Workspace
from agent.vfs.matching import glob_match, glob_paths, grep_texts, listed
from agent.vfs.paths import PathError

PATHS = ["README.md", "src/app.py", "src/util/text.py", "tests/test_app.py", "docs/a.md"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["src/app.py", "src/util/text.py", "tests/test_app.py"]),  # any depth
        ("src/*.py", ["src/app.py"]),  # one folder: not its subfolders
        ("src/**/*.py", ["src/app.py", "src/util/text.py"]),  # ** spans zero or more
        ("**", PATHS),
        ("/docs/*.md", ["docs/a.md"]),  # a leading / names the workspace's root
        ("test?/test_[a-z]*.py", ["tests/test_app.py"]),
        ("*.rs", []),
    ],
)
def test_glob_matches_segments_as_a_shell_with_globstar(pattern, expected):
    assert glob_paths(pattern, PATHS) == sorted(expected)


def test_a_star_never_crosses_a_folder():
    assert glob_match("src/*", "src/app.py")
    assert not glob_match("src/*", "src/util/text.py")


@pytest.mark.parametrize("pattern", ["", "   ", "../*.py", "src/../../x", "x" * 600])
def test_a_bad_glob_is_a_tool_error(pattern):
    with pytest.raises(PathError):
        glob_paths(pattern, PATHS)


def test_a_pathological_glob_stays_linear():
    # memoised: "**" repeated cannot blow up over a deep path
    assert not glob_match("**/" * 30 + "z", "/".join(["a"] * 60))


def test_grep_finds_literal_text_never_a_regex():
    texts = [("a.py", "x = 1\ny = x.+\n"), ("b.py", "nothing\n")]
    assert grep_texts("x.+", texts).lines == ["a.py:2: y = x.+"]
    assert grep_texts("(", texts).lines == []  # not a regex: no error for a bad one


def test_grep_stops_at_its_match_limit_and_says_so():
    text = "hit\n" * 50
    result = grep_texts("hit", [("a", text)], max_matches=10)
    assert len(result.lines) == 10 and "more than 10" in result.text("hit")


def test_grep_cuts_long_lines():
    result = grep_texts("x", [("a", "x" * 1000)], line_chars=50)
    assert len(result.lines[0]) == len("a:1: ") + 50


@pytest.mark.parametrize("pattern", ["", "two\nlines", "p" * 600])
def test_a_bad_grep_pattern_is_a_tool_error(pattern):
    with pytest.raises(PathError):
        grep_texts(pattern, [])


def test_listing_counts_what_it_does_not_show():
    assert listed(["a", "b", "c"], 2).splitlines() == [
        "a",
        "b",
        "… and 1 more files; narrow it with glob(pattern)",
    ]
    assert listed([]) == "(no files)"


def test_glob_and_grep_work_on_the_threads_own_files_without_a_folder():
    workspace = Workspace(
        {"notes/todo.md": "- fix parser\n", "src/parser.py": "def parse():\n    pass  # fix\n"},
        writable=["out.md"],
    )
    tools = {t.name: t for t in vfs_tools(workspace)}
    assert tools["glob"].invoke({"pattern": "*.py"}) == "src/parser.py"
    found = tools["grep"].invoke({"pattern": "fix"})
    assert found.splitlines() == [
        "notes/todo.md:1: - fix parser",
        "src/parser.py:2:     pass  # fix",
    ]
    assert (
        tools["grep"].invoke({"pattern": "fix", "path": "src"})
        == "src/parser.py:2:     pass  # fix"
    )
    assert (
        tools["grep"].invoke({"pattern": "fix", "glob": "*.md"}) == "notes/todo.md:1: - fix parser"
    )
    assert "no line contains" in tools["grep"].invoke({"pattern": "absent"})
