"""The package's import graph has no cycle (issue 12): no module in ``agent/`` imports one
that imports it back, directly or through others, counting imports inside functions too."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import agent

ROOT = Path(agent.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The ``agent`` modules ``path`` imports, wherever the import statement is."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for (
                alias
            ) in node.names:  # `from agent import reflection` imports agent.reflection.rules
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {m for m in found if m in modules and m != name}


@functools.cache  # three tests read it; parsing every module once is enough
def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def cycle_through(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path of imports from ``start`` back to itself, if there is one."""
    stack, seen = [(start, [start])], set()
    while stack:
        name, path = stack.pop()
        for imported in graph[name]:
            if imported == start:
                return [*path, start]
            if imported not in seen:
                seen.add(imported)
                stack.append((imported, [*path, imported]))
    return None


def test_the_import_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert {"agent.models.scenarios", "agent.models.scripted"} <= graph["agent.models.factory"]
    assert "agent.models.scripted" in graph["agent.models.scenarios"]
    assert (
        "agent.reflection.rules" in graph["agent.graph.reflection"]
    )  # `from agent import reflection as ...`


def test_no_module_in_agent_imports_one_that_imports_it_back():
    graph = import_graph()
    cycles = [c for name in sorted(graph) if (c := cycle_through(name, graph))]
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_scripted_model_imports_nothing_from_agent():
    assert import_graph()["agent.models.scripted"] == set()
