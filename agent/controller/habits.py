"""Whether a model revises: learnt per model as loops go, like the structured-output method
(:mod:`agent.models.structured_methods`).

Shown its failing draft and the evidence, a capable model fixes it; Qwen2.5-Coder-1.5B sent
its HumanEval drafts back byte for byte, and its revisions fixed none on the first 40 in
three runs, each costing ~900 tokens before the fresh drafts (the task asked anew) that did
fix some. So once a model's revisions have been flat ``after`` times and never helped, its
loops draw their fresh drafts first (``LoopConfig.fresh_first``); a model whose revisions
help keeps revising first. Thread-safe; one instance is shared by a process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel

from agent.controller.revise import LoopConfig, LoopResult
from agent.models.factory import model_key
from agent.models.scripted import ScriptedChatModel

FLAT_REVISIONS = 2
"""Flat revisions (and none that helped) after which a model's loops start with fresh drafts."""


@dataclass
class _Record:
    helped: int = 0
    flat: int = 0


class RevisionHabits:
    """Per model key: how its revisions went, and whether its loops should start fresh."""

    def __init__(self, after: int = FLAT_REVISIONS) -> None:
        self.after = after
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def fresh_first(self, key: str) -> bool:
        """Whether ``key``'s revisions were flat ``after`` times and never helped."""
        with self._lock:
            record = self._records.get(key)
            return record is not None and not record.helped and record.flat >= self.after

    def record(self, key: str, result: LoopResult) -> None:
        """What one loop's revisions did."""
        with self._lock:
            record = self._records.setdefault(key, _Record())
            record.helped += result.revisions_helped
            record.flat += result.revisions_stuck

    def forget(self) -> None:
        with self._lock:
            self._records.clear()


REVISION_HABITS = RevisionHabits()


def habit_key(model: BaseChatModel) -> str | None:
    """The key a model's habits are kept under; None for a scripted model, whose answers are
    a test's script, not a habit (learnt, one test's script would steer another's loops)."""
    return None if isinstance(model, ScriptedChatModel) else model_key(model)


def as_learnt(config: LoopConfig, model: BaseChatModel) -> LoopConfig:
    """``config`` for a loop of ``model``: fresh drafts first when its revisions do not help
    (and it has fresh drafts to draw)."""
    key = habit_key(model)
    if key is None or not config.fresh_drafts or not REVISION_HABITS.fresh_first(key):
        return config
    return replace(config, fresh_first=True)


def learn(model: BaseChatModel, result: LoopResult) -> None:
    """Remember what the loop's revisions did for ``model``."""
    if (key := habit_key(model)) is not None:
        REVISION_HABITS.record(key, result)
