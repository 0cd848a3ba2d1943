"""Check code asserting stated examples: the ``code`` of a ``python`` check.

Not imported: its text runs in the check's sandbox with the artifact's names in scope
(``agent.checks.examples.examples_check`` builds it). The host replaces the ``NAMES`` and
``EXAMPLES`` lines: every name must be defined and callable, every (call, expected) pair
must hold, and all failures are quoted at once.
"""

NAMES: list[str] = []
EXAMPLES: list[tuple[str, str]] = []

_deepreflect_failed: list[str] = []
for _name in NAMES:
    if not callable(globals().get(_name)):
        _deepreflect_failed.append(f"{_name} is not defined (or not callable)")
for _call, _want in EXAMPLES if not _deepreflect_failed else ():
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
assert not _deepreflect_failed, "stated examples failed: " + "; ".join(_deepreflect_failed)
