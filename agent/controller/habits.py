"""Whether a model's revisions help, learnt from what its loops did — kept with the thread.

Shown its failing draft and the evidence, a capable model fixes it; some small models send
their drafts back byte for byte, each revision costing tokens before the fresh drafts (the
task asked anew) that do fix some. A profile that allows it (``Profile.fresh_drafts_first``)
has a model's loops draw fresh drafts first once its revisions have been flat ``after``
times and never helped. What the revisions did is recorded in each step's ``result`` event
(``revisions``, with the model's key), so the facts live in the thread's checkpoints:
nothing is remembered by the process, and one thread never changes how another runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent.controller.revise import LoopConfig, LoopResult

__all__ = ["FLAT_REVISIONS", "RevisionRecord", "as_learnt", "learnt_from", "revisions_of"]

FLAT_REVISIONS = 2
"""Flat revisions (and none that helped) after which a model's loops start with fresh drafts."""


@dataclass
class RevisionRecord:
    """How one model's revisions went: the ones that raised the score, the flat ones."""

    helped: int = 0
    flat: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, result: LoopResult) -> None:
        """What one more loop's revisions did (loops of one eval run in threads)."""
        with self._lock:
            self.helped += result.revisions_helped
            self.flat += result.revisions_stuck

    def fresh_first(self, after: int = FLAT_REVISIONS) -> bool:
        """Whether the revisions were flat ``after`` times and never helped."""
        return not self.helped and self.flat >= after


def revisions_of(result: LoopResult) -> dict[str, int]:
    """What a step's ``result`` event records of its loop's revisions."""
    return {"helped": result.revisions_helped, "flat": result.revisions_stuck}


def learnt_from(trajectory: Iterable[Mapping[str, Any]], key: str) -> RevisionRecord:
    """The record of ``key``'s revisions in a thread's trajectory (its ``result`` events)."""
    record = RevisionRecord()
    for event in trajectory:
        if event.get("action") != "result" or event.get("model") != key:
            continue
        revisions = event.get("revisions")
        if isinstance(revisions, Mapping):
            record.helped += _count(revisions.get("helped"))
            record.flat += _count(revisions.get("flat"))
    return record


def as_learnt(config: LoopConfig, record: RevisionRecord, *, allowed: bool) -> LoopConfig:
    """``config`` for a loop of a model with ``record``: fresh drafts first when the profile
    ``allowed`` it, its revisions do not help and it has fresh drafts to draw."""
    if not allowed or not config.fresh_drafts or not record.fresh_first():
        return config
    return replace(config, fresh_first=True)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
