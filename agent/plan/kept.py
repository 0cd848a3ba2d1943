"""What a step rewriting one of the user's modules must keep: its public functions and
classes stay defined (:func:`public_names`), and the functions the goal's criteria say to
keep as they are (:mod:`agent.plan.criteria`) behave as they did in the file the user gave,
on calls made from their signatures (:func:`probe_calls`).

On the 1.5B a fixed ``stats.py`` kept ``mean`` but dropped the ``ValueError`` it raised for
no values, which the goal said to keep and a hidden regression test asserts; the floor's
names and examples passed it. The given module runs in the check's process (it is the
user's code, never the artifact's), so the artifact cannot change what it is compared with;
a module importing anything but the standard library is not compared (its reference would
depend on files a step may rewrite).
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "MAX_GIVEN_CHARS",
    "caller_rests",
    "comparable",
    "probe_calls",
    "public_names",
    "shared_code",
]

MAX_GIVEN_CHARS = 50_000
"""A bigger given module is not embedded in its check (kept names still apply)."""
MAX_PROBES_PER_FUNCTION = 8
MAX_PROBES = 32


def public_names(source: str) -> list[str]:
    """The public functions and classes a module defines at its top level, in order (none
    when it does not parse, or is too big to parse safely): what a step editing the user's
    module must keep."""
    body = _body(source)
    defined = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [n.name for n in body if isinstance(n, defined) and not n.name.startswith("_")]


def comparable(source: str) -> bool:
    """Whether the given module can be run beside the artifact as its reference: it parses,
    is not too big, and imports only the standard library."""
    if len(source) > MAX_GIVEN_CHARS:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            tops = [(node.module or "").split(".")[0]] if not node.level else [""]
        else:
            continue
        if any(t not in sys.stdlib_module_names for t in tops):
            return False
    return True


def probe_calls(source: str, functions: Sequence[str]) -> list[str]:
    """Calls of each of ``functions`` (top-level functions of ``source``) with values of its
    parameters' annotated types, edge values first (``mean([])``, ``mean([2.5])`` …); a
    parameter with no annotation takes values of several types (a call both versions refuse
    the same way compares equal). A function with a parameter of a type no value can be made
    for, or with no required parameter, gets none."""
    defs = {
        n.name: n
        for n in _body(source)
        if isinstance(n, ast.FunctionDef) and n.name in set(functions)
    }
    calls: list[str] = []
    for name in functions:
        fn = defs.get(name)
        if fn is not None:
            calls += _probes(fn)[:MAX_PROBES_PER_FUNCTION]
    return calls[:MAX_PROBES]


def shared_code(shares: bool, given: str, new: ast.FunctionDef, callers: Sequence[str]) -> str:
    """The source of ``new`` (a signature the goal writes) as the code ``callers`` (functions
    of ``given`` the goal says must call it) share, when the goal moves shared code into it
    (``shares``, a criterion of the goal, :mod:`agent.plan.criteria`):
    their common first statements, returning the one name those statements assign that every
    caller reads after them; empty when that is not so (the parameters differ, nothing is
    shared, the shared part returns or assigns no such name). On the 1.5B, a
    ``discounted_total`` that rounded its result kept both callers' behaviour and failed
    the hidden test of the function itself."""
    split = _shared_split(shares, given, new, callers)
    if split is None:
        return ""
    lines = [f"def {new.name}({ast.unparse(split.args)}):"]
    lines += [textwrap.indent(ast.unparse(statement), "    ") for statement in split.prefix]
    return "\n".join([*lines, f"    return {split.carried}"]) + "\n"


def caller_rests(
    shares: bool, given: str, new: ast.FunctionDef, callers: Sequence[str]
) -> dict[str, str]:
    """What each caller of :func:`shared_code` does after the part it shares, as one line of
    source (``music_price`` → ``return round(total * 1.2, 2)``): what a refactor must leave
    in it. On the 1.5B, both callers became ``return discounted_total(...)``, and told five
    times that ``music_price(1.5, 1, False)`` returned 1.5 where it returned 1.8, it never
    found the ``* 1.2`` it had dropped; the evidence now quotes it. Empty when no code is
    shared."""
    split = _shared_split(shares, given, new, callers)
    if split is None:
        return {}
    return {name: "; ".join(ast.unparse(s) for s in rest) for name, rest in split.rests.items()}


class _Split(NamedTuple):
    args: ast.arguments  # the first caller's parameters, as the given file writes them
    prefix: list[ast.stmt]  # the statements every caller starts with
    carried: str  # the one name they assign that every caller reads after them
    rests: dict[str, list[ast.stmt]]  # each caller's statements after the shared part


def _shared_split(
    shares: bool, given: str, new: ast.FunctionDef, callers: Sequence[str]
) -> _Split | None:
    """How the callers split into shared code and their own; None when the goal moves no
    such shared code into ``new`` (``shares``: the goal's criterion says it does;
    :func:`shared_code`)."""
    if not shares or len(callers) < 2:
        return None
    defs = {n.name: n for n in _body(given) if isinstance(n, ast.FunctionDef)}
    bodies = [defs[c] for c in callers if c in defs]
    if len(bodies) != len(callers) or any(_params(f) != _params(new) for f in bodies):
        return None
    statements = [_without_docstring(f.body) for f in bodies]
    prefix: list[ast.stmt] = []
    for parts in zip(*statements, strict=False):
        if any(ast.dump(p) != ast.dump(parts[0]) for p in parts):
            break
        prefix.append(parts[0])
    if not prefix or any(
        isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for s in prefix for n in ast.walk(s)
    ):
        return None
    assigned = [
        n.id
        for s in prefix
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    ]
    read = [
        {
            n.id
            for s in body[len(prefix) :]
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for body in statements
    ]
    carried = [name for name in dict.fromkeys(assigned) if all(name in r for r in read)]
    if len(carried) != 1:
        return None
    rests = {f.name: body[len(prefix) :] for f, body in zip(bodies, statements, strict=True)}
    return _Split(bodies[0].args, prefix, carried[0], rests)


def _params(fn: ast.FunctionDef) -> list[str]:
    args = fn.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    return body[1:] if docstring else body


MAX_PARSED_CHARS = 1_000_000
"""A bigger module is not parsed for its names: ``ast`` on megabytes of nested code can
exhaust memory, and a user's file is bounded input."""


