"""The ``rubric`` kind: the judge model reads the artifact against criteria.

The only kind whose verdict is a model's opinion, so the planner is told to prefer
executable checks. The judge and the task are lent by ``run_check`` for the call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.checks.registry import current_judge, needs_strings, register_check
from agent.checks.report import CheckReport, make_report, tidy_report


def _validate_rubric(spec: dict[str, Any]) -> list[str]:
    errors = needs_strings(spec, "criteria")
    if not errors and not all(c.strip() for c in spec["criteria"]):
        errors.append("rubric criteria must not be blank")
    return errors


def _check_rubric(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    judge, task = current_judge()
    if judge is None:
        return make_report("rubric", False, 0.0, "no judge model configured for rubric check")
    from agent.checks.critique import rubric_report  # lazy: the critic pulls in the model stack

    report = rubric_report(
        judge, task=task, path=path, content=files[path], criteria=list(spec["criteria"])
    )
    return tidy_report(report, "rubric")


def register() -> None:
    """Register the ``rubric`` kind; ``agent.checks`` calls this once."""
    register_check(
        "rubric",
        _check_rubric,
        validate=_validate_rubric,
        describe='{"kind": "rubric", "criteria": ["..."]}',
    )
