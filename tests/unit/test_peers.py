"""bench/peers.py's pure helpers: plan levels, prompt size, critical path, ratio cells."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))  # peers.py imports its sibling benchmarks by name
spec = importlib.util.spec_from_file_location("peers", BENCH / "peers.py")
assert spec and spec.loader
peers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers)


def step(step_id: str, *depends_on: str) -> dict:
    return {"step_id": step_id, "depends_on": list(depends_on)}


def test_the_diamond_runs_on_three_levels_with_b_and_c_together():
    ids = [[s["step_id"] for s in level] for level in peers.levels(peers.diamond())]
    assert ids == [["S1"], ["S2", "S3"], ["S4"]]


def test_independent_steps_are_one_level_and_a_chain_one_level_per_step():
    assert len(peers.levels([step("a"), step("b"), step("c")])) == 1
    assert len(peers.levels([step("a"), step("b", "a"), step("c", "b")])) == 3


def test_a_cycle_is_refused_with_the_steps_it_involves():
    with pytest.raises(ValueError, match=r"\['a', 'b'\]"):
        peers.levels([step("a", "b"), step("b", "a"), step("c")])


def test_prompt_size_counts_text_and_tool_call_arguments():
    call = {"name": "write_file", "args": {"path": "a.md", "content": "xyz"}, "id": "c1"}
    messages = [SystemMessage("sys"), HumanMessage("hello"), AIMessage("", tool_calls=[call])]
    args = '{"path": "a.md", "content": "xyz"}'
    assert peers.prompt_chars(messages) == len("sys") + len("hello") + len("write_file") + len(args)


def test_critical_path_is_top_calls_plus_one_steps_calls_per_level():
    # deepreflect's diamond: planner and reflection, two subagent calls on each of 3 levels
    assert peers.critical_path(0.5, 2, 2.0, 3) == pytest.approx(4.0)
    assert peers.critical_path(0.5, 0, 1.0, 1) == pytest.approx(0.5)


def test_ratio_reads_ours_over_theirs_and_is_na_without_a_peer():
    assert peers.ratio(3.0, 2.0) == "1.50x"
    assert peers.ratio(1.0, 3.0, 3) == "0.333x"
    assert peers.ratio(1.0, None) == "n/a"
    assert peers.ratio(None, 2.0) == "n/a"
    assert peers.ratio(1.0, 0.0) == "n/a"


def test_one_column_holds_each_systems_figure_in_order():
    assert peers.each([1.234, None, 2.0]) == "1.23/n/a/2.00"
    assert peers.each([2048.0], "{:,.0f}") == "2,048"


def test_side_by_side_gives_the_three_figures_then_both_ratios():
    row = peers.side_by_side({"deepreflect": 2.0, "deepagents": 4.0, "bare": 1.0})
    assert row == ["2.00", "4.00", "1.00", "0.50x", "2.00x"]
    row = peers.side_by_side({"deepreflect": 2.0, "deepagents": None, "bare": 1.0})
    assert row[1] == "n/a" and row[3] == "n/a"
