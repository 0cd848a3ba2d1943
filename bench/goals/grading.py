"""What the goal graders share: each verdict is made by deepreflect's own check runner.

The graders never execute an artifact on the host: hidden pytest tests run through
``run_check``'s ``pytest`` kind (the artifact in one sandbox, the tests in another), SQL
through its ``sql`` kind (read-only, in a sandbox), citations through its ``citations`` kind.
What is read on the host is only parsed (``json.loads``, ``ast.parse``), never run. Only the
goal's own artifacts are graded: a ``conftest.py`` or helper the agent also wrote never
reaches the hidden tests.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.checks import run_check

Verdict = tuple[bool, str]
HIDDEN_TEST = "test_hidden_goal.py"


def missing(files: Mapping[str, str], artifacts: Sequence[str]) -> Verdict | None:
    """A failed verdict naming the first artifact that was not produced, or None."""
    for path in artifacts:
        if not isinstance(files.get(path), str) or not files[path].strip():
            return False, f"{path} was not produced"
    return None


def hidden_pytest(
    files: Mapping[str, str], artifacts: Sequence[str], tests: Path, *, timeout: float = 30.0
) -> Verdict:
    """The artifacts (only them) against the hidden test file ``tests``."""
    if (absent := missing(files, artifacts)) is not None:
        return absent
    given = {path: files[path] for path in artifacts}
    given[HIDDEN_TEST] = tests.read_text(encoding="utf-8")
    spec = {"kind": "pytest", "tests": [HIDDEN_TEST], "timeout": timeout}
    report = run_check(spec, given, artifacts[0])
    return bool(report["passed"]), str(report.get("evidence", ""))[:400]


def parsed_module(files: Mapping[str, str], path: str) -> ast.Module | str:
    """``files[path]`` parsed (never run), or why it cannot be."""
    try:
        return ast.parse(files.get(path) or "", filename=path)
    except SyntaxError as exc:
        return f"{path} does not parse: {exc.msg} (line {exc.lineno})"


def imported_names(tree: ast.Module, module: str) -> set[str]:
    """Names used from ``module`` anywhere in ``tree``: ``from module import f`` binds
    ``f``; ``import module`` / ``from pkg import module`` count ``module.f`` attributes."""
    parent, _, short = module.rpartition(".")
    names: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if source == module or (node.level and source == short):
                names.update(a.name for a in node.names)
            elif source == parent or (node.level and not source):
                aliases.update(a.asname or a.name for a in node.names if a.name == short)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname or module for a in node.names if a.name == module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _dotted(node.value) in aliases:
            names.add(node.attr)
    return names


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def defined_functions(tree: ast.Module) -> set[str]:
    """The module-level functions ``tree`` defines."""
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def json_document(files: Mapping[str, str], path: str) -> Any:
    """``files[path]`` as JSON; raises ValueError saying why it is not."""
    try:
        return json.loads(files.get(path) or "")
    except json.JSONDecodeError as exc:
        msg = f"{path} is not JSON: {exc.msg} (line {exc.lineno})"
        raise ValueError(msg) from exc


def schema_verdict(files: Mapping[str, str], path: str, schema: Mapping[str, Any]) -> Verdict:
    """The ``json_schema`` check kind's verdict on ``files[path]``."""
    report = run_check({"kind": "json_schema", "schema": dict(schema)}, dict(files), path)
    return bool(report["passed"]), str(report.get("evidence", ""))[:400]
