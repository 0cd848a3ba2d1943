"""Check code asserting stated examples: the ``code`` of a ``python`` check.

Not imported: its text runs in the check's sandbox with the artifact's names in scope
(``agent.checks.examples.examples_check`` builds it). The host replaces the ``NAMES``,
``EXAMPLES``, ``SMOKE``, ``GIVEN`` and ``KEEP`` lines: every name must be defined and be
a function (or a class): a plain value never is one, and an object of the artifact's the
artifact itself says cannot be called fails (its yes passes nothing: the calls tell), every
(call, expected) pair must
hold, every smoke call (a call with values of the parameters' stated types) must neither
raise an error that means the code is broken (``TypeError``, ``NameError`` …) nor return
another type than the one stated, and every ``KEEP`` call must end as it does in ``GIVEN``,
the module the user gave (run here, in the check's process: it is not the artifact's code):
the same exception, or an equal plain value. All failures are quoted at once. A smoke call
that raises anything else (``ValueError``) passes: the goal may refuse that value. A
``KEEP`` call whose result in ``GIVEN`` differs between two calls (time, randomness) is not
compared. Every ``SHARED`` call, of a function a refactor moves shared code into (``GIVEN``
defines it as that code), returns what it returns in ``GIVEN``, a float up to rounding (the
code may be rearranged). Every ``PATHS`` call, of a function a stated example shows wrong in
``GIVEN`` (the bug to fix), ends as it does in ``GIVEN`` when, there, it runs a line of the
function that every failing example skips and skips one each runs: a fix of the even-length
``median`` must not change what an odd-length list returns. A ``KEEP`` failure is quoted
once per function, with what that function does after the code it shares (``OWN``) when a
refactor moves that code out of it.
"""

NAMES: list[str] = []
EXAMPLES: list[tuple[str, str]] = []
SMOKE: list[tuple[str, str]] = []
GIVEN: str = ""
KEEP: list[str] = []
SHARED: list[tuple[str, str]] = []
PATHS: list[str] = []
OWN: dict[str, str] = {}

from __deepreflect_bridge__.remote import (  # type: ignore[import-not-found]  # noqa: E402
    callable_by_its_word as _deepreflect_callable,
)


def _deepreflect_repr(value):
    """``repr(value)``, or what it is when its ``__repr__`` fails."""
    try:
        return repr(value)
    except Exception as exc:
        return f"an object whose repr() raised {type(exc).__name__}"


_deepreflect_failed: list[str] = []
for _name in NAMES:
    if _name not in globals():
        _deepreflect_failed.append(f"{_name} is not defined")
    elif not _deepreflect_callable(globals()[_name]):  # the artifact's no fails; its yes, no
        _deepreflect_failed.append(
            f"{_name} is not a function: the artifact binds it to "
            f"{_deepreflect_repr(globals()[_name])}, which cannot be called"
        )
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


def _deepreflect_plain(value, depth=0):
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    if depth > 4 or type(value) not in (list, tuple, set, frozenset, dict):
        return False
    items = [*value.keys(), *value.values()] if type(value) is dict else list(value)
    return all(_deepreflect_plain(item, depth + 1) for item in items)


def _deepreflect_matches(got, want):
    """Whether ``got`` is the stated result ``want`` (source), and why not. A result stated
    as plain data is compared with ``==`` only once its type is checked here: an object of
    the artifact's where the example states a str (an int, a list …) fails as that, never by
    its own ``==``. A result stated as an object (or as text that does not evaluate) is
    compared by ``repr``, the object's own text."""
    try:
        wanted = eval(want)
    except Exception:
        return repr(got) == want, ""
    if not _deepreflect_plain(wanted):
        return repr(got) == repr(wanted), ""
    if not _deepreflect_plain(got):
        return False, " (an object of the artifact's, not plain data)"
    if _deepreflect_kind(got) != _deepreflect_kind(wanted):
        return False, f" (a {type(got).__name__})"
    if _deepreflect_same(got, wanted):
        return True, ""
    return False, " (an item of another type)" if got == wanted else ""


