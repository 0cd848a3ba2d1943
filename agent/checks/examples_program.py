"""Check code asserting stated examples: the ``code`` of a ``python`` check.

Not imported: its text runs in the check's sandbox with the artifact's names in scope
(``agent.checks.examples.examples_check`` builds it). The host replaces the ``NAMES``,
``EXAMPLES`` and ``SMOKE`` lines: every name must be defined and callable, every (call,
expected) pair must hold, every smoke call (a call with values of the parameters' stated
types) must neither raise an error that means the code is broken (``TypeError``,
``NameError`` …) nor return another type than the one stated; all failures are quoted at
once. A smoke call that raises anything else (``ValueError``) passes: the goal may refuse
that value.
"""

NAMES: list[str] = []
EXAMPLES: list[tuple[str, str]] = []
SMOKE: list[tuple[str, str]] = []

_deepreflect_failed: list[str] = []
for _name in NAMES:
    if not callable(globals().get(_name)):
        _deepreflect_failed.append(f"{_name} is not defined (or not callable)")
_deepreflect_types = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
    "tuple": (tuple,),
    "set": (set, frozenset),
    "bytes": (bytes,),
}
_deepreflect_broken = (
    TypeError,
    NameError,
    AttributeError,
    NotImplementedError,
    ImportError,
    RecursionError,
)
# an example states its result; a smoke call only the type of its result
_deepreflect_calls = [(c, w, "") for c, w in EXAMPLES] + [(c, None, r) for c, r in SMOKE]
for _call, _want, _returns in _deepreflect_calls if not _deepreflect_failed else ():
    try:
        _got = eval(_call)
    except Exception as _exc:
        if _want is not None or isinstance(_exc, _deepreflect_broken):
            _deepreflect_failed.append(f"{_call} raised {type(_exc).__name__}: {_exc}")
        continue
    if _want is not None:
        try:
            _ok = _got == eval(_want)
        except Exception:
            _ok = repr(_got) == _want
        if not _ok:
            _deepreflect_failed.append(f"{_call} returned {_got!r}, expected {_want}")
    elif _returns == "None" and _got is not None:
        _deepreflect_failed.append(f"{_call} returned {_got!r}, expected None")
    elif _returns in _deepreflect_types and type(_got) not in _deepreflect_types[_returns]:
        _deepreflect_failed.append(
            f"{_call} returned {_got!r} ({type(_got).__name__}), expected a {_returns}"
        )
assert not _deepreflect_failed, "stated examples failed: " + "; ".join(_deepreflect_failed)
