"""The stored plan as the work goes on: which steps are done, ready or pending, and the next
plan version, which keeps the finished work a change does not touch."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from agent.plan.steps import Step
from agent.vfs.origin import given, is_user_file, same_as_given

__all__ = [
    "is_done",
    "merge_replan",
    "new_plan",
    "pending_steps",
    "ready_steps",
    "unchanged_given",
]


def new_plan(steps: list[Step], version: int) -> dict[str, Any]:
    """The plain-data plan stored in state."""
    return {"version": version, "steps": [s.model_dump() for s in steps]}


def is_done(step: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> bool:
    """A step is done when its artifact exists and its check passed."""
    entry = files.get(step["expected_output"])
    return bool(entry and entry.get("status") == "done")


def ready_steps(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Steps not yet done whose dependencies are all done, in plan order."""
    if not plan:
        return []
    steps = plan.get("steps", [])
    done = {s["step_id"] for s in steps if is_done(s, files)}
    return [dict(s) for s in steps if s["step_id"] not in done and set(s["depends_on"]) <= done]


def pending_steps(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Steps not yet done, ready or not."""
    if not plan:
        return []
    return [dict(s) for s in plan.get("steps", []) if not is_done(s, files)]


_IDENTITY = ("action", "instructions", "expected_output", "done_when", "depends_on")


def merge_replan(
    old_plan: Mapping[str, Any] | None,
    new_steps: list[Step],
    files: Mapping[str, Mapping[str, Any]],
    reopen: Collection[str] = (),
) -> tuple[dict[str, Any], list[str]]:
    """Adopt a new plan version, keeping finished work that the change does not touch.

    A step is kept when an identical step (same id, action, instructions, output, check and
    dependencies) was already done, its artifact is not in ``reopen`` (what must be written
    again whatever the plan says) and every dependency is kept too; every other step whose
    artifact exists is affected and must run again (re-run only affected steps).

    Returns the new plan and the artifact paths that must be re-run (stale).
    """
    old = {s["step_id"]: s for s in (old_plan or {}).get("steps", [])}
    version = int((old_plan or {}).get("version", 0)) + 1
    plan = new_plan(new_steps, version)
    kept: set[str] = set()
    # depends_on is acyclic, so a few passes settle "kept" transitively.
    for _ in range(len(plan["steps"]) + 1):
        changed = False
        for step in plan["steps"]:
            sid = step["step_id"]
            if sid in kept:
                continue
            before = old.get(sid)
            same = before is not None and all(before.get(k) == step[k] for k in _IDENTITY)
            if step["expected_output"] in reopen:
                continue
            if same and is_done(step, files) and set(step["depends_on"]) <= kept:
                kept.add(sid)
                changed = True
        if not changed:
            break
    stale = [
        s["expected_output"]
        for s in plan["steps"]
        if s["step_id"] not in kept and is_done(s, files)
    ]
    return plan, stale


def unchanged_given(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """The user's modules a step of ``plan`` writes that still are as the user gave them
    (equal as code: the syntax tree, comments and layout aside; only a module keeps the text
    it was given, :func:`agent.vfs.origin.keep_origin`). A plan writes such a
    file to change it: a success over it would claim work no step did. On the 1.5B a
    ``stats.py`` returned as given passed the checks of what its criteria kept, and the
    bug-fix goal ended ``success``."""
    out = []
    for step in (plan or {}).get("steps") or []:
        path = str(step.get("expected_output", "")) if isinstance(step, Mapping) else ""
        entry = files.get(path)
        if entry is None or not is_user_file(entry) or not path.lower().endswith(".py"):
            continue
        if same_as_given(path, given(entry), str(entry.get("content", ""))):
            out.append(path)
    return list(dict.fromkeys(out))
