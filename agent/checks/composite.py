"""``all``: a check made of other checks, passing when each of its parts passes.

A plan's check can ask for more than one kind of evidence (the artifact is valid JSON *and*
holds the goal's keys; a module runs *and* mentions a name), and the evidence floor
(``agent.plan.floor``) adds the program check an artifact's kind allows to a weaker one the
planner chose. The parts run in order and the first failure decides, so a rubric placed
last asks no judge about an artifact a program already failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.checks.registry import (
    CheckScope,
    check_kinds,
    register_check,
    run_lent_check,
    validate_check_spec,
)
from agent.checks.report import CheckReport, make_report
from agent.checks.stated import JsonShapeSpec, parsed

__all__ = ["MAX_PARTS", "PRESENCE", "check_kinds", "proves_criteria", "register"]

MAX_PARTS = 8
PRESENCE = frozenset({"exists", "non_empty"})
"""Kinds that only say the artifact is there: never the deciding part of a pass."""


UNPROVEN = PRESENCE | {"syntax"}
"""Kinds that prove the artifact is there (or parses as code), never that it meets a
criterion: alone, they never let reflection end a run by rule."""


def proves_criteria(spec: Any, *, judged: bool = True) -> bool:
    """Whether a ``done_when`` spec executes or parses its artifact against stated criteria
    (or has a judge read it against a rubric): a part of another kind than
    :data:`UNPROVEN`, a ``json_schema`` or ``json_shape`` that asks more than "any JSON"
    included. ``citations`` with ``min`` 0 states no criterion (it only refuses invented
    sources). ``judged`` False: a ``rubric`` part proves nothing either, for a judge whose
    pass is its model's word only (``Profile.judge_proves``)."""
    if isinstance(spec, Mapping) and spec.get("kind") == "all":
        return any(proves_criteria(p, judged=judged) for p in spec.get("checks") or ())
    if isinstance(spec, Mapping) and spec.get("kind") == "json_schema":
        return bool(spec.get("schema"))
    if isinstance(spec, Mapping) and spec.get("kind") == "json_shape":
        shape = parsed(spec)  # "any JSON" unless it states keys, orders...
        return isinstance(shape, JsonShapeSpec) and shape.states()
    if isinstance(spec, Mapping) and spec.get("kind") == "citations" and spec.get("min") == 0:
        return False
    unproven = UNPROVEN if judged else UNPROVEN | {"rubric"}
    return any(kind not in unproven for kind in check_kinds(spec))


def _validate_all(spec: dict[str, Any]) -> list[str]:
    parts = spec.get("checks")
    if not isinstance(parts, list) or not parts:
        return ["kind 'all' needs 'checks': a non-empty list of check specs"]
    if len(parts) > MAX_PARTS:
        return [f"kind 'all' takes at most {MAX_PARTS} checks, not {len(parts)}"]
    errors = []
    for i, part in enumerate(parts):
        if isinstance(part, Mapping) and part.get("kind") == "all":
            errors.append(f"checks[{i}]: an 'all' inside an 'all': list its checks instead")
            continue
        errors += [f"checks[{i}] {e}" for e in validate_check_spec(part)]
    return errors


def _validate_all_in_scope(spec: dict[str, Any], scope: CheckScope) -> list[str]:
    return [
        f"checks[{i}] {e}"
        for i, part in enumerate(spec["checks"])
        for e in validate_check_spec(part, scope)
    ]


def _check_all(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    """Each part in order; the first that fails decides, its evidence before the passed
    ones' (evidence is clipped, and the failure is what a revision needs), its score the
    share of parts passed (the failing one's own score counted in part): the revise loop
    keeps the best-scored draft, and on the 1.5B a blank first ``report.md`` tied with a
    later one that only lacked its citations, and was kept. The report's
    kind is the deciding part's: the failing one, else the first beyond presence (the
    strongest evidence), so a report always names one kind of the table."""
    evidence: list[str] = []
    decided: str | None = None
    parts = spec["checks"]
    for done, part in enumerate(parts):
        report = run_lent_check(part, files, path)
        line = f"{report['kind']}: {report['evidence']}"
        if not report["passed"]:
            # the parts passed count: a report without its citations outscores a blank one
            score = (done + float(report["score"])) / len(parts)
            return make_report(report["kind"], False, score, "; ".join([line, *evidence]))
        evidence.append(line)
        if decided is None and report["kind"] not in PRESENCE:
            decided = report["kind"]
    return make_report(decided or report["kind"], True, 1.0, "; ".join(evidence))


def register() -> None:
    """Register the ``all`` kind; ``agent.checks`` calls this once, after the other kinds."""
    register_check(
        "all",
        _check_all,
        validate=_validate_all,
        validate_in_scope=_validate_all_in_scope,
        describe='{"kind": "all", "checks": [<check>, <check>]} (passes when every check passes)',
        offered=False,
    )
