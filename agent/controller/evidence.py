"""A step's evidence: its ``done_when`` check run on what the workspace holds."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from agent.checks import check_kinds, run_check
from agent.checks.composite import PRESENCE
from agent.controller.records import StepRecords
from agent.controller.sources import CitationSources
from agent.events import check_event, emit
from agent.vfs.entries import Workspace
from agent.vfs.origin import same_as_given


class StepEvidence:
    """Runs one step's check with what the check may see besides the files: the judge (for
    rubric checks), the goal, the step's sources (for citations) and the declared databases
    (for sql checks)."""

    def __init__(
        self,
        step: Mapping[str, Any],
        workspace: Workspace,
        records: StepRecords,
        *,
        goal: str,
        judge: Any,
        sources: CitationSources,
        databases: Mapping[str, str] | None = None,
        found: str | None = None,
    ) -> None:
        self.step = step
        self.workspace = workspace
        self.records = records
        self.goal = goal
        self.judge = judge
        self.sources = sources
        self.databases = dict(databases or {})  # declared by the user: what sql checks open
        self.found = found  # the file as the step found it, when leaving it so fails a draft

    async def gather(self, revision: int, failure: str | None = None) -> dict[str, Any]:
        """The check's report on the artifact, recorded and streamed; run off the event loop
        (checks run sandboxed processes and may call the judge synchronously). ``failure``:
        why this draft produced no artifact (the program printing it failed), which is the
        draft's evidence instead of a check of the file it did not write."""
        if failure is not None:
            report = {"kind": _kind(self.step), "passed": False, "score": 0.0, "evidence": failure}
        else:
            report = dict(
                await asyncio.to_thread(
                    run_check,
                    self.step.get("done_when"),
                    self.workspace.sandbox_files(),  # the folder's files, the thread's over them
                    self.step["expected_output"],
                    judge=self.judge,
                    task=self.goal,
                    tool_outputs=(*self.sources.outputs, self.goal),  # the user gave it
                    databases=self.databases,
                )
            )
            path = str(self.step["expected_output"])
            report = left_as_found(report, path, self.found, self.workspace.found(path))
        self.records.event(
            "check",
            check={k: report[k] for k in ("kind", "passed", "score")},
            observation=str(report.get("evidence", ""))[:300],
            revision=revision,
        )
        emit(check_event(self.records.step_id, revision, report))
        return report


def left_as_found(
    report: Mapping[str, Any], path: str, found: str | None, current: str
) -> dict[str, Any]:
    """``report``, failed when the draft left ``path`` as the step found it: a passing check
    over a file nobody changed proves only that the file was already there (the user's
    module to fix, returned as given). ``found`` None or empty: no such rule for this step."""
    if not found or not current or not report.get("passed"):
        return dict(report)
    if not same_as_given(path, found, current):
        return dict(report)
    evidence = (
        f"{path} is as this step found it: the draft changed nothing in it, and this step "
        f"writes it to change it. Write the changed {path}."
    )
    return {**report, "passed": False, "score": 0.0, "evidence": evidence}


def _kind(step: Mapping[str, Any]) -> str:
    """The kind a report on ``step`` is filed under: the first kind its check runs that
    judges the artifact (an ``all``'s presence parts aside), as an ``all``'s own report does."""
    kinds = list(check_kinds(step.get("done_when")))
    return next((k for k in kinds if k not in PRESENCE), kinds[0] if kinds else "non_empty")
