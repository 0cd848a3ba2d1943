"""What is left of a user turn's budgets: the one calculation dispatch and reflection share.

A turn starts when a goal or a human answer is taken in (``state["turn"]``); its tokens,
seconds and planner rounds are counted from there (budgets per turn, state kept
when one is spent so a human can resume with more).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.vocabulary import StopReason

__all__ = ["BUDGET_FIELDS", "Budget", "budget_left", "budget_of"]

BUDGET_FIELDS = ("token_budget", "time_budget_s", "max_steps")
"""The Context's budgets; a human's ``continue`` may raise them for the turn
(``turn["budget"]``)."""


@dataclass(frozen=True)
class Budget:
    """The remainder of each budget of the current turn (negative once overspent)."""

    tokens: int
    seconds: float
    steps: int

    @property
    def exhausted(self) -> StopReason | None:
        """The first budget that is spent, as the stop reason it gives, or None."""
        if self.tokens <= 0:
            return StopReason.TOKEN_BUDGET
        if self.seconds <= 0:
            return StopReason.TIME_BUDGET
        if self.steps <= 0:
            return StopReason.STEP_BUDGET
        return None

    def token_allowance(self, parallel: int) -> int:
        """Tokens each of ``parallel`` subagents may spend in this round (at least 1)."""
        return max(1, self.tokens // max(1, parallel))

    def time_allowance(self) -> float:
        """Seconds a subagent may take in this round (at least 1)."""
        return max(1.0, self.seconds)


def budget_left(
    *,
    turn: Mapping[str, Any],
    tokens_used: int,
    step: int,
    token_budget: int,
    time_budget_s: float,
    max_steps: int,
    now: float | None = None,
) -> Budget:
    """What is left of the turn that began at ``turn``, given the thread's totals now."""
    started = float(turn.get("started_at") or (time.time() if now is None else now))
    elapsed = (time.time() if now is None else now) - started
    return Budget(
        tokens=token_budget - (tokens_used - int(turn.get("start_tokens", 0))),
        seconds=time_budget_s - elapsed,
        steps=max_steps - (step - int(turn.get("start_step", 0))),
    )


def budget_of(
    state: Mapping[str, Any], ctx: Any, *, step: int | None = None, now: float | None = None
) -> Budget:
    """What is left of the thread's current turn: its Context's budgets, as raised for this
    turn by a human's ``continue``, against the usage counted since the turn began."""
    from agent.models.factory import total_tokens  # usage accounting lives with the models

    turn = state.get("turn") or {}
    limits = {name: getattr(ctx, name) for name in BUDGET_FIELDS} | dict(turn.get("budget") or {})
    return budget_left(
        turn=turn,
        tokens_used=total_tokens(state.get("usage")),
        step=int(state.get("step") or 0) if step is None else step,
        now=now,
        **limits,
    )
