"""What a goal needs of a plan, repaired by code before the plan is validated
(``agent.plan.validation.parse_plan``).

Small models plan ceremony: "Write report.md" becomes notes, the report, a summary and a
critique, each a step and a file the user never asked for; a step whose check reads a
file another step writes forgets to depend on it; and a file is named the way a test runner
or a traceback points into it ("stats.py::test_median", "stats.py:12"). These are repaired
here rather than sent back to the model, which repeats them:

- ``<file>:<anything>``, as a step's output or a pytest check's test, is ``<file>`` when
  ``<file>`` is a file the goal names, a thread file or another step's output;
- an output in the steps' scratch space (``work/S1/stats.py``, ``work/stats.py``: what a
  replan copies from the critiques it is shown) is the path below it (``stats.py``) when
  that is a file the goal names, a thread file or another step's output, and the checks
  that name the old path name the new one;

- a step whose pytest check runs the test file it writes itself (the artifact would decide
  its own verdict) hands that check to the step writing the module the tests are for: the
  module the goal names that another step writes, else the one module the plan writes
  (:func:`own_tests_moved`; the 1.5B planned "write tests/test_stats.py, done when pytest
  tests/test_stats.py passes" for a bug in stats.py);
- a check that names a file another step writes makes its step depend on that step (when
  that adds no cycle);
- when the plan writes two or more modules and no step writing one runs after all the
  others, one does (:func:`one_after_all_modules`): a package's ``__init__.py``, else the
  last module planned. That step's check imports them all; on the 1.5B a replan left
  ``textkit/words.py``, ``count.py`` and ``__init__.py`` unordered, each passed a parse,
  and the run ended ``success`` with a package whose functions were never called;
- when the goal names the files it wants and the plan writes some of them, a step that is
  not connected to those steps by dependencies (neither read by them nor reading them,
  directly or through other steps) is dropped: it writes something the goal does not ask
  for and nothing asked for needs. A step that reads an asked file (documentation of the
  code, say) stays. A goal that names no file the plan writes is left as planned.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterator
from typing import Any

from agent.plan.steps import Step, dependency_cycle
from agent.vfs.entries import SCRATCH, is_scratch
from agent.vfs.filenames import is_test_file

__all__ = [
    "depend_on_checked_files",
    "one_after_all_modules",
    "named_files",
    "needed_steps",
    "out_of_scratch",
    "own_tests_moved",
    "without_references",
]

# a relative file name in the goal's text, not the tail of an absolute or climbing path; its
# extension starts with a letter, so "2.5" or "v1.2" is not a file
_NAMED_FILE = re.compile(r"(?<![\w./\\~-])[A-Za-z0-9_][\w./-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b")


def named_files(goal: str) -> list[str]:
    """The relative file names a goal's text mentions, in order, once each."""
    return list(dict.fromkeys(m.rstrip(".") for m in _NAMED_FILE.findall(goal)))


def without_references(steps: list[Step], known: Collection[str]) -> list[Step]:
    """``steps`` with ``<file>:<anything>`` outputs and pytest tests cut back to ``<file>``
    where ``<file>`` is known: in ``known`` (the goal's and the thread's files) or another
    step's output."""
    files = set(known) | {s.expected_output for s in steps if ":" not in s.expected_output}

    def cut(path: str) -> str:
        head = path.split(":", 1)[0]
        return head if ":" in path and head in files else path

    out = []
    for step in steps:
        update: dict[str, Any] = {}
        if cut(step.expected_output) != step.expected_output:
            update["expected_output"] = cut(step.expected_output)
        check = step.done_when
        tests = check.get("tests") if isinstance(check, dict) else None
        if isinstance(check, dict) and isinstance(tests, list):
            fixed = [cut(t) if isinstance(t, str) else t for t in tests]
            if fixed != tests:
                update["done_when"] = {**check, "tests": list(dict.fromkeys(fixed))}
        out.append(step.model_copy(update=update) if update else step)
    return out


def out_of_scratch(steps: list[Step], known: Collection[str]) -> list[Step]:
    """``steps`` with each scratch output (``work/S1/stats.py``) moved to the path below
    the scratch folder (``stats.py``) where that path is known: in ``known`` (the goal's
    and the thread's files) or another step's output; a check naming the old path names
    the new one. Unknown paths stay, for ``plan_errors`` to refuse."""
    ids = {s.step_id for s in steps}
    files = set(known) | {s.expected_output for s in steps if not is_scratch(s.expected_output)}
    moved: dict[str, str] = {}
    for step in steps:
        path = step.expected_output
        if not is_scratch(path):
            continue
        below = path[len(SCRATCH) :]
        head, _, rest = below.partition("/")
        target = rest if rest and (head in ids or re.fullmatch(r"S\d+", head)) else below
        if target in files:
            moved[path] = target
    if not moved:
        return steps
    return [_moved(step, moved) for step in steps]


def _moved(step: Step, moved: dict[str, str]) -> Step:
    update: dict[str, Any] = {}
    if step.expected_output in moved:
        update["expected_output"] = moved[step.expected_output]
    check = _renamed(step.done_when, moved)
    if check != step.done_when:
        update["done_when"] = check
    return step.model_copy(update=update) if update else step


def _renamed(value: Any, moved: dict[str, str]) -> Any:
    """``value`` (a check spec) with every string that is a moved path replaced."""
    if isinstance(value, str):
        return moved.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, moved) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, moved) for v in value]
    return value


