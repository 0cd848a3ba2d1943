"""Functions a draft left unimplemented: a body that is its docstring alone.

Small coding models asked to complete a function often hand back the prompt itself: the
signature and the docstring, no body (on Qwen2.5-Coder-1.5B, 12 of 18 failed HumanEval first
drafts, docs/real-model-eval.md). Such a draft can only fail its check, at the cost of a
whole revision round; a reminder inside the same draft costs one model call.
"""

from __future__ import annotations

import ast

__all__ = ["unimplemented_functions"]

MAX_SOURCE_CHARS = 200_000


def unimplemented_functions(path: str, text: str) -> list[str]:
    """Names of the functions in the Python file ``path`` whose body is only a docstring;
    empty for other files, for source that does not parse (its check says why) and for
    bodies of ``pass`` or ``...`` (a deliberate placeholder, as in protocols)."""
    if not path.endswith(".py") or len(text) > MAX_SOURCE_CHARS:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    ]
