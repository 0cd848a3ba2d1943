"""The plan-vs-actual diff: which expected artifacts exist and which do not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["plan_actual_diff"]


def plan_actual_diff(plan: Mapping[str, Any] | None, files: Mapping[str, Any]) -> dict[str, Any]:
    """Compare what the plan expects with what exists (exactly)."""
    steps = (plan or {}).get("steps") or (plan or {}).get("subtasks") or []
    expected = {s.get("expected_output") or s.get("expected_artifact") for s in steps}
    expected.discard(None)
    produced = set(files)
    return {
        "expected_not_produced": sorted(expected - produced),
        "produced_not_expected": sorted(produced - expected),
        "overlap": sorted(expected & produced),
        "completion_ratio": len(expected & produced) / max(len(expected), 1),
    }
