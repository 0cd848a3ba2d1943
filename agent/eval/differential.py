"""The probe, run in the sandbox: look for an input on which a mutant and its reference differ.

``python probe.py ENTRY BUDGET_S`` in a folder holding ``reference.py``, ``mutant.py`` and
``check.py`` (the task's python check). The check runs once against the reference with the
entry point wrapped, which records every call it makes; then the reference and the mutant run
on those inputs and on simple perturbations of them, each call under a short timer. Inputs on
which the reference raises or is slow are skipped. The verdict is the last line of stdout
that starts with :data:`MARK`, as JSON: ``differs`` with the witness input, ``equivalent``
when every input tried agreed and none was left untried, else ``inconclusive``.

Standard library only: deepreflect is not importable in the sandbox. Importing this file runs
nothing (the host reads :data:`MARK` from it); the work starts in :func:`main`.
"""

from __future__ import annotations

import builtins
import copy
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

MARK = "__deepreflect_probe__ "
CALL_LIMIT_S = 0.25
MAX_RECORDED = 200
MAX_INPUTS = 400

Args = tuple[tuple[Any, ...], dict[str, Any]]
Outcome = tuple[str, Any]
"""``("ok", value)``, ``("raise", exception name)`` or ``("slow", None)``."""


class Slow(BaseException):
    """A call ran past CALL_LIMIT_S (not an Exception, so the code under probe cannot catch
    it with ``except Exception``)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Slow()


def load(path: str) -> dict[str, Any]:
    """Run a module's source in a fresh namespace, as the check's own runner does."""
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), namespace)
    return namespace


def call(fn: Callable[..., Any], args: Args) -> Outcome:
    """One call on a copy of its arguments (a function that mutates them must not change the
    next call's), under the per-call timer."""
    try:
        positional, named = copy.deepcopy(args)
        signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT_S, CALL_LIMIT_S / 5)
        try:
            out: Outcome = ("ok", fn(*positional, **named))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return out
    except Slow:
        return ("slow", None)
    except BaseException as exc:
        return ("raise", type(exc).__name__)


def same(a: Outcome, b: Outcome) -> bool:
    """Equal outcomes: by ``==`` when it gives a plain True, else by ``repr``."""
    if a[0] != b[0]:
        return False
    try:
        equal = a[1] == b[1]
        if isinstance(equal, bool) and equal:
            return True
    except Exception:
        pass
    return repr(a[1]) == repr(b[1])


def variants(value: Any, depth: int = 0) -> list[Any]:
    """Simple perturbations of one argument: the edges where off-by-one errors show."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, 0, 1, -value, 2 * value + 1]
    if isinstance(value, float):
        return [value + 1.0, value - 1.0, 0.0, -value, value / 2]
    if isinstance(value, str):
        return [
            "",
            value[::-1],
            value[1:],
            value[:-1],
            value + value[:1],
            value.upper(),
            value.lower(),
            value.swapcase(),
            " " + value,
        ]
    if isinstance(value, list | tuple):
        return _sequence_variants(value, depth)
    if isinstance(value, dict):
        return [{}, dict(list(value.items())[1:])]
    return []


def _sequence_variants(value: list[Any] | tuple[Any, ...], depth: int) -> list[Any]:
    """Shorter, longer, reversed, and (at the top level) the first or last item perturbed."""
    kind = type(value)
    out = [
        kind(),
        kind(value[::-1]),
        kind(value[1:]),
        kind(value[:-1]),
        kind(list(value) + list(value[:1])),
    ]
    if len(value) > 1:
        out.append(kind(value[:1]))
    if value and depth == 0:
        for at in {0, len(value) - 1}:
            for other in variants(value[at], 1)[:4]:
                changed = list(value)
                changed[at] = other
                out.append(kind(changed))
    return out


def record_calls(namespace: dict[str, Any], entry: str, check: str) -> list[Args]:
    """Run the check in the reference's namespace with the entry point wrapped; return every
    input it passed (the first MAX_RECORDED). Whether the check passes does not matter here."""
    original = namespace[entry]
    recorded: list[Args] = []

    def recorder(*args: Any, **kwargs: Any) -> Any:
        if len(recorded) < MAX_RECORDED:
            try:
                recorded.append(copy.deepcopy((args, kwargs)))
            except Exception:
                pass
        return original(*args, **kwargs)

    namespace[entry] = recorder
    try:
        with open(check, encoding="utf-8") as handle:
            exec(compile(handle.read(), check, "exec"), namespace)
    except BaseException:
        pass
    namespace[entry] = original
    return recorded


def inputs(recorded: list[Args]) -> Iterator[Args]:
    """The recorded inputs, then each with one positional argument perturbed."""
    yield from recorded
    for positional, named in recorded:
        for at, value in enumerate(positional):
            for other in variants(value):
                yield positional[:at] + (other,) + positional[at + 1 :], named


def search(
    reference: Callable[..., Any],
    mutant: Callable[..., Any],
    recorded: list[Args],
    budget_s: float,
) -> dict[str, Any]:
    """Try the inputs until one tells the two apart, or the inputs or the time run out."""
    deadline = time.monotonic() + budget_s
    seen: set[str] = set()
    tried, skipped, complete = 0, 0, True
    for args in inputs(recorded):
        key = repr(args)
        if key in seen:
            continue
        seen.add(key)
        if tried >= MAX_INPUTS or time.monotonic() > deadline:
            complete = False
            break
        expected = call(reference, args)
        if expected[0] != "ok":
            skipped += 1
            continue
        got = call(mutant, args)
        tried += 1
        if not same(expected, got):
            counts = {"tried": tried, "skipped": skipped, "recorded": len(recorded)}
            return {"verdict": "differs", **counts, **_witness(args, expected, got)}
    verdict = "equivalent" if tried and complete else "inconclusive"
    return {"verdict": verdict, "tried": tried, "skipped": skipped, "recorded": len(recorded)}


def _witness(args: Args, expected: Outcome, got: Outcome) -> dict[str, str]:
    """The input and both outcomes, short enough for a report line."""
    if got[0] == "ok":
        shown = repr(got[1])[:120]
    else:
        shown = f"<{got[0]} {got[1] or ''}>".replace(" >", ">")
    return {"witness": repr(args)[:200], "reference": repr(expected[1])[:120], "mutant": shown}


def report(info: dict[str, Any]) -> None:
    """The verdict on a line of its own, after whatever the code under probe printed."""
    sys.stdout.flush()
    sys.stdout.write("\n" + MARK + json.dumps(info) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    entry, budget_s = argv[0], float(argv[1])
    signal.signal(signal.SIGALRM, _alarm)
    namespace = load("reference.py")
    reference = namespace[entry]
    recorded = record_calls(namespace, entry, "check.py")
    mutant = load("mutant.py")[entry]
    report(search(reference, mutant, recorded, budget_s))


if __name__ == "__main__":
    main(sys.argv[1:])