def _deepreflect_kind(value):
    """What a value is for a stated example: a bool is not a number here (``1`` is not
    ``True``), an int and a float are one kind (``2.0`` answers ``2``), a complex is not a
    real number; anything else is its type."""
    kind = type(value)
    if kind is bool:
        return "bool"
    return "real" if kind in (int, float) else kind


def _deepreflect_same(got, wanted, depth=0):
    """``got == wanted`` with every item's kind checked too (``[1, 0]`` is not
    ``[True, False]``); both are plain data, so ``==`` is Python's own."""
    if _deepreflect_kind(got) != _deepreflect_kind(wanted):
        return False
    if depth < 8 and type(wanted) is dict:
        return got.keys() == wanted.keys() and all(
            _deepreflect_same(got[key], wanted[key], depth + 1) for key in wanted
        )
    if depth < 8 and type(wanted) in (list, tuple):
        return len(got) == len(wanted) and all(
            _deepreflect_same(g, w, depth + 1) for g, w in zip(got, wanted, strict=True)
        )
    return got == wanted


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
        _ok, _why = _deepreflect_matches(_got, _want)
        if not _ok:
            _deepreflect_failed.append(f"{_call} returned {_got!r}{_why}, expected {_want}")
    elif _returns == "None" and _got is not None:
        _deepreflect_failed.append(f"{_call} returned {_got!r}, expected None")
    elif _returns in _deepreflect_types and type(_got) not in _deepreflect_types[_returns]:
        _deepreflect_failed.append(
            f"{_call} returned {_got!r} ({type(_got).__name__}), expected a {_returns}"
        )


def _deepreflect_outcome(call, namespace):
    """How ``call`` ends in ``namespace``: ("raises", name) or ("returns", value)."""
    try:
        return ("returns", eval(call, namespace))
    except Exception as exc:
        return ("raises", type(exc).__name__)


def _deepreflect_equal(was, now):
    """Equal as a caller comparing with ``==`` sees it (``nan`` equal to itself): a
    refactor returning ``10.799999999999999`` for ``10.8`` changed what the call returns."""
    if not _deepreflect_plain(now):
        return False  # an object of the artifact's where plain data was: never its own ``==``
    if type(was) is float or type(now) is float:
        try:
            return was == now or repr(was) == repr(now)
        except Exception:
            return False
    return was == now


def _deepreflect_shown(outcome):
    how, value = outcome
    return f"raised {value}" if how == "raises" else f"returned {value!r}"


def _deepreflect_reference():
    """The module the user gave, run here; None when it does not run (nothing to compare)."""
    namespace = {"__name__": "__given__", "__builtins__": __builtins__}
    try:
        exec(compile(GIVEN, "given", "exec"), namespace)
    except BaseException:
        return None
    return namespace


_deepreflect_compare = (KEEP or SHARED or PATHS) and not _deepreflect_failed
_deepreflect_given = _deepreflect_reference() if _deepreflect_compare else None


def _deepreflect_kept(call, was, why, quote=True):
    """Whether ``call`` ends here as it did in the given file (``was``); else say so (when
    ``quote``)."""
    again = _deepreflect_outcome(call, _deepreflect_given)
    if was[0] != again[0] or (was[0] == "raises" and was[1] != again[1]):
        return True  # the given file itself does not end this call one way
    now = _deepreflect_outcome(call, globals())
    if was[0] == "raises":
        same = now[0] == "raises" and now[1] == was[1]
    elif now[0] == "raises":
        same = False
    else:  # a value only when it is plain data and the same twice: else any value will do
        value = _deepreflect_plain(was[1]) and _deepreflect_equal(was[1], again[1])
        same = not value or _deepreflect_equal(was[1], now[1])
    if not same and quote:
        _deepreflect_failed.append(
            f"{call} {_deepreflect_shown(now)}; in the given file it "
            f"{_deepreflect_shown(was)} ({why})"
        )
    return same


