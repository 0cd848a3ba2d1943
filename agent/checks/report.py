"""The shape every check kind returns, and the clipping that keeps evidence a short quote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

EVIDENCE_CHARS = 600


class CheckReport(TypedDict):
    """The outcome of one check, as stored in a ``FileEntry`` and quoted by critiques."""

    kind: str
    """The check kind that ran (``"invalid"`` for a spec without a usable kind)."""
    passed: bool
    """Whether the artifact meets the spec."""
    score: float
    """0..1: 1/0 for binary kinds, the pass rate for pytest, the share found for contains."""
    evidence: str
    """A short quote of the tool result: the failing assertion, validation error, row count."""


def make_report(kind: str, passed: bool, score: float, evidence: str) -> CheckReport:
    """A report with its evidence clipped: evidence is quoted into prompts, never a transcript."""
    return {"kind": kind, "passed": passed, "score": score, "evidence": clip(evidence)}


def tidy_report(report: Any, kind: str) -> CheckReport:
    """Hold every report, custom ones included, to the CheckReport shape."""
    if not isinstance(report, Mapping) or "passed" not in report:
        evidence = f"check returned {type(report).__name__}, not a report"
        return make_report(kind, False, 0.0, evidence)
    passed = bool(report["passed"])
    try:
        score = min(1.0, max(0.0, float(report.get("score", 1.0 if passed else 0.0))))
    except (TypeError, ValueError):
        score = 1.0 if passed else 0.0
    evidence = str(report.get("evidence", ""))
    return make_report(str(report.get("kind") or kind), passed, score, evidence)


def clip(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """``text`` stripped and cut to ``limit`` characters, an ellipsis marking the cut."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short(value: Any, limit: int = 120) -> str:
    """A value quoted in evidence: its ``repr``, clipped."""
    return clip(repr(value), limit)
