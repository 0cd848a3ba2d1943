"""Check code for a HumanEval problem's docstring examples (the ``visible`` evidence mode).

Not imported: its text is the ``code`` of a ``python`` check, run in the check's sandbox with
the artifact's names in scope. The host replaces the ``EXAMPLES`` line with the problem's
(call, expected) pairs; every example is evaluated and all mismatches are quoted at once.
"""

EXAMPLES: list[tuple[str, str]] = []

_deepreflect_failed: list[str] = []
for _call, _want in EXAMPLES:
    try:
        _got = eval(_call)
    except Exception as _exc:
        _deepreflect_failed.append(f"{_call} raised {type(_exc).__name__}: {_exc}")
        continue
    try:
        _ok = _got == eval(_want)
    except Exception:
        _ok = repr(_got) == _want
    if not _ok:
        _deepreflect_failed.append(f"{_call} returned {_got!r}, expected {_want}")
assert not _deepreflect_failed, "docstring examples failed: " + "; ".join(_deepreflect_failed)
