"""What reflection looks at: the :class:`Situation`, gathered from state in one place."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.context import Context
from agent.plan.progress import ready_steps
from agent.reflection.budget import budget_of
from agent.vocabulary import FileStatus, Planning, StopReason


@dataclass
class Situation:
    """What the rules look at, gathered from state once (:func:`situation_from_state`)."""

    goal: str
    plan: dict[str, Any] | None
    files: Mapping[str, Mapping[str, Any]]
    step: int
    depth: int
    cap: int
    dispatched: list[str]
    previous_defects: list[str]
    turn_events: list[dict[str, Any]]
    exhausted: StopReason | None = None
    strict_end: bool = True
    planning: str = Planning.UPFRONT
    """upfront or rolling (``Context.planning``): with rolling, a plan whose steps are all
    done may be one segment of the goal, and reflection may replan for the next one."""
    judge_proves: bool = True
    """Whether a rubric the judge passed proves its artifact, so an end by rule may rest on
    it: the judge model's profile (``Profile.judge_proves``)."""
    words_read: bool = True
    """Whether what the goal says in words counts as read: the planner model's profile
    trusts its reading (``Profile.planner_reads``), or a human answered in the thread."""
    ready: list[dict[str, Any]] = field(init=False)
    """The plan's steps that could run now, computed once."""

    def __post_init__(self) -> None:
        self.ready = ready_steps(self.plan, self.files)

    @property
    def round_events(self) -> list[dict[str, Any]]:
        return [e for e in self.turn_events if e.get("round") == self.step]

    @property
    def defects(self) -> list[str]:
        """Signatures of the failing evidence produced in this round."""
        return sorted(
            {
                e["defect"]
                for e in self.round_events
                if e.get("action") == "result" and e.get("defect")
            }
        )

    def done_files(self) -> list[str]:
        return sorted(p for p, e in self.files.items() if e.get("status") == FileStatus.DONE)


def situation_from_state(
    state: Mapping[str, Any],
    ctx: Context,
    *,
    now: float | None = None,
    judge_proves: bool = True,
    planner_reads: bool = True,
) -> Situation:
    """The one place a :class:`Situation` is built, for reflection and for the escalations
    decided elsewhere (an invalid plan, a model error) alike."""
    turn = state.get("turn") or {}
    decisions = state.get("decisions") or []
    start = int(turn.get("start_step", 0))
    step = int(state.get("step") or 0)
    return Situation(
        goal=state.get("goal", ""),
        plan=state.get("plan"),
        files=state.get("files") or {},
        step=step,
        depth=int(state.get("reflection_depth") or 0),
        cap=ctx.depth_cap(),
        dispatched=list(state.get("dispatch") or []),
        previous_defects=list(decisions[-1].get("defects", [])) if decisions else [],
        turn_events=[e for e in state.get("trajectory") or [] if e.get("round", 0) > start],
        exhausted=budget_of(state, ctx, now=now).exhausted,
        strict_end=ctx.strict_end,
        planning=ctx.planning,
        judge_proves=judge_proves,
        words_read=planner_reads or bool((state.get("plan") or {}).get("answered")),
    )
