"""What a step leaves in the thread's state: its files and its trajectory events.

The artifact carries its check, stop reason and defect signature; scratch files stay
``active``; a failed step leaves its open issues in ``work/<step_id>/critique.json``, which
reflection reads. Every action of the step is one trajectory event.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.controller.habits import revisions_of
from agent.controller.revise import LoopResult
from agent.errors import classify, describe
from agent.vfs.entries import Workspace, evidence_line, file_entry, scratch_prefix
from agent.vocabulary import FileStatus

_TIMING = re.compile(r"\d+\.\d+s")  # pytest durations differ between identical failures


@dataclass
class StepRun:
    """Everything one step produced, ready to become a state update."""

    files: dict[str, Any] = field(default_factory=dict)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    approvals: dict[str, Any] = field(default_factory=dict)
    """Requests the step stopped on (``agent.tools.approvals``), by id: empty unless it waits."""
    replay: dict[str, Any] = field(default_factory=dict)
    """The step's model answers to replay when it runs again after waiting (by step id;
    ``None`` clears them once it has finished)."""


def defect_signature(step_id: str, issues: Sequence[Mapping[str, Any]]) -> str | None:
    """Hash of a step's blocking evidence, stable across runs (timings removed)."""
    blocking = [i for i in issues if i.get("severity") == "blocking"]
    if not blocking:
        return None
    # a JSON list, not text joined with ":" and "|": evidence the artifact wrote may hold both
    parts = [[str(i.get("id")), _TIMING.sub("", str(i.get("evidence", "")))] for i in blocking]
    text = json.dumps([step_id, parts], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


class StepRecords:
    """The step's :class:`StepRun`, written as the step acts and once its loop has stopped."""

    def __init__(self, step: Mapping[str, Any], round_no: int) -> None:
        self.step = step
        self.step_id = str(step["step_id"])
        self.round = round_no
        self.run = StepRun()

    def event(self, action: str, **data: Any) -> None:
        """One trajectory event of this step."""
        self.run.trajectory.append(
            {
                "round": self.round,
                "step_id": self.step_id,
                "actor": self.step["action"],
                "action": action,
                **data,
            }
        )

    def error(self, exc: BaseException) -> None:
        """An error with its class: reflection fails the run on permission, policy or input
        errors (``rule_fatal_error``) and otherwise treats the step as failed."""
        fix = getattr(exc, "fix", None)  # a configuration error that says how to fix it
        extra = {"fix": fix} if isinstance(fix, str) and fix else {}
        self.event("error", error_class=classify(exc).value, observation=describe(exc), **extra)

    def result(self, result: LoopResult, workspace: Workspace, *, model: str = "") -> None:
        """The step's files (artifact, scratch, critique) and its result event, which keeps
        what the loop's revisions did for ``model`` (:mod:`agent.controller.habits`)."""
        path = self.step["expected_output"]
        best = result.best or ""
        if workspace.contents().get(path, None) != best and best:
            workspace.write(path, best)
        report = dict(result.evidence or {}) or {
            "kind": "none",
            "passed": False,
            "score": 0.0,
            "evidence": f"{path} was not produced",
        }
        passed = bool(result.converged and report.get("passed"))
        stop_reason = str(result.stop_reason)  # state holds plain strings, not enum members
        issues = list(result.issues or [])
        fallback = [{"id": "check", "severity": "blocking", "evidence": report.get("evidence", "")}]
        signature = None if passed else defect_signature(self.step_id, issues or fallback)
        for scratch_path, content in workspace.written.items():
            if scratch_path != path:
                self.run.files[scratch_path] = file_entry(
                    content, step=self.round, status=FileStatus.ACTIVE, step_id=self.step_id
                )
        if best or path in workspace.written:
            self.run.files[path] = file_entry(
                best,
                step=self.round,
                status=FileStatus.DONE if passed else FileStatus.FAILED,
                step_id=self.step_id,
                check=report,
                evidence_line=evidence_line(report, content=best),
                stop_reason=stop_reason,
                rounds=result.rounds,
                defect=signature,
                **({"base": workspace.bases[path]} if path in workspace.bases else {}),
            )
        self._critique_file(workspace, passed, stop_reason, issues, signature)
        self.event(
            "result",
            passed=passed,
            stop_reason=stop_reason,
            rounds=result.rounds,
            defect=signature,
            observation=str(report.get("evidence", ""))[:300],
            **({"fresh_drafts": result.fresh} if result.fresh else {}),
            **({"model": model, "revisions": revisions_of(result)} if model else {}),
        )

    def _critique_file(
        self,
        workspace: Workspace,
        passed: bool,
        stop_reason: str,
        issues: list[dict[str, Any]],
        signature: str | None,
    ) -> None:
        """A failed step leaves its open issues in ``work/<step_id>/critique.json`` (reflection
        sees it); a passing one removes an earlier critique."""
        critique_path = f"{scratch_prefix(self.step_id)}critique.json"
        if passed:
            if critique_path in workspace.ls():
                self.run.files[critique_path] = None
            return
        body = json.dumps(
            {"step_id": self.step_id, "stop_reason": stop_reason, "open_issues": issues}, indent=1
        )
        self.run.files[critique_path] = file_entry(
            body,
            step=self.round,
            status=FileStatus.ACTIVE,
            step_id=self.step_id,
            kind="critique",
            defect=signature,
        )
