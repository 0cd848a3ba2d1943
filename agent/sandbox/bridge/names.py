"""The names a piece of Python code reads without binding them: where the artifact defines a
builtin's name (``def sum``) that the check's code uses bare, the check would test the
builtin, and the runner fails it (``check_runner``)."""

from __future__ import annotations

import ast


def free_names(source: str) -> set[str]:
    """The names ``source`` reads that it never binds itself (no import, assignment,
    definition or parameter of that name); builtins included. Raises ``SyntaxError``."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read - bound
