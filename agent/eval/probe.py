"""Probing, the host's side: does a mutant that passed its check differ from the reference?

The probe itself runs in the sandbox (``differential.py``, shipped in this package and copied
in as ``probe.py``); this side lays out its folder, runs it and reads its verdict. A probe
that dies or prints no verdict is ``inconclusive``, never ``equivalent``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.eval.datasets import Task
from agent.eval.differential import MARK
from agent.sandbox import run_python

PROBE_BUDGET_S = 4.0
_PROGRAM = Path(__file__).parent / "differential.py"


def probe(task: Task, mutant_source: str, *, budget_s: float = PROBE_BUDGET_S) -> dict[str, Any]:
    """Look for an input on which the mutant and the reference differ (``verdict`` differs,
    with the witness; equivalent; or inconclusive, with the reason)."""
    if not task.entry_point or task.reference is None or task.check.get("kind") != "python":
        return {"verdict": "inconclusive", "reason": "no entry point or python check to probe"}
    files = {
        "reference.py": task.reference,
        "mutant.py": mutant_source,
        "check.py": task.check["code"],
        "probe.py": _PROGRAM.read_text(encoding="utf-8"),
    }
    result = run_python(
        files,
        ["probe.py", task.entry_point, str(budget_s)],
        timeout_s=budget_s + 6.0,
        max_output=20_000,
    )
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(MARK):
            try:
                return json.loads(line[len(MARK) :])
            except ValueError:
                break
    reason = result.killed_reason or f"exit code {result.returncode}"
    return {"verdict": "inconclusive", "reason": f"the probe did not finish ({reason})"}
