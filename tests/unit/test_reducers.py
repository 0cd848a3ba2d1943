"""The reducers of the state's delta keys: any batching of the same writes gives the same
value, which LangGraph's ``DeltaChannel`` relies on when it replays writes."""

from __future__ import annotations

from agent.reducers import summed

WRITES = [
    {"planner": {"calls": 1, "total_tokens": 120}},
    {"coder": {"calls": 2, "total_tokens": 300}},
    None,
    {"planner": {"calls": 1, "total_tokens": 80}, "coder": {"calls": 1, "total_tokens": 5}},
]


def test_usage_sums_per_role_whatever_the_batches():
    whole = summed({}, WRITES)
    assert whole == {
        "planner": {"calls": 2, "total_tokens": 200},
        "coder": {"calls": 3, "total_tokens": 305},
    }
    for cut in range(len(WRITES) + 1):
        assert summed(summed({}, WRITES[:cut]), WRITES[cut:]) == whole
    assert summed(None, []) == {}


def test_summing_leaves_the_current_value_unchanged():
    current = {"planner": {"calls": 1}}
    summed(current, WRITES)
    assert current == {"planner": {"calls": 1}}