def own_tests_moved(steps: list[Step], asked: Collection[str]) -> list[Step]:
    """``steps`` where a step's pytest check of the tests it writes itself is moved to the
    step writing the module they test (module docstring); the test step keeps the rest of
    its check (``non_empty`` when nothing is left). Unchanged when no one module is the
    target, or the tests depend on it: plan validation explains the problem then."""
    out = list(steps)
    for i, step in enumerate(steps):
        own = step.expected_output
        if own not in _pytest_tests(step.done_when):
            continue
        target = _tested_module(out, step, asked)
        if target is None:
            continue
        out[i] = step.model_copy(update={"done_when": _without_tests(step.done_when, own)})
        j = next(n for n, s in enumerate(out) if s.step_id == target.step_id)
        out[j] = target.model_copy(update={"done_when": _with_tests(target.done_when, own)})
    return out


def _tested_module(steps: list[Step], tests: Step, asked: Collection[str]) -> Step | None:
    modules = [
        s
        for s in steps
        if s.step_id != tests.step_id
        and s.expected_output.lower().endswith(".py")
        and not is_test_file(s.expected_output)
    ]
    named = [s for s in modules if s.expected_output in set(asked)]
    chosen = named if named else modules
    if len(chosen) != 1 or chosen[0].step_id in tests.depends_on:
        return None  # tests written after their module cannot check it: a cycle
    return chosen[0]


def _pytest_tests(spec: Any) -> list[str]:
    if not isinstance(spec, dict):
        return []
    if spec.get("kind") == "all":
        return [t for part in spec.get("checks") or [] for t in _pytest_tests(part)]
    tests = spec.get("tests") if spec.get("kind") == "pytest" else None
    return [t for t in tests if isinstance(t, str)] if isinstance(tests, list) else []


def _without_tests(spec: Any, test: str, *, part: bool = False) -> Any:
    """``spec`` without ``test`` among its pytest checks' tests (a pytest check left with
    none is dropped from an ``all``; a check left empty is ``non_empty``)."""
    if isinstance(spec, dict) and spec.get("kind") == "all":
        parts = [_without_tests(p, test, part=True) for p in spec.get("checks") or []]
        kept = [p for p in parts if p is not None]
        if not kept:
            return {"kind": "non_empty"}
        return kept[0] if len(kept) == 1 else {**spec, "checks": kept}
    if isinstance(spec, dict) and spec.get("kind") == "pytest":
        left = [t for t in spec.get("tests") or [] if t != test]
        if not left:
            return None if part else {"kind": "non_empty"}
        return {**spec, "tests": left}
    return spec


def _with_tests(spec: Any, test: str) -> dict[str, Any]:
    """``spec`` with a pytest check of ``test`` after what it checked."""
    pytest_check = {"kind": "pytest", "tests": [test]}
    if isinstance(spec, dict) and spec.get("kind") == "all":
        return {**spec, "checks": [*(spec.get("checks") or []), pytest_check]}
    if spec is None:
        return pytest_check
    return {"kind": "all", "checks": [spec, pytest_check]}


def depend_on_checked_files(steps: list[Step]) -> list[Step]:
    """``steps`` where each step also depends on the steps writing the files its check
    names, unless that would make a cycle (then ``plan_errors`` explains it)."""
    writers = {s.expected_output: s.step_id for s in steps}
    out = list(steps)
    for i, step in enumerate(out):
        wanted = [
            writers[text]
            for text in _strings(step.done_when)
            if text in writers and writers[text] != step.step_id
        ]
        missing = [w for w in dict.fromkeys(wanted) if w not in step.depends_on]
        if not missing:
            continue
        candidate = step.model_copy(update={"depends_on": [*step.depends_on, *missing]})
        trial = [*out[:i], candidate, *out[i + 1 :]]
        if dependency_cycle(trial) is None:
            out = trial
    return out


def one_after_all_modules(steps: list[Step]) -> list[Step]:
    """``steps`` where one step writing a module depends on every other step writing one
    (module docstring), when none does yet and that adds no cycle; else unchanged."""
    modules = [s for s in steps if s.expected_output.lower().endswith(".py")]
    modules = [s for s in modules if not is_test_file(s.expected_output)]
    ids = [s.step_id for s in modules]
    if len(set(ids)) < 2 or len(set(ids)) != len(ids):
        return steps
    if any(set(ids) - {s.step_id} <= set(s.depends_on) for s in modules):
        return steps
    inits = [s for s in modules if posixpath.basename(s.expected_output) == "__init__.py"]
    inits.sort(key=lambda s: s.expected_output.count("/"))
    for sink in [*inits, *reversed(modules)]:
        wanted = [i for i in ids if i != sink.step_id and i not in sink.depends_on]
        candidate = sink.model_copy(update={"depends_on": [*sink.depends_on, *wanted]})
        trial = [candidate if s.step_id == sink.step_id else s for s in steps]
        if dependency_cycle(trial) is None:
            return trial
    return steps


def needed_steps(steps: list[Step], asked: Collection[str]) -> list[Step]:
    """The steps connected by dependencies to the steps writing an asked file (``asked``:
    the files the goal names), in plan order; ``steps`` unchanged when no step writes an
    asked file or an id is ambiguous."""
    if len({s.step_id for s in steps}) != len(steps):
        return steps
    wanted = set(asked)
    roots = [s.step_id for s in steps if s.expected_output in wanted]
    if not roots:
        return steps
    neighbours: dict[str, set[str]] = {s.step_id: set() for s in steps}
    for step in steps:
        for dep in step.depends_on:
            if dep in neighbours and dep != step.step_id:
                neighbours[step.step_id].add(dep)
                neighbours[dep].add(step.step_id)
    keep: set[str] = set()
    todo = list(roots)
    while todo:
        step_id = todo.pop()
        if step_id not in keep:
            keep.add(step_id)
            todo.extend(neighbours[step_id])
    return [s for s in steps if s.step_id in keep]


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a check spec (a rubric is one string)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
