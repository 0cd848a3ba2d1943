"""Property-based tests: the loops stop within their bounds whatever the models say.

Over the revise loop (random critic scores and malformed critiques), the reflection rules
(random situations and answers), plan validation (random steps, dependencies and actions)
and the whole compiled graph (small random scripted plans, random reflection answers
including garbage). Derandomized with bounded example counts so CI is deterministic and fast.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent import ScriptedChatModel, build_graph, run
from agent.checks.critique import blocking, ground, parse_critique
from agent.context import DEPTH_CAP_BY_WORKLOAD, Context
from agent.controller.revise import LoopConfig, revise_loop
from agent.models.scripted import tool_call
from agent.plan.progress import pending_steps, ready_steps
from agent.plan.validation import parse_plan
from agent.reflection import rules
from agent.reflection.situation import Situation
from agent.vfs.entries import validate_path
from tests.tiers import examples

PROPS = settings(
    deadline=None,
    max_examples=examples(100),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GRAPH_PROPS = settings(PROPS, max_examples=examples(40))
ACTIONS = ("writer", "coder", "researcher", "critic")
STOP_REASONS = {"pass", "stalled", "oscillating", "budget", "timeout", "critic_error"}
TERMINAL = {
    "success": {"end"},
    "awaiting_input": {
        "depth_cap",
        "repeated_defect",
        "subagent_failed_twice",
        "model_escalated",
        "invalid_plan",
        "unknown_error",
        "unverified",
    },
    "budget_exhausted": {"token_budget", "time_budget", "step_budget"},
    "failed": {"invalid_input", "permission_denied", "policy_rejected"},
}

# ---------------------------------------------------------------------------- revise loop

_issue = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b", "c"]),
        "severity": st.sampled_from(["blocking", "major", "minor", "BLOCKING", "fatal"]),
        "location": st.one_of(st.none(), st.just("line 3"), st.just("  ")),
        "evidence": st.sampled_from(["", "AssertionError: 1 != 2", "   "]),
    }
)
_critique = st.one_of(
    st.fixed_dictionaries(
        {
            "issues": st.lists(_issue, max_size=3),
            "score": st.one_of(
                st.floats(0, 1, allow_nan=False), st.sampled_from([-0.1, 1.5, 85, float("nan")])
            ),
        }
    ),
    st.sampled_from(["Looks fine to me!", "{not json", "", "null", '{"score": "high"}', "[]"]),
    st.none(),
    st.text(max_size=30),
)


@PROPS
@given(
    drafts=st.lists(st.sampled_from(["d0", "d1", "d2", "d3"]), min_size=1, max_size=8),
    critiques=st.lists(_critique, min_size=1, max_size=8),
    max_revisions=st.integers(0, 4),
    fresh_drafts=st.integers(0, 3),
    min_gain=st.sampled_from([0.0, 0.05, 0.3]),
    token_budget=st.integers(1, 2_000),
    tokens=st.integers(0, 400),
)
def test_revise_loop_stops_in_bounds_and_never_returns_a_worse_draft(
    drafts, critiques, max_revisions, fresh_drafts, min_gain, token_budget, tokens
):
    generated: list[str] = []
    critiqued: list[Any] = []

    def generate(task, feedback):
        generated.append(drafts[len(generated) % len(drafts)])
        return generated[-1], tokens

    def critique(task, draft, evidence):
        critiqued.append(critiques[len(critiqued) % len(critiques)])
        return critiqued[-1], tokens

    evaluated: list[str] = []

    def evidence(draft):
        evaluated.append(draft)
        return {"passed": False, "evidence": "x"}

    config = LoopConfig(
        max_revisions=max_revisions,
        fresh_drafts=fresh_drafts,
        min_gain=min_gain,
        token_budget=token_budget,
    )
    result = revise_loop("task", generate, evidence, critique, config)

    assert result.stop_reason in STOP_REASONS
    assert 0 <= result.rounds <= max_revisions and 0 <= result.fresh <= fresh_drafts
    assert len(evaluated) <= max_revisions + fresh_drafts + 1
    assert len(critiqued) == len(evaluated)
    # a repeated revision is asked once more, unless fresh drafts replace that ask
    assert len(generated) <= 2 * max_revisions + fresh_drafts + 1
    assert result.best in evaluated
    parsed = [parse_critique(c) for c in critiqued]
    scores = [p.score if p else 0.0 for p in parsed]  # malformed scores 0, never approval
    assert [h["score"] for h in result.history] == scores
    passed = [p is not None and not blocking(ground(p)) for p in parsed]
    assert result.converged == (result.stop_reason == "pass") == any(passed)
    if result.converged:
        assert passed[-1] and result.best == evaluated[-1]
    else:
        assert result.best_score == max(scores)  # never a draft worse than another
        first_best = scores.index(max(scores))
        assert result.best == evaluated[first_best]
    if result.stop_reason == "oscillating":  # the revision and the one asked again repeated
        assert generated[-1] in evaluated and generated[-2] in evaluated


# ---------------------------------------------------------------------------- reflection


EMPTY = {"version": 1, "steps": []}


@st.composite
def situations(draw, *, dispatched: bool = True) -> Situation:
    n = draw(st.integers(0, 5))
    ids = [f"S{i}" for i in range(1, n + 1)]
    steps = []
    for i, step_id in enumerate(ids):
        deps = draw(st.lists(st.sampled_from(ids[:i]), unique=True)) if i else []
        steps.append(
            {
                "step_id": step_id,
                "depends_on": deps,
                "action": "writer",
                "instructions": "x",
                "expected_output": f"f{i}.md",
                "done_when": {"kind": "non_empty"},
            }
        )
    step_no = draw(st.integers(0, 20))
    files: dict[str, dict[str, Any]] = {}
    for s in steps:
        status = draw(st.sampled_from([None, "active", "done", "failed"]))
        if status:
            files[s["expected_output"]] = {
                "status": status,
                "written_at_step": draw(st.integers(0, step_no)),
                "bytes": 3,
                "step_id": s["step_id"],
            }
    if ids and draw(st.booleans()):
        files[f"work/{ids[0]}/critique.json"] = {"status": "active", "kind": "critique"}
    defects = st.sampled_from(["d1", "d2", "d3"])
    events = st.fixed_dictionaries(
        {
            "round": st.integers(0, step_no),
            "step_id": st.sampled_from(ids or ["S?"]),
            "action": st.sampled_from(["result", "error", "check", "write_file"]),
            "passed": st.booleans(),
            "defect": st.one_of(st.none(), defects),
            "error_class": st.sampled_from(
                ["transient", "unknown", "permission_denied", "policy_rejected"]
            ),
            "observation": st.text(max_size=20),
        }
    )
    return Situation(
        goal=draw(st.text(max_size=20)),
        plan={"version": 1, "steps": steps} if n else draw(st.sampled_from([None, EMPTY])),
        files=files,
        step=step_no,
        depth=draw(st.integers(0, 12)),
        cap=draw(st.integers(1, 10)),
        dispatched=draw(st.lists(st.sampled_from(ids + ["S99"]), unique=True))
        if dispatched and ids
        else [],
        previous_defects=draw(st.lists(defects, unique=True)),
        turn_events=draw(st.lists(events, max_size=6)),
        exhausted=draw(st.sampled_from([None, None, "token_budget", "time_budget", "step_budget"])),
        strict_end=draw(st.booleans()),
    )


_answers = st.builds(
    rules.Decision,
    decision=st.sampled_from(["continue", "replan", "end", "escalate"]),
    reason=st.text(max_size=10),
    by=st.just("model"),
    final_answer=st.one_of(st.none(), st.text(max_size=10)),
    question=st.one_of(st.none(), st.text(max_size=10)),
)


@PROPS
@given(s=situations())
def test_the_rules_never_end_and_force_a_stop_at_the_depth_cap_or_budget(s):
    decision = rules.decide_by_rule(s)
    if decision is None:
        assert s.depth < s.cap and s.exhausted is None
        return
    assert decision.decision != "end"  # only a validated model answer may end
    if decision.decision == "continue":
        assert s.ready and not decision.counts_depth  # progress is not reflection: depth unchanged
    if s.depth >= s.cap or s.exhausted:
        assert decision.decision in ("escalate", "fail") or not decision.counts_depth
    if decision.decision == "escalate":
        payload = rules.escalation_payload(decision, s)
        assert payload["question"] and payload["stop_reason"]
    entry = rules.log_entry(decision, s)
    assert entry["depth"] in (s.depth, s.depth + 1)


@PROPS
@given(s=situations(), answer=_answers, error=st.text(max_size=50))
def test_validated_decisions_never_end_without_done_work_or_continue_with_nothing_ready(
    s, answer, error
):
    for decision in (rules.validate_decision(answer, s), rules.failed_round(s, error)):
        if decision.decision == "end":
            assert s.done_files() and decision.final_answer
            assert not (s.strict_end and pending_steps(s.plan, s.files))
        if decision.decision == "continue":
            assert ready_steps(s.plan, s.files)
        if decision.decision == "escalate":
            assert decision.question
    lost = rules.failed_round(s, error)
    assert lost.decision in ("continue", "replan") and lost.forced


@PROPS
@given(s=situations(dispatched=False), answers=st.lists(_answers, min_size=1, max_size=5))
def test_a_reflection_loop_without_progress_stops_within_the_depth_cap(s, answers):
    """Nothing changes between reflections and the model never validly ends: the rules must
    stop the loop after at most ``cap`` model-consulted reflections."""
    s.exhausted = None
    consulted = 0
    for turn in range(s.cap + 2):
        decision = rules.decide_by_rule(s)
        if decision is None:
            consulted += 1
            decision = rules.validate_decision(answers[turn % len(answers)], s)
        if decision.decision in ("end", "escalate", "fail"):
            break
        s.depth = rules.log_entry(decision, s)["depth"]
        s.previous_defects = s.defects
    else:
        pytest.fail("the reflection loop did not stop")
    assert consulted <= s.cap


# ---------------------------------------------------------------------------- plans

_paths = st.sampled_from(
    ["a.md", "b.md", "c.md", "dir/d.py", "../up.md", "/abs.md", "", "work/S1/x.md", "a\x00.md"]
)
_ids = st.sampled_from(["S1", "S2", "S3", "S4", "", "S" * 50])
_specs = st.sampled_from(
    [
        None,
        {"kind": "non_empty"},
        {"kind": "contains", "all": ["x"]},
        {"kind": "nope"},
        {"kind": "regex", "pattern": "("},
        "a rubric",
        "",
        42,
    ]
)
_raw_step = st.fixed_dictionaries(
    {
        "step_id": _ids,
        "depends_on": st.lists(_ids, max_size=3),
        "action": st.sampled_from([*ACTIONS, "hacker", ""]),
        "instructions": st.sampled_from(["do it", ""]),
        "expected_output": _paths,
        "done_when": _specs,
    }
)
_raw_plan = st.one_of(
    st.fixed_dictionaries({"steps": st.lists(_raw_step, max_size=6)}),
    st.fixed_dictionaries({"steps": st.lists(st.one_of(_raw_step, st.integers()), max_size=3)}),
    st.sampled_from([None, "plan", [], {}, {"steps": "S1"}, {"steps": None}, 7]),
)


def _acyclic(steps) -> bool:
    indegree = {s.step_id: len(s.depends_on) for s in steps}
    users: dict[str, list[str]] = {s.step_id: [] for s in steps}
    for s in steps:
        for dep in s.depends_on:
            users[dep].append(s.step_id)
    queue = deque(i for i, d in indegree.items() if d == 0)
    seen = 0
    while queue:
        seen += 1
        for user in users[queue.popleft()]:
            indegree[user] -= 1
            if indegree[user] == 0:
                queue.append(user)
    return seen == len(steps)


@PROPS
@given(data=_raw_plan, max_steps=st.integers(1, 8))
def test_parse_plan_never_raises_and_every_accepted_plan_is_valid(data, max_steps):
    steps, errors = parse_plan(data, actions=ACTIONS, max_steps=max_steps)
    if steps is None:
        assert errors and all(isinstance(e, str) and e for e in errors)
        return
    assert errors == [] and 1 <= len(steps) <= max_steps
    ids = [s.step_id for s in steps]
    outputs = [s.expected_output for s in steps]
    assert len(set(ids)) == len(ids) and len(set(outputs)) == len(outputs)
    assert all(s.action in ACTIONS for s in steps)
    assert all(dep in ids and dep != s.step_id for s in steps for dep in s.depends_on)
    assert all(validate_path(o) == o and not o.startswith("work/") for o in outputs)
    assert _acyclic(steps)


def test_parse_plan_never_raises_on_a_long_dependency_chain():
    n = 1_000
    steps = [
        {
            "step_id": f"S{i}",
            "depends_on": [f"S{i + 1}"] if i < n else [],  # listed dependents first
            "action": "writer",
            "instructions": "x",
            "expected_output": f"out/{i}.md",
        }
        for i in range(1, n + 1)
    ]
    accepted, errors = parse_plan({"steps": steps}, actions=ACTIONS, max_steps=2 * n)
    assert accepted is not None and errors == []
    looped = [dict(s, depends_on=[f"S{(i % n) + 1}"]) for i, s in enumerate(steps, start=1)]
    rejected, errors = parse_plan({"steps": looped}, actions=ACTIONS, max_steps=2 * n)
    assert rejected is None and any("cycle" in e for e in errors)


# ---------------------------------------------------------------------------- whole graph

_graph_step = st.fixed_dictionaries(
    {
        "action": st.sampled_from(["writer"] * 4 + ["coder"] * 3 + ["hacker"]),
        "check": st.sampled_from(
            [{"kind": "non_empty"}, {"kind": "contains", "all": ["OK"]}, {"kind": "exists"}]
        ),
        "deps": st.lists(st.integers(0, 3), max_size=2),
    }
)
_reflection_answer = st.one_of(
    st.sampled_from(
        [
            {"decision": "end", "reason": "done", "final_answer": "See out/."},
            {"decision": "continue", "reason": "go on"},
            {"decision": "replan", "reason": "retry"},
        ]
    ),
    st.fixed_dictionaries(
        {
            "decision": st.sampled_from(["continue", "replan", "end", "escalate", "stop"]),
            "reason": st.text(max_size=15),
        },
        optional={
            "final_answer": st.one_of(st.none(), st.text(max_size=10)),
            "question": st.one_of(st.none(), st.text(max_size=10)),
        },
    ),
    st.sampled_from(["{not json", "", "end", "decide end", "```json\n{}\n```", "[1, 2]"]),
    st.text(max_size=20),
)
_draft = st.sampled_from(["OK\n", "OK\n", "OK OK", "draft\n", "", "   "])


def _plan(spec: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "step_id": f"S{i}",
            "depends_on": sorted({f"S{d}" for d in s["deps"] if d < i}),
            "action": s["action"],
            "instructions": f"Write part {i}.",
            "expected_output": f"out/{i}.md",
            "done_when": s["check"],
        }
        for i, s in enumerate(spec)
    ]


class Cycle:
    """A responder cycling through answers: a stateless script that never runs out."""

    def __init__(self, items: list[Any]) -> None:
        self.items, self.n = items, 0

    def __call__(self, messages: list[BaseMessage]) -> Any:
        self.n += 1
        return self.items[(self.n - 1) % len(self.items)]


def _subagent(drafts: list[str]):
    attempts: dict[str, int] = {}

    def respond(messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "written"
        step_id, path = metadata["step_id"], metadata["expected_output"]
        n = attempts[step_id] = attempts.get(step_id, 0) + 1
        return tool_call("write_file", path=path, content=drafts[n % len(drafts)])

    return respond


@GRAPH_PROPS
@given(
    plans=st.lists(
        st.one_of(
            st.lists(_graph_step, min_size=1, max_size=4),
            st.lists(_graph_step, min_size=1, max_size=4),
            st.lists(_graph_step, min_size=1, max_size=4),
            st.sampled_from(["not a plan", '{"steps": []}']),
        ),
        min_size=1,
        max_size=3,
    ),
    answers=st.lists(_reflection_answer, min_size=1, max_size=6),
    drafts=st.lists(_draft, min_size=1, max_size=4),
    workload=st.sampled_from(sorted(DEPTH_CAP_BY_WORKLOAD)),
    max_revisions=st.integers(0, 1),
    max_steps=st.integers(2, 12),
)
def test_the_graph_always_stops_in_a_known_state_and_success_means_done(
    plans, answers, drafts, workload, max_revisions, max_steps
):
    planner_answers = [{"steps": _plan(p)} if isinstance(p, list) else p for p in plans]
    reflection = ScriptedChatModel(responder=Cycle(answers))
    roles = {
        "planner": ScriptedChatModel(responder=Cycle(planner_answers)),
        "reflection": reflection,
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=_subagent(drafts)),
    }
    graph = build_graph(models=roles, checkpointer=InMemorySaver(), retry_policy=None)
    context = Context(
        model="scripted:happy",
        workload=workload,
        max_revisions=max_revisions,
        max_steps=max_steps,
    )

    result = run(graph, "a small random job", context=context, thread_id="t")

    event(f"{result['status']}/{result['stop_reason']}")
    if result["stop_reason"] == "invalid_plan":
        event(result["escalation"]["reason"][:70])
    assert result["status"] in TERMINAL, result
    assert result["stop_reason"] in TERMINAL[result["status"]], result
    if result["status"] == "success":
        assert result["artifacts"] and result["converged"]
        assert all(a["status"] == "done" for a in result["artifacts"].values())
    # two calls at most per model-consulted reflection (one retry), at most `cap` of them
    assert len(reflection.calls) <= 2 * context.depth_cap()
    json.dumps(graph.get_state({"configurable": {"thread_id": "t"}}).values["decisions"])