def _deepreflect_kept_all(calls):
    """Every ``KEEP`` call compared; quoted once per function and way it ended in the given
    file (returned, raised), then how many more of that function changed."""
    changed: dict[tuple[str, str], int] = {}  # (name, how it ended there): more changed
    for call in calls:
        name = call.split("(", 1)[0].strip()
        was = _deepreflect_outcome(call, _deepreflect_given)
        if (name, was[0]) in changed:
            changed[name, was[0]] += not _deepreflect_kept(call, was, "", quote=False)
            continue
        why = "the goal says to keep it as it is"
        if name in OWN and all(n != name for n, _ in changed):
            why += f"; after the code it shares, the given {name} does `{OWN[name]}`: keep that"
        if not _deepreflect_kept(call, was, why):
            changed[name, was[0]] = 0
    for (name, _), more in changed.items():
        if more:
            _deepreflect_failed.append(f"{more} more call(s) of {name} changed too")


if _deepreflect_given is not None:
    _deepreflect_kept_all(KEEP)


def _deepreflect_traced(call, name):
    """How ``call`` ends in the given file, and the lines of its function ``name`` it runs."""
    import sys

    code = getattr((_deepreflect_given or {}).get(name), "__code__", None)
    lines = set()

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        return _deepreflect_outcome(call, _deepreflect_given), lines
    finally:
        sys.settrace(before)


def _deepreflect_failing(name):
    """The stated examples of ``name`` the given file gets wrong, each with its lines."""
    found = []
    for call, want in EXAMPLES:
        if call.split("(", 1)[0].strip() != name:
            continue
        outcome, lines = _deepreflect_traced(call, name)
        try:
            wrong = outcome[0] == "raises" or not outcome[1] == eval(want)
        except Exception:
            wrong = repr(outcome[1]) != want
        if wrong and lines:
            found.append((call, lines))
    return found


if _deepreflect_given is not None and PATHS and not _deepreflect_failed:
    _deepreflect_bugs = {}
    for _call in PATHS:
        _name = _call.split("(", 1)[0].strip()
        if _name not in _deepreflect_bugs:
            _deepreflect_bugs[_name] = _deepreflect_failing(_name)
        if not _deepreflect_bugs[_name]:
            continue
        _was, _lines = _deepreflect_traced(_call, _name)
        _apart = all(_lines - b and b - _lines for _, b in _deepreflect_bugs[_name])
        _bug = _deepreflect_bugs[_name][0][0]
        if _apart and not _deepreflect_kept(
            _call, _was, f"a path the failing {_bug} does not take: fix the bug, keep the rest"
        ):
            break  # one such call says it; the others would repeat it


def _deepreflect_close(was, now):
    """Equal, numbers up to float rounding: moved code may compute in another order."""
    numbers = (int, float)
    if type(was) in numbers and type(now) in numbers and float in (type(was), type(now)):
        return abs(was - now) <= 1e-9 * max(1.0, abs(was), abs(now))
    return _deepreflect_equal(was, now)


if _deepreflect_given is not None:
    _deepreflect_moved = 0  # shared calls that differ; the first one is quoted
    for _call, _source in SHARED:
        _was = _deepreflect_outcome(_call, _deepreflect_given)
        _now = _deepreflect_outcome(_call, globals())
        if _was[0] == "raises":
            _same = _now[0] == "raises" and _now[1] == _was[1]
        else:
            _same = _now[0] == "returns" and (
                not _deepreflect_plain(_was[1]) or _deepreflect_close(_was[1], _now[1])
            )
        if not _same and not _deepreflect_moved:
            _deepreflect_failed.append(
                f"{_call} {_deepreflect_shown(_now)}; {_source} {_deepreflect_shown(_was)}"
                " (the goal moves that code into this function)"
            )
        _deepreflect_moved += not _same
    if _deepreflect_moved > 1:
        _deepreflect_failed.append(f"{_deepreflect_moved - 1} more call(s) of it differ too")
assert not _deepreflect_failed, "stated examples failed: " + "; ".join(_deepreflect_failed)
