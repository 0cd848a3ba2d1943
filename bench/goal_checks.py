"""What deepreflect's own checks said about each goal's artifacts, against the hidden grader:
the critic's precision and recall on the goal suite (issue 22, item 6).

In a graph run the "critic" of a step is its ``done_when`` check. A program decides (pytest,
python, sql, json_schema, citations) wherever the plan names one, and then no model critic is
asked; only a ``rubric`` check asks the judge model. A pattern (``contains``, ``regex``) or
mere presence (``exists``, ``non_empty``) says little about correctness, so each verdict is
reported with the family that gave it.

A goal's product verdict is *approved* when every graded artifact the thread holds passed its
last check, *flagged* when one failed or a graded artifact is missing. Against the grader: a
flag is right when the grader fails the goal (precision: right flags / flags; recall: failing
goals flagged / failing goals), and an approval of a goal the grader fails is a miss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FAMILY = {
    "pytest": "program",
    "python": "program",
    "sql": "program",
    "json_schema": "program",
    "citations": "program",
    "contains": "pattern",
    "regex": "pattern",
    "exists": "presence",
    "non_empty": "presence",
    "rubric": "model judge",
}
"""Who decides a check kind's verdict; a custom kind is ``other``."""


def thread_checks(db: Path, thread: str | None, artifacts: Sequence[str]) -> dict[str, Any]:
    """Each graded artifact's last check as the thread holds it (``None``: never written or
    never checked), and the judge's calls over the run."""
    from agent.cli.database import reading, thread_state

    if not thread or not db.exists():
        return {"artifacts": {path: None for path in artifacts}, "judge_calls": 0}
    with reading(str(db), thread) as saver:
        values = thread_state(saver, thread, str(db))
    files = values.get("files") or {}
    out: dict[str, Any] = {}
    for path in artifacts:
        check = (files.get(path) or {}).get("check")
        out[path] = (
            None if not check else {"kind": check.get("kind"), "passed": bool(check.get("passed"))}
        )
    judge = (values.get("usage") or {}).get("judge") or {}
    return {"artifacts": out, "judge_calls": int(judge.get("calls", 0))}


_STRONGEST = ["program", "other", "pattern", "model judge", "presence"]


def family(kind: str | None) -> str:
    """The family of a kind; a report named by several kinds (``non_empty+python``, as the
    ``all`` kind named its reports before it named the deciding part) is its strongest
    part's, since every part had to pass."""
    parts = {FAMILY.get(k, "other") for k in (kind or "").split("+")}
    return next(f for f in _STRONGEST if f in parts)


def approved(checks: Mapping[str, Any]) -> bool:
    """Every graded artifact is there and passed its last check."""
    verdicts = list((checks.get("artifacts") or {}).values())
    return bool(verdicts) and all(v is not None and v["passed"] for v in verdicts)


def decided_by(checks: Mapping[str, Any]) -> str:
    """The weakest family among the goal's checks: what the approval rests on."""
    order = ["model judge", "presence", "pattern", "other", "program"]
    found = {family(v["kind"]) for v in (checks.get("artifacts") or {}).values() if v}
    return next((f for f in order if f in found), "unchecked")


def cell(checks: Mapping[str, Any]) -> str:
    """``roman.py: pytest pass`` per artifact, for the table."""
    parts = []
    for path, v in (checks.get("artifacts") or {}).items():
        parts.append(
            f"{path}: " + ("-" if v is None else f"{v['kind']} {'pass' if v['passed'] else 'fail'}")
        )
    return "; ".join(parts)


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The product's verdicts against the grader's, over the goals (and per family)."""

    def counts(selected: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        flags = [r for r in selected if not approved(r["checks"])]
        right = sum(1 for r in flags if not r["passed"])
        failing = [r for r in selected if not r["passed"]]
        misses = sum(1 for r in failing if approved(r["checks"]))
        return {
            "goals": len(selected),
            "flags": len(flags),
            "right_flags": right,
            "failing_goals": len(failing),
            "misses": misses,
            "precision": round(right / len(flags), 2) if flags else None,
            "recall": round((len(failing) - misses) / len(failing), 2) if failing else None,
        }

    with_checks = [r for r in rows if "checks" in r]
    by_family: dict[str, list[Mapping[str, Any]]] = {}
    for r in with_checks:
        by_family.setdefault(decided_by(r["checks"]), []).append(r)
    return {
        "all": counts(with_checks),
        "by_family": {name: counts(group) for name, group in sorted(by_family.items())},
        "judge_calls": sum(int(r["checks"].get("judge_calls", 0)) for r in with_checks),
    }


def summary_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The critic paragraph under the table."""
    s = summary(rows)
    if not s["all"]["goals"]:
        return []

    def said(c: Mapping[str, Any]) -> str:
        p = "-" if c["precision"] is None else f"{c['precision']:.2f}"
        r = "-" if c["recall"] is None else f"{c['recall']:.2f}"
        return (
            f"{c['goals']} goals, {c['flags']} flagged ({c['right_flags']} rightly), "
            f"{c['failing_goals']} failing, {c['misses']} approved though failing; "
            f"precision {p}, recall {r}"
        )

    lines = [f"critic (the product's checks against the grader): {said(s['all'])}"]
    for name, c in s["by_family"].items():
        lines.append(f"  decided by {name}: {said(c)}")
    lines.append(f"  judge model calls: {s['judge_calls']}")
    return lines
