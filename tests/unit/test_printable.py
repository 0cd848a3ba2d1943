"""What the CLI prints of text a model or an artifact wrote (agent.runs.progress.printable)."""

from __future__ import annotations

import pytest

from agent.runs.progress import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x07b", "a\\x07b"),
        ("a\x85b", "a\\x85b"),
        ("line\u2028next\u2029end", "line\\u2028next\\u2029end"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
    ],
)
def test_controls_and_separators_are_shown_never_sent(raw, shown):
    assert printable(raw) == shown


def test_escape_sequences_and_bidi_controls_are_dropped():
    text = printable("\x1b[31mred\x1b[0m \u202egnp.exe \x1b]8;;http://h\x07link")
    assert "\x1b" not in text and "\u202e" not in text and "red" in text
