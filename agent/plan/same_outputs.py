"""Steps that write the same file, merged into one where that is safe, before a plan is
validated (``agent.plan.validation.parse_plan``)."""

from __future__ import annotations

from typing import Any

from agent.plan.steps import MAX_INSTRUCTIONS_CHARS, Step, dependency_cycle

__all__ = ["merge_same_outputs"]


def merge_same_outputs(steps: list[Step]) -> list[Step]:
    """``steps`` with every group of steps that write the same file merged into one, where
    that is safe; an unsafe group is left as it is, for ``plan_errors`` to refuse.

    Small models split "write x.py" and "improve x.py" into two steps: both would write the
    file, and neither's check would judge the other's work. The merged step keeps the first
    step's id and place, does every step's instructions in dependency order, depends on
    what any of them depended on (but each other), and takes over their dependants. Its
    check is the last step's (the one that sees the finished file; an earlier step's check
    would judge a draft the later step rewrites), unless the last one has only the default
    ``non_empty``: then the last explicit check among them, the stricter; its action is the
    first step's (the one that writes the file). A step planned between them ("write
    stats.py", "test it", "fix stats.py") runs after the merged step: it reads the finished
    file. Refusing these cost the 1.5B its bughunt run (a replan repeated the twins and
    ended ``invalid_plan``). Safe means: ids unique, instructions that fit a step, and the
    twins not depending on each other in a cycle."""
    ids = [s.step_id for s in steps]
    if len(set(ids)) != len(ids):
        return steps
    groups: dict[str, list[Step]] = {}
    for step in steps:
        groups.setdefault(step.expected_output, []).append(step)
    merged = steps
    for group in groups.values():
        if len(group) > 1:
            merged = _merged_group(merged, [s.step_id for s in group])
    return merged


def _merged_group(steps: list[Step], group_ids: list[str]) -> list[Step]:
    """``steps`` with the steps ``group_ids`` merged, or ``steps`` unchanged if unsafe."""
    by_id = {s.step_id: s for s in steps}
    group = _in_dependency_order([by_id[i] for i in group_ids])
    if group is None:
        return steps
    members = set(group_ids)
    keep = next(s.step_id for s in steps if s.step_id in members)  # the first in plan order
    instructions = "\n\n".join(s.instructions for s in group)
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        return steps
    after = _dependants(steps, members)  # a step between twins now runs after the file
    depends = [d for s in group for d in s.depends_on if d not in members | after]
    one = group[-1].model_copy(
        update={
            "step_id": keep,
            "action": group[0].action,
            "instructions": instructions,
            "depends_on": list(dict.fromkeys(depends)),
            "done_when": _last_check(group),
        }
    )
    out: list[Step] = []
    for step in steps:
        if step.step_id == keep:
            out.append(one)
        elif step.step_id not in members:
            deps = [keep if d in members else d for d in step.depends_on]
            out.append(step.model_copy(update={"depends_on": list(dict.fromkeys(deps))}))
    return steps if dependency_cycle(out) is not None else out


def _dependants(steps: list[Step], members: set[str]) -> set[str]:
    """The steps outside ``members`` that depend on one of them, directly or not."""
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for step in steps:
            if step.step_id in found | members:
                continue
            if set(step.depends_on) & (members | found):
                found.add(step.step_id)
                grew = True
    return found


def _last_check(group: list[Step]) -> dict[str, Any] | str:
    """The check of the last step of ``group`` that has more than the default one."""
    default = Step.model_fields["done_when"].get_default(call_default_factory=True)
    explicit = [s.done_when for s in group if s.done_when != default]
    return explicit[-1] if explicit else group[-1].done_when


def _in_dependency_order(group: list[Step]) -> list[Step] | None:
    """``group`` ordered so that a step comes after those of the group it depends on
    (plan order otherwise); None when they depend on each other in a cycle."""
    left = list(group)
    ordered: list[Step] = []
    while left:
        names = {s.step_id for s in left}
        ready = next((s for s in left if not names & set(s.depends_on) - {s.step_id}), None)
        if ready is None:
            return None
        ordered.append(ready)
        left.remove(ready)
    return ordered
