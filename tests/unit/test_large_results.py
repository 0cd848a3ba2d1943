"""A tool result too large for the conversation goes to a scratch file; the model sees its
head and the path, reads on with ``read_file(path, offset, limit)``, and the step goes on."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import ToolMessage

from agent.context import Context
from agent.controller.large_results import HEAD_CHARS, fit_result, head_lines
from agent.controller.revise import LoopConfig
from agent.controller.worker import StepWorker
from agent.models.factory import Metered
from agent.models.scripted import tool_call
from agent.tools.custom import as_tool
from agent.tools.filesystem import read_lines
from agent.vfs.entries import MAX_FILE_BYTES, PathError, Workspace
from tests.unit.test_context_window import STEP, limited_model

BIG = "".join(f"line {i:04d} " + "x" * 88 + "\n" for i in range(2000)) + "THE END\n"


def workspace() -> Workspace:
    return Workspace({}, writable=["out.txt"], scratch="work/S1/")


def test_head_lines_keeps_whole_lines_within_the_limit():
    assert head_lines("ab\ncd\nef\n", 7) == ("ab\ncd\n", 2)
    assert head_lines("a" * 50, 10) == ("a" * 10, 1)  # a first line too long is cut


def test_read_lines_reads_a_page_and_refuses_an_offset_past_the_end():
    text = "1\n2\n3\n4\n"
    assert read_lines(text) == text
    assert read_lines(text, 1, 2) == "2\n3\n"
    assert read_lines(text, 3) == "4\n"
    with pytest.raises(PathError, match="past the end: the file has 4 lines"):
        read_lines(text, 4)


def test_a_result_that_fits_is_left_as_it_is():
    assert fit_result("short", tool="t", args={}, workspace=workspace(), number=1, limit=10).text


def test_a_large_result_goes_to_a_scratch_file_and_its_head_says_where():
    space = workspace()
    fitted = fit_result(BIG, tool="web search!", args={}, workspace=space, number=3, limit=20_000)
    assert fitted.path == "work/S1/tool_results/3-web_search_.txt"
    assert space.written == {fitted.path: BIG}
    assert len(fitted.text) < HEAD_CHARS + 300 and fitted.text.startswith("line 0000")
    assert f"read_file(path='{fitted.path}', offset=40, limit=40)" in fitted.text


def test_a_large_read_says_which_lines_it_shows_and_where_to_read_on():
    args = {"path": "big.txt", "offset": 100}
    fitted = fit_result(BIG, tool="read_file", args=args, workspace=workspace(), number=1, limit=9)
    assert fitted.path is None  # the file is already there: nothing new is written
    assert "read_file(path='big.txt', offset=" in fitted.text
    assert fitted.text.endswith("reads on]") and "lines 101-" in fitted.text


def test_a_result_too_large_even_for_a_file_is_cut_saying_why():
    huge = "y" * (MAX_FILE_BYTES + 1)
    fitted = fit_result(huge, tool="t", args={}, workspace=workspace(), number=1, limit=1000)
    assert fitted.path is None and "more characters were cut" in fitted.text


def fetch() -> str:
    """Fetch the long report."""
    return BIG


def test_a_step_reads_a_result_larger_than_its_window_page_by_page_and_succeeds():
    path = "work/S1/tool_results/1-fetch.txt"
    script = [
        tool_call("fetch"),
        tool_call("read_file", path=path, offset=1995, limit=10),
        tool_call("write_file", path="out.txt", content="OK"),
        "done",
    ]
    model, seen = limited_model(script, limit=12_000)  # a small model's window
    worker = StepWorker(
        step=STEP,
        goal="the goal",
        inputs={},
        round_no=1,
        system_prompt="system",
        model=Metered(model, "coder", "function_calling"),
        judge=None,
        loop_config=LoopConfig(max_revisions=0),
        extra_tools=[as_tool(fetch)],
        tool_calling="native",
    )
    run = asyncio.run(worker.aexecute())
    assert run.files["out.txt"]["status"] == "done"
    assert run.files[path]["content"] == BIG  # kept whole, in the step's scratch folder
    assert max(seen) < 12_000  # never over the window, never trimmed
    reads = [m for m in model.calls[-1] if isinstance(m, ToolMessage) and m.name == "read_file"]
    assert "THE END" in str(reads[-1].content)  # the last page, read from the scratch file
    (fetched,) = [e for e in run.trajectory if e["action"] == "fetch"]
    assert (fetched["result_file"], fetched["result_chars"]) == (path, len(BIG))


def test_tool_result_chars_has_a_floor():
    problems = Context(model="scripted:happy", tool_result_chars=10).validate()
    assert any(p.startswith("tool_result_chars must be at least 500") for p in problems)
