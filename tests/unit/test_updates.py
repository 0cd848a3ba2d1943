"""A node's update read back as its channels will merge it (``agent.graph.updates``)."""

from agent.context import Context
from agent.graph.updates import combined, with_update
from agent.reflection.budget import budget_of
from agent.state import State
from agent.vfs.entries import file_entry


def test_an_update_is_merged_as_each_key_s_channel_merges_it():
    state = {
        "usage": {"coder": {"total_tokens": 900, "calls": 3}},
        "decisions": [{"round": 1}],
        "trajectory": [{"step_id": "S1"}],
        "files": {"a.py": file_entry("a = 1\n", step=1)},
        "goal": "first",
    }
    update = {
        "usage": {"planner": {"total_tokens": 50, "calls": 1}, "coder": {"calls": 1}},
        "decisions": [{"round": 2}],
        "trajectory": [{"step_id": "S2"}],
        "files": {"b.py": file_entry("b = 2\n", step=2)},
        "goal": "second",
        "plan_history": [{"version": 1}],
    }
    merged = with_update(state, update)
    assert merged["usage"] == {
        "coder": {"total_tokens": 900, "calls": 4},
        "planner": {"total_tokens": 50, "calls": 1},
    }
    assert merged["decisions"] == [{"round": 1}, {"round": 2}]
    assert [t["step_id"] for t in merged["trajectory"]] == ["S1", "S2"]
    assert sorted(merged["files"]) == ["a.py", "b.py"]
    assert merged["goal"] == "second"  # a key replaced whole
    assert merged["plan_history"] == [{"version": 1}]  # none before: the update alone
    assert state["decisions"] == [{"round": 1}]  # the state read is left as it was


def test_a_dispatch_after_a_replan_counts_every_token_the_turn_spent():
    # the planner's update carries its own call's usage; the steps' allowance must see the
    # turn's total, as the usage channel will sum it
    state = {"usage": {"coder": {"total_tokens": 9_000}}, "turn": {"start_tokens": 0}}
    update = {"usage": {"planner": {"total_tokens": 500}}}
    ctx = Context(token_budget=10_000)
    assert budget_of(with_update(state, update), ctx).tokens == 500


def test_every_reduced_key_of_the_state_is_known():
    from typing import get_type_hints

    from agent.graph.updates import _REDUCERS

    hinted = get_type_hints(State, include_extras=True)
    reduced = {k for k, h in hinted.items() if getattr(h, "__metadata__", ())}
    assert reduced == set(_REDUCERS)  # a key with another kind of reducer would be replaced


def test_two_parts_of_one_node_s_update_keep_both_files_and_messages():
    joined = combined({"files": {"a": 1}, "messages": ["m1"]}, {"files": {"b": 2}, "goal": "g"})
    assert joined == {"files": {"a": 1, "b": 2}, "messages": ["m1"], "goal": "g"}
    both = combined({"messages": ["m1"]}, {"messages": ["m2"]})
    assert both["messages"] == ["m1", "m2"]
