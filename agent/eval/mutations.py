"""Seeded errors: deterministic mutation operators that plant one error in a reference.

:func:`mutants` applies the operators of :data:`OPERATORS` to a task's reference: one mutant
per operator and task, at a site chosen by a seeded generator among the operator's sites in
the solution part (after the stub). Each mutant differs from the reference in one expression
or statement; the rest of the text is untouched.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agent.eval.datasets import Task

__all__ = ["OPERATORS", "Mutant", "mutants"]


@dataclass(frozen=True)
class Mutant:
    """A reference with one planted error."""

    operator: str
    line: int
    """Line of the artifact where the error was planted (1-based)."""
    before: str
    after: str
    source: str
    """The whole mutated artifact."""


_SWAP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_SWAP_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
# A site: (the node whose source text is replaced, the replacement text)
_Site = tuple[ast.AST, str]


def _comparison(node: ast.AST) -> Iterator[_Site]:
    """``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``==`` ↔ ``!=``, ``in`` ↔ ``not in``, ``is`` ↔ ``is not``
    (the first operator of a chain)."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAP_COMPARE:
        ops = [_SWAP_COMPARE[type(node.ops[0])](), *node.ops[1:]]
        yield node, _paren(ast.Compare(left=node.left, ops=ops, comparators=node.comparators))


def _off_by_one(node: ast.AST) -> Iterator[_Site]:
    """``range(.., stop)`` → ``range(.., stop - 1)``; a constant index or slice bound ``k`` →
    ``k + 1``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if 1 <= len(node.args) <= 3 and not node.keywords:
            stop = node.args[0] if len(node.args) == 1 else node.args[1]
            yield stop, _paren(ast.BinOp(left=stop, op=ast.Sub(), right=ast.Constant(1)))
    if isinstance(node, ast.Subscript):
        bounds: list[ast.expr | None] = [node.slice]
        if isinstance(node.slice, ast.Slice):
            bounds = [node.slice.lower, node.slice.upper]
        for bound in bounds:
            value = _int_constant(bound)
            if value is not None and bound is not None:
                yield bound, str(value + 1)


def _return_value(node: ast.AST) -> Iterator[_Site]:
    """``return True`` ↔ ``return False``; any other ``return value`` → ``return None``."""
    if isinstance(node, ast.Return) and node.value is not None:
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            yield node, f"return {not value.value}"
        elif not (isinstance(value, ast.Constant) and value.value is None):
            yield node, "return None"


def _negate_condition(node: ast.AST) -> Iterator[_Site]:
    """The condition of an ``if``, ``while``, conditional expression or comprehension filter
    → ``not (condition)``."""
    tests: list[ast.expr] = []
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        tests.append(node.test)
    if isinstance(node, ast.comprehension):
        tests.extend(node.ifs)
    for test in tests:
        yield test, _paren(ast.UnaryOp(op=ast.Not(), operand=test))


def _arithmetic(node: ast.AST) -> Iterator[_Site]:
    """``+`` ↔ ``-``, ``*`` ↔ ``//``, ``/`` → ``*``, ``%`` → ``//`` (also in ``x += 1``)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _SWAP_ARITH:
        swapped = ast.BinOp(left=node.left, op=_SWAP_ARITH[type(node.op)](), right=node.right)
        yield node, _paren(swapped)
    if isinstance(node, ast.AugAssign) and type(node.op) in _SWAP_ARITH:
        swapped_aug = ast.AugAssign(
            target=node.target, op=_SWAP_ARITH[type(node.op)](), value=node.value
        )
        yield node, ast.unparse(swapped_aug)


OPERATORS: dict[str, Callable[[ast.AST], Iterator[_Site]]] = {
    "comparison": _comparison,
    "off_by_one": _off_by_one,
    "return_value": _return_value,
    "negate_condition": _negate_condition,
    "arithmetic": _arithmetic,
}
"""Mutation operators by name; each yields (node, replacement source) for the sites it finds."""


def _paren(node: ast.expr) -> str:
    return f"({ast.unparse(node)})"


def _int_constant(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_constant(node.operand)
        return -inner if inner is not None else None
    return None


def mutants(task: Task, *, seed: int = 0, operators: list[str] | None = None) -> list[Mutant]:
    """One mutant of ``task.reference`` per operator that has a site in the solution part.

    The site is drawn by ``random.Random(f"{seed}:{task.id}:{operator}")``, so the same seed
    always plants the same errors. Code inside f-strings is never mutated (Python 3.11 reports
    no reliable positions there), and a mutant identical to the reference or to another
    mutant, or one that no longer parses, is dropped.
    """
    reference = task.reference
    if not reference:
        return []
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return []
    first_line = _first_solution_line(reference, task.stub)
    in_fstring = {
        id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)
    }
    # nodes without a position (comprehension clauses) stay; their sites are filtered below
    nodes = [
        n
        for n in ast.walk(tree)
        if id(n) not in in_fstring and getattr(n, "lineno", first_line) >= first_line
    ]
    out: list[Mutant] = []
    seen = {reference}
    for name in operators or list(OPERATORS):
        sites = [site for node in nodes for site in OPERATORS[name](node)]
        sites = [s for s in sites if getattr(s[0], "lineno", 0) >= first_line]
        sites.sort(key=lambda s: (_position(s[0]), s[1]))
        if not sites:
            continue
        node, replacement = random.Random(f"{seed}:{task.id}:{name}").choice(sites)
        source, before = _splice(reference, node, replacement)
        if source in seen or not _parses(source):
            continue
        seen.add(source)
        lineno = _position(node)[0]
        out.append(Mutant(name, lineno, before, replacement, source))
    return out


def _first_solution_line(reference: str, stub: str | None) -> int:
    """The first line the mutation operators may touch: the line after the stub, if any."""
    if stub and reference.startswith(stub):
        return stub.count("\n") + 1
    return 1


def _splice(source: str, node: ast.AST, replacement: str) -> tuple[str, str]:
    """Replace the exact source text of ``node``; return (new source, the text replaced).

    AST columns are UTF-8 byte offsets, so the splice works on the encoded lines."""
    lines = source.encode("utf-8").splitlines(keepends=True)
    line, col, end_line, end_col = _position(node)
    start = sum(len(x) for x in lines[: line - 1]) + col
    end = sum(len(x) for x in lines[: end_line - 1]) + end_col
    data = source.encode("utf-8")
    before = data[start:end].decode("utf-8")
    return (data[:start] + replacement.encode("utf-8") + data[end:]).decode("utf-8"), before


def _position(node: ast.AST) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of a node that has a position."""
    return (
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno,  # type: ignore[attr-defined]
        node.end_col_offset,  # type: ignore[attr-defined]
    )


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True
