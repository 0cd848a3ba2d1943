"""A revision of a file the step edits, asked for the failing functions only.

A step fixing the user's ``stats.py`` was asked for the whole corrected file, and the 1.5B
sent the given file back unchanged on every revision (also at a higher temperature), so the
run stopped on a repeated defect. Asked for the one function its evidence names
(``median([1, 2, 3, 4]) returned 3.5, expected 2.5``), with that function and the evidence
alone in the prompt, it fixed the index. The reply's functions are put back into the file by
code (:func:`splice`), so the rest of the file is kept as it was, byte for byte.

Pure: what the evidence names, the functions' sources and the splice are tested without a
model (the worker asks, :class:`agent.controller.worker.StepWorker`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Focus", "focus_for", "splice"]

MAX_FOCUSED = 3
"""A revision naming more failing functions than this is asked for the whole file."""


@dataclass(frozen=True)
class Focus:
    """The functions a revision is asked for: their sources as they are now, as the user's
    file had them (where they differ) and the module's functions they call."""

    names: tuple[str, ...]
    current: str
    given: str
    helpers: str


def _functions(source: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The module's top-level functions by name, or None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # a hostile reply too
        return None
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _segment(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A function's lines, its decorators included, ending with a newline."""
    lines = source.splitlines(keepends=True)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    text = "".join(lines[start : node.end_lineno])
    return text if text.endswith("\n") else text + "\n"


def _named(evidence: str, names: Sequence[str]) -> list[str]:
    """The names the evidence shows called (``median(``), in the module's order."""
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}\(", evidence)]


def focus_for(draft: str, given: str, evidence: str) -> Focus | None:
    """What a revision of ``draft`` (a Python module the step edits, ``given`` as the user's
    file had it) is asked for, from the failing ``evidence``; None when it should be asked
    for the whole file: the module does not parse, has one function, or the evidence names
    none of its functions, all of them or more than :data:`MAX_FOCUSED`."""
    functions = _functions(draft)
    if not functions or len(functions) < 2:
        return None
    names = _named(evidence, list(functions))
    if not names or len(names) == len(functions) or len(names) > MAX_FOCUSED:
        return None
    before = _functions(given) or {}
    current = "\n\n".join(_segment(draft, functions[n]) for n in names)
    changed = [
        _segment(given, before[n])
        for n in names
        if n in before and _segment(given, before[n]) != _segment(draft, functions[n])
    ]
    called = {
        node.id
        for n in names
        for node in ast.walk(functions[n])
        if isinstance(node, ast.Name) and node.id in functions and node.id not in names
    }
    helpers = [_segment(draft, functions[n]) for n in functions if n in called]
    return Focus(tuple(names), current, "\n\n".join(changed), "\n\n".join(helpers))


def splice(draft: str, reply: str) -> str | None:
    """``draft`` with the reply's top-level functions in place of its functions of the same
    names, new ones appended, and the reply's imports the module lacks added after its own;
    None when the reply does not parse or holds no function."""
    theirs = _functions(reply)
    mine = _functions(draft)
    if not theirs or mine is None:
        return None
    lines = draft.splitlines(keepends=True)
    # replace from the bottom up, so earlier line numbers still hold
    for name, node in sorted(mine.items(), key=lambda item: -item[1].lineno):
        if name in theirs:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            lines[start : node.end_lineno] = [_segment(reply, theirs[name])]
    text = "".join(lines)
    text = text if text.endswith("\n") else text + "\n"
    for name, node in theirs.items():
        if name not in mine:
            text += "\n\n" + _segment(reply, node)
    if _functions(text) is None:  # never hand back a module that no longer parses
        return None
    return _with_imports(text, reply)


def _with_imports(module: str, reply: str) -> str:
    """``module`` with the reply's top-level import lines it does not have yet, put after
    its docstring and its own imports."""
    tree = ast.parse(reply)
    wanted = [
        ast.get_source_segment(reply, node)
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    have = set(module.splitlines())
    missing = [line for line in wanted if line and line not in have]
    if not missing:
        return module
    body = ast.parse(module).body
    after = 0
    for node in body:
        is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if is_doc or isinstance(node, ast.Import | ast.ImportFrom):
            after = node.end_lineno or after
        else:
            break
    lines = module.splitlines(keepends=True)
    lines[after:after] = [line + "\n" for line in missing]
    return "".join(lines)
