"""Stated examples as a ``python`` check: the names a module must define and the calls
whose results are known (a HumanEval docstring's, a goal's "median([1, 2, 3, 4]) should be
2.5"). The check code is ``examples_program.py``, run in the check's sandbox."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXAMPLES_PROGRAM", "EXAMPLES_TIMEOUT_S", "examples_check"]

EXAMPLES_TIMEOUT_S = 10.0
EXAMPLES_PROGRAM = "examples"
"""A ``python`` spec's ``program``: its code is this program, whose bare builtins are the
builtins (it reaches the artifact's functions only through the calls it evaluates, and a name
in ``NAMES`` that is a builtin's is "not defined"). The product sets it, never the check's
source, and a plan may not (``agent.checks.code``)."""
_PROGRAM = Path(__file__).with_name("examples_program.py")
_HEAD = (
    "\nNAMES: list[str] = []\nEXAMPLES: list[tuple[str, str]] = []\n"
    'SMOKE: list[tuple[str, str]] = []\nGIVEN: str = ""\nKEEP: list[str] = []\n'
    "SHARED: list[tuple[str, str]] = []\nPATHS: list[str] = []\nOWN: dict[str, str] = {}\n"
)


def examples_check(
    names: Sequence[str],
    examples: Sequence[tuple[str, str]],
    *,
    smoke: Sequence[tuple[str, str]] = (),
    given: str = "",
    keep: Sequence[str] = (),
    calls: Sequence[tuple[str, str]] = (),
    shared: Sequence[tuple[str, str]] = (),
    paths: Sequence[str] = (),
    own: Mapping[str, str] | None = None,
    stated: bool = True,
) -> dict[str, Any]:
    """A ``python`` check: every name in ``names`` is defined in the artifact, then every
    ``(call, expected)`` holds (both are Python source; ``expected`` is compared with
    ``==``, or by ``repr`` when it does not evaluate), then every ``(call, returns)`` in
    ``smoke`` raises no error of broken code and returns the type named (any, when
    ``returns`` is empty), then every call in ``keep`` ends as it does in ``given`` (the
    source of the module the user gave: the same exception, or an equal plain value), and
    every ``(caller, callee)`` in ``calls`` holds: ``caller``'s code refers to ``callee``;
    every ``(call, source)`` in ``shared`` returns, up to float rounding, what it returns in
    ``given`` (which defines the new function as the code ``source`` names: a refactor's
    shared part, :func:`agent.plan.kept.shared_code`); every call in ``paths``, of a
    function a stated example shows wrong in ``given``, ends as it does there when it takes
    a path through that function the failing examples do not (a fix keeps the rest);
    ``own`` maps a refactor's callers to what each does after the shared code, quoted when
    one of them no longer ends as it did.
    ``stated`` keeps what is asserted beside the code, so a prompt can show it instead
    of the program (:func:`agent.checks.shown.shown_check`); the floor's checks are
    ``examples`` specs (:mod:`agent.checks.stated`), which hold it as data."""
    program = _PROGRAM.read_text(encoding="utf-8")
    body = program.split(_HEAD, 1)[1]
    pairs = [(str(c), str(w)) for c, w in examples]
    smokes = [(str(c), str(r)) for c, r in smoke]
    callers = [(str(a), str(b)) for a, b in calls]
    probes = [str(c) for c in keep] if given else []
    moved = [(str(c), str(w)) for c, w in shared] if given else []
    routes = [str(c) for c in paths] if given and pairs else []
    head = (
        f"NAMES = {list(names)!r}\nEXAMPLES = {pairs!r}\nSMOKE = {smokes!r}\n"
        f"GIVEN = {given if probes or moved or routes else ''!r}\nKEEP = {probes!r}\n"
        f"SHARED = {moved!r}\nPATHS = {routes!r}\nOWN = {dict(own or {}) if probes else {}!r}\n"
    )
    spec: dict[str, Any] = {
        "kind": "python",
        "code": head + body,
        "timeout_s": EXAMPLES_TIMEOUT_S,
        "program": EXAMPLES_PROGRAM,
    }
    if callers:
        spec["calls"] = [list(pair) for pair in callers]
    if stated:
        spec["stated"] = {"defines": list(names), "examples": [f"{c} == {w}" for c, w in pairs]}
        if smokes:
            spec["stated"]["runs_without_error"] = [f"{c} -> {r}" if r else c for c, r in smokes]
        if probes:
            spec["stated"]["ends_as_in_the_given_file"] = probes
        if routes:
            spec["stated"]["ends_as_in_the_given_file_off_the_bug_s_path"] = routes
        if moved:
            spec["stated"]["returns_as_the_shared_code"] = [f"{c}: as {w}" for c, w in moved]
        if callers:
            spec["stated"]["calls"] = [f"{a} calls {b}" for a, b in callers]
    return spec
