"""The functions a plan's checks assert exist but never run: an ``end`` over them claims
more than the evidence shows.

A check raised to the floor (:mod:`agent.plan.floor`) proves what the goal states of a
module: its examples, the calls it must keep, the types its calls return. A goal that
describes a function in prose only ("``split_words(text)`` returns the words of text, runs
of letters, digits or apostrophes, lowercased") states none of these, so the floor can only
assert that the function is defined. On the 1.5B a ``textkit/words.py`` whose
``split_words`` neither lowercased nor dropped punctuation passed that way, and the run
ended ``success`` (a false success). Reflection asks a human instead
(:func:`agent.reflection.rules.held_to_evidence`); this module finds those functions.

A function counts as run when any check of the plan calls it: a stated example, smoke call
or kept call of a floor check (``examples``), a call in a ``python`` check's code, or in the
test files a ``pytest`` check runs. The model-written examples that could replace a human here were
measured and not kept: Qwen2.5-Coder-1.5B, asked for examples of HumanEval/0–14 from their
descriptions, wrote 8 right and 18 wrong (docs/real-model-eval.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_CALLED = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*\(")


def unrun_functions(
    plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Per artifact of ``plan``: the functions its checks assert are defined that no check of
    the plan ever calls (artifacts with none are left out)."""
    defined: dict[str, list[str]] = {}
    called: set[str] = set()
    for step in (plan or {}).get("steps") or []:
        if not isinstance(step, Mapping):
            continue
        path = str(step.get("expected_output", ""))
        for part in _parts(step.get("done_when")):
            names, calls = _asserted(part, files)
            defined.setdefault(path, []).extend(names)
            called |= calls
    unrun = {
        path: [n for n in dict.fromkeys(names) if n not in called]
        for path, names in defined.items()
    }
    return {path: names for path, names in unrun.items() if names}


def _asserted(
    part: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], set[str]]:
    """What one check part asserts is defined, and the names it calls."""
    kind = part.get("kind")
    stated = part.get("stated")
    if kind == "syntax":
        return _names(part.get("defines")), set()
    if kind == "examples":  # a floor check: what it states, typed
        said = [part.get(k) for k in ("examples", "smoke", "keep", "shared", "paths")]
        calls = {n for v in said for n in _called(_calls_in(v))}
        return _names(part.get("defines")), calls
    if kind == "python" and isinstance(stated, Mapping):  # an older plan's floor check
        calls = {n for key, v in stated.items() if key != "defines" for n in _called(v)}
        return _names(stated.get("defines")), calls
    if kind == "python":
        return [], _called(part.get("code", ""))
    if kind == "pytest":
        tests = part.get("tests") or []
        return [], {n for t in tests for n in _called((files.get(str(t)) or {}).get("content"))}
    return [], set()


def _parts(spec: Any) -> Iterator[Mapping[str, Any]]:
    """The parts of a ``done_when`` spec, an ``all``'s included."""
    if not isinstance(spec, Mapping):
        return
    if spec.get("kind") == "all" and isinstance(spec.get("checks"), list):
        for part in spec["checks"]:
            yield from _parts(part)
    else:
        yield spec


def _calls_in(value: Any) -> list[str]:
    """The call strings of a typed part's list: strings, or objects with a ``call``."""
    if not isinstance(value, list):
        return []
    return [str(v.get("call", "")) if isinstance(v, Mapping) else str(v) for v in value]


def _names(value: Any) -> list[str]:
    return [n for n in value if isinstance(n, str)] if isinstance(value, list) else []


def _called(value: Any) -> set[str]:
    """The names called in ``value``: source text, or a list of call strings."""
    if isinstance(value, list):
        return {n for item in value for n in _called(item)}
    return set(_CALLED.findall(value)) if isinstance(value, str) else set()
