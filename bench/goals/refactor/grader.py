"""The refactor goal: hidden tests stay green, and the duplication is really gone."""

import ast
from pathlib import Path

from grading import Verdict, defined_functions, hidden_pytest, missing, parsed_module

PATH = "pricing.py"


def _calls(tree: ast.Module, caller: str, callee: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == caller:
            return any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == callee
                for n in ast.walk(node)
            )
    return False


def _functions_testing(tree: ast.Module, name: str) -> set[str]:
    """The module's functions with an ``if`` (or conditional expression) on ``name``."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(n, ast.If | ast.IfExp)
            and any(isinstance(v, ast.Name) and v.id == name for v in ast.walk(n.test))
            for n in ast.walk(node)
        )
    }


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    if (absent := missing(files, [PATH])) is not None:
        return absent
    tree = parsed_module(files, PATH)
    if isinstance(tree, str):
        return False, tree
    if "discounted_total" not in defined_functions(tree):
        return False, "pricing.py defines no discounted_total"
    for caller in ("book_price", "music_price"):
        if not _calls(tree, caller, "discounted_total"):
            return False, f"{caller} does not call discounted_total"
    if (deciding := _functions_testing(tree, "member")) and len(deciding) > 1:
        return False, f"the member discount is still decided in {', '.join(sorted(deciding))}"
    return hidden_pytest(files, [PATH], Path(__file__).with_name("hidden_tests.py"))
