"""The revise loop inside a subagent: ordinary code, not the model, decides when to stop.

Draft, gather evidence, critique, then stop or revise (the stop rules as settled in
docs/architecture.md). The loop keeps the best draft seen and decides only from the critique,
and a failing callable (a "crashing" critic) does not lose the drafts already made.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Literal, NotRequired, TypedDict

from langgraph.errors import GraphBubbleUp

from agent.checks.critique import Critique, Issue, blocking, feedback, ground, parse_critique
from agent.coroutines import maybe_await, synced
from agent.errors import describe, is_transient
from agent.limits import MAX_REVISIONS
from agent.vocabulary import LoopStop

CheckReport = dict[str, Any]


class Feedback(TypedDict):
    """What `generate` receives for a revision (it receives None for the first draft)."""

    mode: Literal["patch", "rewrite"]
    """`patch` when every blocking issue has a location: change only those places.
    `rewrite` otherwise: the critic found a structural problem."""
    draft: str
    """The draft the issues are about, i.e. the text to patch: the latest draft, not the best."""
    issues: list[dict[str, Any]]
    """Grounded issues of `draft` as `Issue` dicts, blocking first, at most `feedback_cap`;
    empty after a malformed critique (then `mode` is `rewrite`)."""
    repeated: NotRequired[bool]
    """True when the answer to this feedback was a draft already seen: it is asked once more,
    told so, before the loop stops `oscillating` (a greedy small model sent a failing
    ``stats.py`` back unchanged; asked again, sampled, it can move)."""
    fresh: NotRequired[bool]
    """True for a fresh draft (``LoopConfig.fresh_drafts``): the task asked anew, sampled, as
    for the first draft; `draft` and `issues` are what the loop last saw, not to be shown."""


# Each callable may be sync or a coroutine function: the loop awaits what it returns.
Generated = tuple[str, int]
Critiqued = tuple[Critique | Mapping[str, Any] | str | None, int]
Generate = Callable[[str, Feedback | None], Generated | Awaitable[Generated]]
GatherEvidence = Callable[[str], CheckReport | Awaitable[CheckReport]]
CritiqueFn = Callable[[str, str, CheckReport], Critiqued | Awaitable[Critiqued]]


@dataclass(frozen=True)
class LoopConfig:
    """Bounds of one revise loop.

    There is no score threshold: the loop passes when no blocking issue is left
    (docs/architecture.md): a score is a heuristic ("0.81 on a broken SQL query is still
    broken").
    """

    max_revisions: int = MAX_REVISIONS
    """Revisions allowed after the first draft, so at most `max_revisions + fresh_drafts + 1`
    critiques."""
    min_gain: float = 0.05
    """Score gain a revision must make; falling short on two consecutive rounds is `stalled`."""
    token_budget: int = 40_000
    """Generator and critic tokens after which no new revision starts."""
    timeout_s: float = 120.0
    """Wall-clock seconds after which no new revision starts."""
    feedback_cap: int = 5
    """Most issues handed to the generator in one revision."""
    fresh_drafts: int = 0
    """Fresh drafts a stuck loop may draw besides its revisions: once a revision hands back
    a draft already seen, or gains less than `min_gain`, the task is asked anew, sampled,
    without the failed draft (shown its draft, Qwen2.5-Coder-1.5B sent it back on every
    HumanEval draft it got wrong; asked anew, 4 of 6 were right within five tries, and the
    check tells which). The loop then stops `stalled` when they are used up (`oscillating`
    when the last one repeats a draft already seen). 0: revisions only, two short gains in
    a row stop it `stalled`."""

    fresh_first: bool = False
    """Draw the fresh drafts before any revision: the loop starts stuck. For a model that
    has shown it does not revise (:mod:`agent.controller.habits`): on HumanEval's first 40
    Qwen2.5-Coder-1.5B's revisions fixed no draft in three runs, and each cost ~900 tokens
    before the fresh drafts that did."""

    def __post_init__(self) -> None:
        if self.max_revisions < 0 or self.feedback_cap < 1 or self.fresh_drafts < 0:
            msg = f"need max_revisions, fresh_drafts >= 0 and feedback_cap >= 1, got {self}"
            raise ValueError(msg)
        if self.token_budget <= 0 or self.timeout_s <= 0:
            msg = f"need a positive token_budget and timeout_s, got {self}"
            raise ValueError(msg)


@dataclass
class LoopResult:
    """The best draft seen and why the loop stopped.

    `best` is the draft that passed, or else the highest-scored draft, the earliest on a tie, so
    it never scored worse than another draft (a malformed critique scores 0).
    `rounds` counts the revisions `generate` produced after the first draft, so `0 <= rounds <=
    max_revisions`. Critiques evaluated are `len(history)`: `rounds + 1`, except after
    `oscillating`, where the repeated revision is not critiqued again and it is `rounds`.
    """

    best: str
    best_score: float
    stop_reason: LoopStop
    rounds: int
    converged: bool = field(init=False)
    """True only for `pass`; `budget` or `stalled` with open blocking issues is not success."""
    issues: list[dict[str, Any]]
    """Every open grounded issue of `best`, blocking first; empty if its critique was malformed."""
    tokens: int
    evidence: CheckReport | None = None
    """The CheckReport of `best`, so the caller need not run its check again."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Per critique: round, score, blocking (issue ids), draft_hash, evidence_passed, malformed
    (and `error` for the round whose evidence or critique raised)."""
    error: Exception | None = None
    """The exception that stopped the loop (`critic_error` from a raising critic or
    evidence, `generator_error`), so the caller can classify and record it; else None."""
    fresh: int = 0
    """Fresh drafts drawn (``LoopConfig.fresh_drafts``); they are not counted in `rounds`."""
    revisions_helped: int = 0
    """Revisions that passed or gained at least `min_gain` on the draft they revised."""
    revisions_stuck: int = 0
    """Revisions that handed back a draft already seen or gained less than `min_gain`."""

    def __post_init__(self) -> None:
        self.converged = self.stop_reason == LoopStop.PASS


@dataclass(frozen=True)
class _Round:
    """One evaluated draft."""

    draft: str
    evidence: CheckReport
    critique: Critique | None  # grounded; None when malformed or when the critic raised
    error: Exception | None = None  # what gather_evidence or critique raised, if anything
    fresh: bool = False  # a fresh draft (the task asked anew), not a revision

    @property
    def score(self) -> float:
        return self.critique.score if self.critique else 0.0  # malformed counts as 0

    @property
    def blockers(self) -> list[Issue]:
        return blocking(self.critique) if self.critique else []

    @property
    def passed(self) -> bool:
        return self.critique is not None and not self.blockers  # malformed never approves

    @property
    def draft_hash(self) -> str:
        return _sha(self.draft)


async def arevise_loop(
    task: str,
    generate: Generate,
    gather_evidence: GatherEvidence,
    critique: CritiqueFn,
    config: LoopConfig = LoopConfig(),  # noqa: B008 - frozen, so sharing the default is safe
    *,
    clock: Callable[[], float] = time.monotonic,
) -> LoopResult:
    """Draft, check, critique and revise until a stop rule fires; return the best draft seen.

    The latest draft, not the best, is the one revised. Budget and time are checked before
    each revision, so a revision already begun is still critiqued and may overshoot
    `token_budget` by one generate and one critique.

    When a callable raises:
    - a transient error (`agent.errors.is_transient`: timeouts, 429, 5xx, connection errors)
      and LangGraph's control flow (`GraphBubbleUp`, e.g. an `interrupt()`) propagate, from
      any callable in any round, so the graph's `RetryPolicy` retries the whole step;
    - anything raised by the first `generate` propagates: there is no draft to return;
    - anything else raised by `gather_evidence` or `critique` stops the loop with
      `critic_error`: the draft being critiqued counts as a malformed critique (score 0,
      never approval) and the best draft seen is returned, with the exception in `error`;
    - anything else raised by a revision's `generate` stops the loop with `generator_error`
      and returns the best draft seen, with the exception in `error`.
    """
    started = clock()
    draft, tokens = await maybe_await(generate(task, None))
    rounds: list[_Round] = []
    state = _Progress(stuck=config.fresh_first)

    while True:
        current, cost = await _evaluate(task, draft, gather_evidence, critique)
        current = replace(current, fresh=state.drew_fresh)
        tokens += cost
        rounds.append(current)
        if current.error is not None:
            return _result(rounds, LoopStop.CRITIC_ERROR, state, tokens, current.error)
        state.judge(rounds, config)
        reason = _stop_reason(
            rounds, tokens=tokens, elapsed=clock() - started, config=config, state=state
        )
        if reason is not None:
            return _result(rounds, reason, state, tokens)
        asked = _feedback(current, config.feedback_cap)
        try:
            draft, cost = await _next_draft(task, asked, generate, rounds, config, state)
            tokens += cost
        except Exception as exc:
            _propagate_if_retryable(exc)
            return _result(rounds, LoopStop.GENERATOR_ERROR, state, tokens, exc)
        if _seen(draft, rounds):
            return _result(rounds, LoopStop.OSCILLATING, state, tokens)


@dataclass
class _Progress:
    """Where one loop stands: revisions asked, fresh drafts drawn, and whether revising has
    stopped helping (``stuck``: a revision handed back a draft already seen, or gained less
    than ``min_gain`` on the draft it revised)."""

    revisions: int = 0
    fresh: int = 0
    stuck: bool = False
    drew_fresh: bool = False
    """Whether the draft being evaluated is a fresh one."""
    helped: int = 0
    """Revisions that passed or gained at least ``min_gain``."""
    flat: int = 0
    """Revisions that repeated a draft or gained less than ``min_gain``."""

    def fresh_left(self, config: LoopConfig) -> bool:
        return self.stuck and self.fresh < config.fresh_drafts

    def judge(self, rounds: list[_Round], config: LoopConfig) -> None:
        """A revision that gained too little makes the loop stuck (fresh drafts are
        independent tries: their gains say nothing about revising)."""
        latest = rounds[-1]
        if len(rounds) < 2 or latest.fresh:
            return
        short = latest.score - rounds[-2].score < config.min_gain
        if latest.passed or not short:
            self.helped += 1
        else:
            self.flat += 1
        if config.fresh_drafts:
            self.stuck |= short


async def _next_draft(
    task: str,
    asked: Feedback,
    generate: Generate,
    rounds: list[_Round],
    config: LoopConfig,
    state: _Progress,
) -> Generated:
    """The next draft to evaluate: a revision of the latest draft while revising helps,
    else a fresh draft (the task asked anew, ``Feedback.fresh``) while ``fresh_drafts``
    last; a fresh draft equal to one already seen is drawn again within that allowance. A
    revision repeating a seen draft is asked once more, told so, when no fresh draft is
    allowed. The caller stops ``oscillating`` if what this returns was already seen."""
    tokens = 0
    if not state.fresh_left(config):
        state.drew_fresh = False
        draft, cost = await maybe_await(generate(task, asked))
        state.revisions += 1
        tokens += cost
        if not _seen(draft, rounds):
            return draft, tokens
        state.stuck = True
        state.flat += 1
        if not state.fresh_left(config):  # asked once more, told so, before it is oscillating
            draft, cost = await maybe_await(generate(task, asked | {"repeated": True}))
            return draft, tokens + cost
    while state.fresh_left(config):
        state.drew_fresh = True
        draft, cost = await maybe_await(generate(task, asked | {"fresh": True}))
        state.fresh += 1
        tokens += cost
        if not _seen(draft, rounds):
            break
    return draft, tokens


def _seen(draft: str, rounds: list[_Round]) -> bool:
    """Whether ``draft`` is one the loop already evaluated."""
    return any(_sha(draft) == seen.draft_hash for seen in rounds)


revise_loop = synced(arevise_loop)
"""``arevise_loop`` for sync callers (it drives sync and async callables alike)."""


def _propagate_if_retryable(exc: Exception) -> None:
    """Re-raise what the graph, not the loop, must handle: transient errors are retried by
    the node's RetryPolicy, and LangGraph's control flow (interrupts) must reach LangGraph."""
    if isinstance(exc, GraphBubbleUp) or is_transient(exc):
        raise exc


async def _evaluate(
    task: str, draft: str, gather_evidence: GatherEvidence, critique: CritiqueFn
) -> tuple[_Round, int]:
    """Check and critique one draft; a non-transient exception becomes a round that scores 0
    and records the error, so the drafts made so far are not lost with it."""
    evidence: CheckReport | None = None
    try:
        evidence = await maybe_await(gather_evidence(draft))
        raw, cost = await maybe_await(critique(task, draft, evidence))
    except Exception as exc:
        _propagate_if_retryable(exc)
        failed = {"kind": "error", "passed": False, "score": 0.0, "evidence": describe(exc)}
        return _Round(draft, evidence if evidence is not None else failed, None, exc), 0
    parsed = parse_critique(raw)
    return _Round(draft, evidence, ground(parsed) if parsed else None), cost


def _stop_reason(
    rounds: list[_Round],
    *,
    tokens: int,
    elapsed: float,
    config: LoopConfig,
    state: _Progress,
) -> LoopStop | None:
    """The stop rules in order, judged on the rounds so far; the first that fires names the stop.
    While fresh drafts are left to a stuck loop, only the token budget and time stop it."""
    if rounds[-1].passed:
        return LoopStop.PASS
    if len(rounds) >= 2 and all(r.critique is None for r in rounds[-2:]):
        return LoopStop.CRITIC_ERROR
    fresh_left = state.fresh_left(config)
    if state.stuck and config.fresh_drafts and not fresh_left:
        return LoopStop.STALLED  # neither revising nor starting over helped
    # the gain falls short on two consecutive rounds, not on a single one (docs/architecture.md)
    gains = [later.score - earlier.score for earlier, later in pairwise(rounds[-3:])]
    if not fresh_left and len(gains) == 2 and max(gains) < config.min_gain:
        return LoopStop.STALLED
    if tokens >= config.token_budget or (
        not fresh_left and state.revisions >= config.max_revisions
    ):
        return LoopStop.BUDGET
    if elapsed >= config.timeout_s:
        return LoopStop.TIMEOUT
    return None


def _feedback(current: _Round, cap: int) -> Feedback:
    """Patch when every blocking issue says where it is; rewrite otherwise."""
    located = all(issue.location for issue in current.blockers)
    issues = current.critique.issues if current.critique else []
    return Feedback(
        mode="patch" if current.blockers and located else "rewrite",
        draft=current.draft,
        issues=feedback(issues, cap=cap),
    )


def _result(
    rounds: list[_Round],
    reason: LoopStop,
    state: _Progress,
    tokens: int,
    error: Exception | None = None,
) -> LoopResult:
    """Report the best round: a passing draft outranks every blocked one, then a draft whose
    executable evidence passed (a model critic's score never outweighs a passing check), then
    the higher score; `max` keeps the earlier draft on a tie, since a later one has not shown
    it is better."""
    best = max(rounds, key=lambda r: (r.passed, bool(r.evidence.get("passed")), r.score))
    return LoopResult(
        best=best.draft,
        best_score=best.score,
        stop_reason=reason,
        rounds=state.revisions,
        issues=feedback(best.critique.issues, cap=None) if best.critique else [],
        tokens=tokens,
        evidence=best.evidence,
        history=[_record(round_no, r) for round_no, r in enumerate(rounds)],
        error=error,
        fresh=state.fresh,
        revisions_helped=state.helped,
        revisions_stuck=state.flat,
    )


def _record(round_no: int, evaluated: _Round) -> dict[str, Any]:
    record: dict[str, Any] = {
        "round": round_no,
        "score": evaluated.score,
        "blocking": [issue.id for issue in evaluated.blockers],
        "draft_hash": evaluated.draft_hash,
        "evidence_passed": bool(evaluated.evidence.get("passed")),
        "malformed": evaluated.critique is None,
    }
    if evaluated.fresh:
        record["fresh"] = True
    if evaluated.error is not None:
        record["error"] = describe(evaluated.error)
    return record


def _sha(draft: str) -> str:
    return hashlib.sha256(draft.encode("utf-8", errors="surrogatepass")).hexdigest()