def _body(source: str) -> list[ast.stmt]:
    if len(source) > MAX_PARSED_CHARS:
        return []
    try:
        return ast.parse(source).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []


_ANY = ["0", "''", "[]", "None", "3", "'abc'", "[3, 1, 2]", "2.5", "-2"]
_VALUES = {
    "int": ["0", "1", "-3", "10"],
    "float": ["0.0", "1.5", "-2.5", "10", "3.14159"],  # the last one not round to cents
    "str": ["''", "'abc'", "'Hello, World'", "' a b '"],
    "bool": ["True", "False"],
    "bytes": ["b''", "b'abc'"],
    "dict": ["{}", "{'a': 1, 'b': 2}"],
    "list": ["[]", "[1]", "[3, 1, 2]", "[1, 2, 3, 4]"],
    "tuple": ["()", "(1, 2)"],
    "set": ["set()", "{1, 2}"],
}
_ITEMS = {
    "int": ["[]", "[5]", "[1, 2, 3, 4]", "[3, 1, 2]", "[-1, 0, 1]"],
    "float": ["[]", "[2.5]", "[1.5, 2.5, 4.0]", "[3.0, 1.0, 2.0]", "[-1.5, 0.0]"],
    "str": ["[]", "['a']", "['b', 'a', 'c']", "['', 'x y']"],
}
_SEQUENCES = frozenset({"list", "List", "Sequence", "Iterable", "Collection"})


def _probes(fn: ast.FunctionDef) -> list[str]:
    """Calls of ``fn``: its parameters' values in step (edge values first), then the values
    shifted against each other, so that parameters also meet in other pairs; a number
    parameter also takes the numbers ``fn`` compares with and the next one up. On the 1.5B's
    refactor goal, ``total > 100`` was never reached by edge values alone, so a refactor
    that dropped the bulk rebate would have kept the behaviour on every probe."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    keywords = [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    params = [*required, *keywords]
    if not params or params[0].arg in {"self", "cls"}:
        return []
    bounds = _thresholds(fn)
    values = [_values(a.annotation) for a in params]
    if any(not v for v in values):
        return []
    values = [
        [*v, *(b for b in bounds if b not in v)] if _numeric(a.annotation) else v
        for a, v in zip(params, values, strict=True)
    ]
    calls: list[str] = []
    longest = max(len(v) for v in values)
    for shift in range(len(params) if len(params) > 1 else 1):
        for i in range(longest):
            chosen = [v[(i + shift * j) % len(v)] for j, v in enumerate(values)]
            shown = chosen[: len(required)] + [
                f"{a.arg}={v}" for a, v in zip(keywords, chosen[len(required) :], strict=True)
            ]
            call = f"{fn.name}({', '.join(shown)})"
            if call not in calls:
                calls.append(call)
    return calls


def _numeric(annotation: ast.expr | None) -> bool:
    return isinstance(annotation, ast.Name) and annotation.id in {"int", "float"}


def _thresholds(fn: ast.FunctionDef) -> list[str]:
    """The numbers ``fn`` compares with (``total > 100``), beyond 0 and 1, and each plus one:
    values that reach the branches a comparison guards."""
    found: list[str] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            number = _number(side)
            if number is not None and abs(number) > 1:
                found += [repr(number), repr(number + 1)]
    return list(dict.fromkeys(found))


def _number(node: ast.expr) -> int | float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    value = node.value if isinstance(node, ast.Constant) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _values(annotation: ast.expr | None) -> list[str]:
    """Values (as source) of the type ``annotation`` names; several types when there is no
    annotation; none for a type not known."""
    if annotation is None:
        return _ANY
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:  # a string annotation ("list[float]")
            return _values(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(annotation, ast.Name):
        return _VALUES.get(annotation.id, [])
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        right_none = isinstance(annotation.right, ast.Constant) and annotation.right.value is None
        return ["None", *_values(annotation.left)] if right_none else []
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        outer, inner = annotation.value.id, annotation.slice
        if outer == "Optional":
            return ["None", *_values(inner)]
        if outer in _SEQUENCES:
            item = inner.id if isinstance(inner, ast.Name) else ""
            return _ITEMS.get(item, _VALUES["list"] if outer in {"list", "List"} else [])
        if outer in {"dict", "Dict", "Mapping"}:
            return _VALUES["dict"]
    return []
