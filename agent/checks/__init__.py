"""``done_when`` checks: turn "done" into evidence a program produced.

``run_check(spec, files, path)`` is the one check runner; it dispatches through one registry
(:mod:`agent.checks.registry`), which also renders the planner prompt's list of kinds. The
built-in kinds live in one module per family and join the registry the way a custom kind
does, through ``register_check``:

* :mod:`agent.checks.text` — ``exists``, ``non_empty``, ``contains``, ``regex``, ``json_schema``
* :mod:`agent.checks.code` — ``python``, ``pytest`` (sandboxed, verdicts the artifact cannot forge)
* :mod:`agent.checks.sql` — ``sql`` (sandboxed, read-only)
* :mod:`agent.checks.citations` — ``citations`` (every cited URL came from the step's tools)
* :mod:`agent.checks.rubric` — ``rubric`` (the judge model)
* :mod:`agent.checks.composite` — ``all`` (every one of several checks)
* :mod:`agent.checks.stated` — ``examples``, ``json_shape``, ``sections`` (typed checks the
  evidence floor compiles a goal's acceptance criteria into; not offered to the planner)

Importing this package registers them, family by family in the order the planner sees them,
and then seals them: from then on no registration can replace a built-in kind. Generated
code only ever runs in ``agent.sandbox``.
"""

from __future__ import annotations

from agent.checks import citations, code, composite, rubric, sql, stated, text
from agent.checks.composite import check_kinds
from agent.checks.registry import (
    CheckFn,
    CheckScope,
    current_databases,
    current_judge,
    current_tool_outputs,
    describe_kinds,
    register_check,
    run_check,
    seal_builtin_kinds,
    validate_check_spec,
)
from agent.checks.report import CheckReport

__all__ = [
    "CheckFn",
    "CheckReport",
    "CheckScope",
    "check_kinds",
    "current_databases",
    "current_judge",
    "current_tool_outputs",
    "describe_kinds",
    "register_check",
    "run_check",
    "validate_check_spec",
]

# the order the planner sees the kinds in (``all`` is not offered: agent.checks.composite)
for _family in (text, code, sql, citations, rubric, composite, stated):
    _family.register()
seal_builtin_kinds()
del _family
