"""The revise loop with simulated critics (seed 002, section 8): each stops at the right round,
for the right reason, with the best draft."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_openai.chat_models.base import OpenAIConnectionError
from langgraph.errors import GraphInterrupt

from agent.checks.critique import Critique, Issue
from agent.controller.revise import Feedback, LoopConfig, LoopResult, revise_loop

FAILED = {"kind": "python", "passed": False, "score": 0.0, "evidence": "AssertionError"}
MALFORMED = "Looks fine to me!"  # not JSON: a malformed critique
STOP_REASONS = {
    "pass",
    "stalled",
    "oscillating",
    "budget",
    "timeout",
    "critic_error",
    "generator_error",
}


def blocked(score: float, *, location: str | None = "line 1", id: str = "bug") -> Critique:
    """A critique with one grounded blocking issue."""
    issue = Issue(id=id, severity="blocking", location=location, evidence="AssertionError")
    return Critique(issues=[issue], score=score)


def approved(score: float = 1.0) -> Critique:
    return Critique(issues=[], score=score)


class Sim:
    """A scripted generator and critic: the n-th draft is `drafts[n]` (default "draft n"), the
    n-th critique is `critiques[n]`; running past either script fails the test."""

    def __init__(
        self,
        critiques: list[Any],
        drafts: list[str] | None = None,
        *,
        generate_tokens: int = 0,
        critique_tokens: int = 0,
        on_generate: Any = None,
    ) -> None:
        self.critiques = critiques
        self.drafts = drafts
        self.generate_tokens = generate_tokens
        self.critique_tokens = critique_tokens
        self.on_generate = on_generate
        self.feedback: list[Feedback | None] = []
        self.critiqued: list[str] = []

    def generate(self, task: str, feedback: Feedback | None) -> tuple[str, int]:
        n = len(self.feedback)
        self.feedback.append(feedback)
        if self.on_generate:
            self.on_generate()
        return (self.drafts[n] if self.drafts else f"draft {n}"), self.generate_tokens

    def gather_evidence(self, draft: str) -> dict[str, Any]:
        return FAILED

    def critique(self, task: str, draft: str, evidence: dict[str, Any]) -> tuple[Any, int]:
        self.critiqued.append(draft)
        return self.critiques[len(self.critiqued) - 1], self.critique_tokens

    def run(self, clock: Any = None, **config: Any) -> LoopResult:
        extra = {"clock": clock} if clock else {}
        return revise_loop(
            "task",
            self.generate,
            self.gather_evidence,
            self.critique,
            LoopConfig(**config),
            **extra,
        )


# -- the four simulated critics of seed 002 -----------------------------------------------


def test_increasing_critic_stops_with_pass_on_the_first_draft_without_blocking_issue() -> None:
    sim = Sim([blocked(0.3), blocked(0.6), approved(0.9)])
    result = sim.run()
    assert (result.stop_reason, result.rounds, result.converged) == ("pass", 2, True)
    assert (result.best, result.best_score, result.issues) == ("draft 2", 0.9, [])
    assert len(result.history) == 3


def test_increasing_critic_that_never_approves_stops_on_the_round_budget() -> None:
    sim = Sim([blocked(0.2), blocked(0.4), blocked(0.6), blocked(0.8)])
    result = sim.run(max_revisions=3)
    assert (result.stop_reason, result.rounds, result.converged) == ("budget", 3, False)
    assert (result.best, result.best_score) == ("draft 3", 0.8)
    assert [i["id"] for i in result.issues] == ["bug"]


def test_flat_critic_stalls_after_two_consecutive_flat_rounds() -> None:
    sim = Sim([blocked(0.5), blocked(0.52), blocked(0.5)])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds) == ("stalled", 2)
    assert (result.best, result.best_score) == ("draft 1", 0.52)


def test_one_flat_round_after_a_jump_does_not_stall() -> None:
    # seed 002's pitfall: a single flat step after a jump must not end the loop
    sim = Sim([blocked(0.2), blocked(0.6), blocked(0.61), blocked(0.9), approved(0.95)])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds, result.best) == ("pass", 4, "draft 4")


def test_flat_rounds_must_be_consecutive_to_stall() -> None:
    sim = Sim([blocked(0.2), blocked(0.2), blocked(0.5), blocked(0.5), blocked(0.5)])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds) == ("stalled", 4)


def test_oscillating_drafts_stop_when_a_revision_asked_again_repeats_an_earlier_draft() -> None:
    sim = Sim([blocked(0.3), blocked(0.5)], drafts=["A", "B", "A", "B"])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds) == ("oscillating", 2)
    assert (result.best, result.best_score) == ("B", 0.5)
    assert sim.critiqued == ["A", "B"]  # the repeats are not critiqued again
    assert len(result.history) == result.rounds
    assert [bool(f and f.get("repeated")) for f in sim.feedback] == [False, False, False, True]


def test_a_repeated_revision_is_asked_once_more_told_so() -> None:
    # greedy small models send a failing file back unchanged; asked again, it may move
    sim = Sim([blocked(0.3), approved()], drafts=["A", "A", "C"])
    result = sim.run(max_revisions=2)
    assert (result.stop_reason, result.rounds, result.best) == ("pass", 1, "C")
    assert sim.critiqued == ["A", "C"]
    assert sim.feedback[2] is not None and sim.feedback[2]["repeated"] is True
    assert (
        sim.feedback[2]["draft"] == "A" and sim.feedback[2]["issues"] == sim.feedback[1]["issues"]
    )


def test_two_consecutive_malformed_critiques_stop_with_critic_error() -> None:
    sim = Sim([blocked(0.4), MALFORMED, None])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds, result.converged) == ("critic_error", 2, False)
    assert (result.best, result.best_score) == ("draft 0", 0.4)
    assert [h["malformed"] for h in result.history] == [False, True, True]


CRASH = RuntimeError("critic exploded")  # in a script: this critique raises instead


class CrashingSim(Sim):
    """A Sim whose critique raises where its script says CRASH (seed 002: "crashing")."""

    def critique(self, task: str, draft: str, evidence: dict[str, Any]) -> tuple[Any, int]:
        answer = super().critique(task, draft, evidence)
        if answer[0] is CRASH:
            raise CRASH
        return answer


def test_a_crashing_critic_stops_with_critic_error_and_returns_the_best_draft_seen() -> None:
    sim = CrashingSim([blocked(0.6), blocked(0.7), CRASH])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds, result.converged) == ("critic_error", 2, False)
    assert (result.best, result.best_score) == ("draft 1", 0.7)
    assert result.error is CRASH
    crashed = result.history[-1]
    assert (crashed["score"], crashed["malformed"]) == (0.0, True)
    assert crashed["error"] == "RuntimeError: critic exploded"
    assert sim.critiqued == ["draft 0", "draft 1", "draft 2"]


def test_a_critic_crashing_on_the_first_draft_returns_it_scored_zero_never_approved() -> None:
    result = CrashingSim([CRASH]).run()
    assert (result.stop_reason, result.best, result.best_score) == ("critic_error", "draft 0", 0.0)
    assert (result.converged, result.rounds, result.issues) == (False, 0, [])
    assert result.evidence == FAILED  # the check ran before the critic crashed


def test_evidence_that_raises_counts_as_a_crashed_critique() -> None:
    sim = Sim([blocked(0.5)])
    calls = iter([FAILED])

    def evidence(draft: str) -> dict[str, Any]:
        report = next(calls, None)
        if report is None:
            raise ValueError("the sandbox is gone")
        return report

    result = revise_loop("task", sim.generate, evidence, sim.critique, LoopConfig(max_revisions=5))
    assert (result.stop_reason, result.best, result.best_score) == ("critic_error", "draft 0", 0.5)
    assert result.history[-1]["error"] == "ValueError: the sandbox is gone"
    assert sim.critiqued == ["draft 0"]  # the critic never saw the draft without evidence


def test_a_generator_crashing_on_a_revision_stops_with_generator_error_and_keeps_the_best() -> None:
    def explode() -> None:
        if len(sim.feedback) == 3:
            raise ValueError("the generator's tool crashed")

    sim = Sim([blocked(0.4), blocked(0.8)], on_generate=explode)
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.rounds, result.converged) == ("generator_error", 1, False)
    assert (result.best, result.best_score) == ("draft 1", 0.8)
    assert isinstance(result.error, ValueError)
    assert len(result.history) == 2


def test_a_generator_crashing_on_the_first_draft_propagates_since_there_is_no_draft() -> None:
    def explode() -> None:
        raise ValueError("no model")

    with pytest.raises(ValueError, match="no model"):
        Sim([], on_generate=explode).run()


def _raiser(exc: BaseException) -> Any:
    def fail(*args: Any) -> Any:
        raise exc

    return fail


@pytest.mark.parametrize("where", ["critique", "gather_evidence", "revision"])
@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError("critic endpoint timed out"),
        OpenAIConnectionError(
            message="Connection error.", request=httpx.Request("POST", "http://x")
        ),
        GraphInterrupt(()),
    ],
    ids=["timeout", "connection", "interrupt"],
)
def test_transient_errors_and_interrupts_propagate_so_the_graph_handles_them(
    where: str, exc: BaseException
) -> None:
    sim = Sim([blocked(0.3), blocked(0.5)])
    callables: dict[str, Any] = {
        "generate": sim.generate,
        "gather_evidence": sim.gather_evidence,
        "critique": sim.critique,
    }
    if where == "revision":
        sim.on_generate = lambda: len(sim.feedback) > 1 and _raiser(exc)()
    else:
        callables[where] = _raiser(exc)
    with pytest.raises(type(exc)):
        revise_loop("task", **callables)


@given(
    scores=st.lists(st.floats(0, 1), min_size=0, max_size=5),
    max_revisions=st.integers(0, 6),
)
def test_a_critic_that_crashes_at_any_round_returns_the_best_draft_seen(
    scores: list[float], max_revisions: int
) -> None:
    sim = CrashingSim([blocked(score) for score in scores] + [CRASH])
    result = sim.run(
        max_revisions=max_revisions, min_gain=-1.0
    )  # never stalls: only the crash ends it
    seen = [entry_score(entry) for entry in sim.critiques[: len(sim.critiqued)]]
    assert result.converged is False
    assert result.best_score == max(seen)
    assert result.best == sim.critiqued[seen.index(max(seen))]
    if len(sim.critiqued) == len(scores) + 1:  # the crash was reached
        assert (result.stop_reason, result.error) == ("critic_error", CRASH)
    else:
        assert result.stop_reason == "budget" and result.error is None


# -- malformed critiques ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "malformed", [MALFORMED, None, '{"approved": true, "issues": []}', {"issues": []}]
)
def test_malformed_critique_never_approves_and_scores_zero(malformed: Any) -> None:
    sim = Sim([malformed, blocked(0.5), approved(0.8)])
    result = sim.run()
    assert (result.stop_reason, result.best, result.rounds) == ("pass", "draft 2", 2)
    assert result.history[0]["score"] == 0.0
    assert result.history[0]["malformed"] is True


def test_a_single_malformed_critique_between_good_ones_does_not_stop_the_loop() -> None:
    sim = Sim([blocked(0.3), MALFORMED, blocked(0.6), approved(0.9)])
    assert sim.run(max_revisions=10).stop_reason == "pass"


def test_malformed_critique_leads_to_a_rewrite_with_no_issues() -> None:
    sim = Sim([MALFORMED, approved()])
    sim.run()
    assert sim.feedback[1] == {"mode": "rewrite", "draft": "draft 0", "issues": []}


def test_when_every_critique_is_malformed_the_first_draft_is_returned_with_score_zero() -> None:
    result = Sim([None, None]).run()
    assert (result.stop_reason, result.best, result.best_score, result.issues) == (
        "critic_error",
        "draft 0",
        0.0,
        [],
    )


def test_raw_json_and_dict_critiques_are_parsed() -> None:
    sim = Sim([blocked(0.3).model_dump_json(), approved(0.9).model_dump()])
    assert sim.run().stop_reason == "pass"


# -- budgets ----------------------------------------------------------------------------------


def test_token_budget_stops_the_loop_before_the_next_revision() -> None:
    sim = Sim([blocked(0.1), blocked(0.5), blocked(0.9)], generate_tokens=1000, critique_tokens=500)
    result = sim.run(token_budget=3000, max_revisions=10)
    assert (result.stop_reason, result.rounds, result.tokens) == ("budget", 1, 3000)
    assert result.best == "draft 1"


def test_max_revisions_zero_critiques_only_the_first_draft() -> None:
    result = Sim([blocked(0.4)]).run(max_revisions=0)
    assert (result.stop_reason, result.rounds, result.best) == ("budget", 0, "draft 0")


def test_timeout_uses_the_injected_clock() -> None:
    now = [0.0]
    sim = Sim(
        [blocked(0.1), blocked(0.5), blocked(0.9)],
        on_generate=lambda: now.__setitem__(0, now[0] + 70.0),  # each draft takes 70 s
    )
    result = sim.run(clock=lambda: now[0], timeout_s=120.0, max_revisions=10)
    assert (result.stop_reason, result.rounds, result.best) == ("timeout", 1, "draft 1")


def test_a_passing_draft_passes_even_when_the_budget_is_spent() -> None:
    result = Sim([approved(0.9)], generate_tokens=10_000).run(token_budget=1)
    assert (result.stop_reason, result.converged) == ("pass", True)


@pytest.mark.parametrize(
    "bad", [{"max_revisions": -1}, {"feedback_cap": 0}, {"token_budget": 0}, {"timeout_s": 0}]
)
def test_loop_config_rejects_impossible_bounds(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="need"):
        LoopConfig(**bad)


def _fresh(sim: Sim) -> list[bool]:
    return [bool(f and f.get("fresh")) for f in sim.feedback]


def test_a_revision_handing_back_its_draft_is_followed_by_fresh_drafts() -> None:
    # the 1.5B shown its failing HumanEval draft sent it back: the task is asked anew
    sim = Sim([blocked(0.3), blocked(0.3), approved()], drafts=["A", "A", "B", "C"])
    result = sim.run(max_revisions=2, fresh_drafts=3)
    assert (result.stop_reason, result.best, result.rounds, result.fresh) == ("pass", "C", 1, 2)
    assert _fresh(sim) == [False, False, True, True]
    assert [h.get("fresh", False) for h in result.history] == [False, True, True]
    assert not any(f and f.get("repeated") for f in sim.feedback)  # fresh replaces the re-ask


def test_a_revision_gaining_too_little_makes_the_loop_draw_fresh_drafts() -> None:
    sim = Sim([blocked(0.5), blocked(0.52), blocked(0.5), blocked(0.5)])
    result = sim.run(max_revisions=10, fresh_drafts=2)
    assert (result.stop_reason, result.rounds, result.fresh) == ("stalled", 1, 2)
    assert _fresh(sim) == [False, False, True, True]
    assert result.best == "draft 1"  # the best draft is kept, fresh or not


def test_a_revision_that_helps_is_revised_again_not_replaced() -> None:
    sim = Sim([blocked(0.2), blocked(0.5), approved()])
    result = sim.run(max_revisions=2, fresh_drafts=3)
    assert (result.stop_reason, result.rounds, result.fresh) == ("pass", 2, 0)


def test_a_fresh_draft_equal_to_a_seen_one_is_drawn_again_within_the_allowance() -> None:
    sim = Sim([blocked(0.3), approved()], drafts=["A", "A", "A", "B"])
    result = sim.run(max_revisions=2, fresh_drafts=2)
    assert (result.stop_reason, result.best, result.fresh) == ("pass", "B", 2)
    assert sim.critiqued == ["A", "B"]


def test_fresh_drafts_that_all_repeat_stop_oscillating() -> None:
    sim = Sim([blocked(0.3)], drafts=["A", "A", "A", "A"])
    result = sim.run(max_revisions=2, fresh_drafts=2)
    assert (result.stop_reason, result.rounds, result.fresh) == ("oscillating", 1, 2)
    assert sim.critiqued == ["A"]


def test_fresh_drafts_stop_at_the_token_budget() -> None:
    sim = Sim([blocked(0.3), blocked(0.3), blocked(0.3)], generate_tokens=100)
    result = sim.run(max_revisions=5, fresh_drafts=5, token_budget=250)
    assert (result.stop_reason, result.fresh) == ("budget", 1)


def test_no_fresh_drafts_keeps_revising_until_two_short_gains() -> None:
    sim = Sim([blocked(0.5), blocked(0.52), blocked(0.5)])
    result = sim.run(max_revisions=10, fresh_drafts=0)
    assert (result.stop_reason, result.rounds, result.fresh) == ("stalled", 2, 0)


def test_fresh_first_draws_the_fresh_drafts_before_any_revision() -> None:
    sim = Sim([blocked(0.3), blocked(0.3), approved()])
    result = sim.run(max_revisions=2, fresh_drafts=3, fresh_first=True)
    assert (result.stop_reason, result.rounds, result.fresh) == ("pass", 0, 2)
    assert _fresh(sim) == [False, True, True]


def test_fresh_first_stops_stalled_once_its_fresh_drafts_are_spent() -> None:
    sim = Sim([blocked(0.3), blocked(0.4), blocked(0.2)])
    result = sim.run(max_revisions=2, fresh_drafts=2, fresh_first=True)
    assert (result.stop_reason, result.rounds, result.fresh, result.best) == (
        "stalled",
        0,
        2,
        "draft 1",
    )


def test_fresh_first_without_fresh_drafts_revises_as_before() -> None:
    sim = Sim([blocked(0.2), blocked(0.5), approved()])
    result = sim.run(max_revisions=2, fresh_drafts=0, fresh_first=True)
    assert (result.stop_reason, result.rounds, result.fresh) == ("pass", 2, 0)


def test_the_result_counts_revisions_that_helped_and_revisions_that_did_not() -> None:
    helped = Sim([blocked(0.2), blocked(0.5), approved()]).run(max_revisions=2, fresh_drafts=3)
    assert (helped.revisions_helped, helped.revisions_stuck) == (2, 0)
    handed_back = Sim([blocked(0.3), blocked(0.3), approved()], drafts=["A", "A", "B", "C"])
    result = handed_back.run(max_revisions=2, fresh_drafts=3)
    assert (result.revisions_helped, result.revisions_stuck) == (0, 1)
    flat = Sim([blocked(0.5), blocked(0.52), blocked(0.5)]).run(max_revisions=10, fresh_drafts=0)
    assert (flat.revisions_helped, flat.revisions_stuck) == (0, 2)


# -- the best draft ---------------------------------------------------------------------------


def test_regression_keeps_the_earlier_better_draft_and_reports_its_issues() -> None:
    worse = Critique(
        issues=[
            Issue(id="new-bug", severity="blocking", evidence="KeyError"),
            Issue(id="typo", severity="minor", evidence="'teh'"),
        ],
        score=0.4,
    )
    sim = Sim([blocked(0.7, id="old-bug"), worse, blocked(0.3)])
    result = sim.run(max_revisions=10)
    assert (result.stop_reason, result.best, result.best_score) == ("stalled", "draft 0", 0.7)
    assert [i["id"] for i in result.issues] == ["old-bug"]


def test_a_tie_keeps_the_earlier_draft() -> None:
    result = Sim([blocked(0.5), blocked(0.5), blocked(0.5)]).run(max_revisions=10)
    assert (result.stop_reason, result.best) == ("stalled", "draft 0")


def test_a_passing_draft_outranks_a_higher_scored_blocked_one() -> None:
    result = Sim([blocked(0.8), approved(0.7)]).run()
    assert (result.stop_reason, result.best, result.best_score) == ("pass", "draft 1", 0.7)


def test_issues_without_evidence_do_not_block() -> None:
    vague = Critique(issues=[Issue(id="vague", severity="blocking", evidence="")], score=0.6)
    result = Sim([vague]).run()
    assert (result.stop_reason, result.rounds, result.issues) == ("pass", 0, [])


def test_history_records_each_critique_and_the_best_drafts_evidence_is_returned() -> None:
    result = Sim([blocked(0.3, id="b1"), approved(0.9)]).run()
    assert [(h["round"], h["score"], h["blocking"]) for h in result.history] == [
        (0, 0.3, ["b1"]),
        (1, 0.9, []),
    ]
    assert all(len(h["draft_hash"]) == 64 and h["evidence_passed"] is False for h in result.history)
    assert result.evidence == FAILED


# -- patch vs rewrite and the feedback shape -------------------------------------------------


def test_patch_when_every_blocking_issue_has_a_location_rewrite_otherwise() -> None:
    unlocated = Critique(
        issues=[
            Issue(id="a", severity="blocking", location="line 3", evidence="e"),
            Issue(id="b", severity="blocking", location=None, evidence="e"),
        ],
        score=0.5,
    )
    located_with_vague_minor = Critique(
        issues=[
            Issue(id="c", severity="blocking", location="sol.py:4", evidence="e"),
            Issue(id="d", severity="minor", location=None, evidence="e"),
        ],
        score=0.8,
    )
    sim = Sim([blocked(0.2, location="line 3"), unlocated, located_with_vague_minor, approved()])
    sim.run(max_revisions=10)
    assert sim.feedback[0] is None  # the first draft gets no feedback
    assert [fb["mode"] for fb in sim.feedback[1:]] == ["patch", "rewrite", "patch"]
    assert [fb["draft"] for fb in sim.feedback[1:]] == ["draft 0", "draft 1", "draft 2"]


def test_feedback_lists_grounded_issues_blocking_first_and_capped() -> None:
    issues = [Issue(id=f"minor{i}", severity="minor", evidence="e") for i in range(4)]
    issues += [
        Issue(id="major", severity="major", evidence="e"),
        Issue(id="ungrounded", severity="blocking", evidence=""),
        Issue(id="blocker", severity="blocking", location="line 2", evidence="e"),
    ]
    sim = Sim([Critique(issues=issues, score=0.3), approved()])
    sim.run(feedback_cap=3)
    assert [i["id"] for i in sim.feedback[1]["issues"]] == ["blocker", "major", "minor0"]


# -- the loop always terminates with the best draft ------------------------------------------


critique_entry = st.one_of(
    st.floats(0, 1).map(blocked),
    st.floats(0, 1).map(approved),
    st.sampled_from([None, MALFORMED, '{"issues": []}']),
)


def entry_score(entry: Any) -> float:
    return entry.score if isinstance(entry, Critique) else 0.0


@given(
    max_revisions=st.integers(0, 5),
    entries=st.lists(critique_entry, min_size=6, max_size=6),
    draft_ids=st.lists(st.integers(0, 5), min_size=6, max_size=6),
    token_budget=st.integers(1, 200),
    cost=st.integers(0, 30),
)
def test_loop_terminates_with_the_best_draft_seen(
    max_revisions: int, entries: list[Any], draft_ids: list[int], token_budget: int, cost: int
) -> None:
    sim = Sim(
        entries,
        drafts=[f"draft {i}" for i in draft_ids],
        generate_tokens=cost,
        critique_tokens=cost,
    )
    result = sim.run(max_revisions=max_revisions, token_budget=token_budget)

    seen = sim.critiqued
    scores = [entry_score(entry) for entry in entries[: len(seen)]]
    assert 1 <= len(seen) <= max_revisions + 1
    assert 0 <= result.rounds <= max_revisions
    assert len(result.history) == len(seen)
    assert result.stop_reason in STOP_REASONS
    assert result.converged == (result.stop_reason == "pass")
    if result.stop_reason == "pass":
        assert entries[len(seen) - 1] == approved(scores[-1])
        assert (result.best, result.best_score) == (seen[-1], scores[-1])
    else:
        assert result.best_score == max(scores)
        assert result.best == seen[scores.index(max(scores))]  # the earliest on a tie
    if result.stop_reason == "oscillating":
        assert sim.drafts[result.rounds] in seen


def test_a_passing_check_outranks_a_higher_model_critic_score():
    """A right draft the model critic dislikes beats a wrong one it likes (merged critiques)."""
    drafts = iter(["right", "wrong"])
    checks = {"right": 1.0, "wrong": 0.5}
    critic = {"right": 0.3, "wrong": 0.9}

    def critique(task, draft, evidence):
        issue = {"id": "x", "severity": "blocking", "location": None, "evidence": "quoted"}
        return {"issues": [issue], "score": min(evidence["score"], critic[draft])}, 0

    result = revise_loop(
        "task",
        lambda task, feedback: (next(drafts), 0),
        lambda d: {"kind": "pytest", "passed": checks[d] == 1.0, "score": checks[d], "evidence": d},
        critique,
        LoopConfig(max_revisions=1),
    )
    assert result.best == "right"


def test_a_negative_fresh_drafts_is_refused() -> None:
    with pytest.raises(ValueError, match="fresh_drafts"):
        LoopConfig(fresh_drafts=-1)
