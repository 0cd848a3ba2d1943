"""A step's critique: its failed check, as a blocking issue quoting the check's evidence.

The check is the grounded critic. A rubric check has already asked the judge,
which reaches the check through :func:`step_judge`: told which step it reviews, and
answering from the step's replay record first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import Runnable

from agent.checks.critique import Critique, critique_from_check
from agent.controller.replay import ModelReplay, ReplayedJudge
from agent.models.factory import with_metadata


def step_judge(
    judge: Runnable | None, metadata: Mapping[str, Any], replay: ModelReplay
) -> ReplayedJudge | None:
    """The judge a step's rubric checks call, or None without one: its calls name the
    step whose artifact they review, beside their own role."""
    if judge is None:
        return None
    return replay.judged(with_metadata(judge, metadata))


def critique_check(task: str, draft: str, evidence: Mapping[str, Any]) -> tuple[Critique, int]:
    """The revise loop's critique of ``draft``: what its check found, at no token cost."""
    return critique_from_check(dict(evidence)), 0
