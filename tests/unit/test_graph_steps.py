"""What a user's graph returned as files, and why a part of it was not kept
(agent.controller.graph_steps)."""

from __future__ import annotations

from agent.controller.graph_steps import not_text, returned_files


def test_each_file_left_out_of_a_graphs_answer_is_named_with_why():
    files = {
        "findings.md": 12345,
        "a.md": {"content": ["# A", "line"]},
        "b.md": {"content": {"nested": True}},
        7: "a name that is a number",
        "c.md": "# C\n",
    }
    assert returned_files(files) == {"a.md": "# A\nline", "c.md": "# C\n"}
    assert not_text(files) == {
        "findings.md": "its content is a int, not text",
        "b.md": "its content is a dict, not text",
        "7": "its name is a int, not text",
    }
    assert not_text(None) == {} and not_text({"ok.md": "text"}) == {}
