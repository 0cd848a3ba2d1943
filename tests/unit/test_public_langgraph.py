"""deepreflect uses LangGraph's public API: no import from a private module
(``langgraph._internal``, ``langgraph.pregel._read``), of a private name (``_DeltaSnapshot``)
or of a constant ``langgraph.constants`` keeps only for backwards compatibility, so the next
LangGraph release cannot break it without notice (issue 45).

The few reads no public API offers yet are listed in ``KNOWN`` with the reason; the list may
only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agent

ROOTS = [
    Path(agent.__file__).resolve().parent,
    Path(agent.__file__).resolve().parent.parent / "graphs",
]
PACKAGES = ("langgraph", "langchain_core", "langchain")
COMPAT_ONLY = frozenset({"CONF", "TASKS", "CONFIG_KEY_CHECKPOINTER"})
"""Names ``langgraph.constants`` re-exports from ``langgraph._internal`` for old callers."""

KNOWN = {
    # a Send'd subagent reads the files, trajectory, replay, turn, plan and approvals as the
    # superstep sees them: the public alternatives carry the contents in every Send (stored
    # again per step and round) or go through ToolNode's hydration of ToolRuntime.state
    ("agent/graph/inputs.py", "langgraph.pregel._read.ChannelRead"),
}


def private_imports(path: Path) -> set[str]:
    """Every ``module.name`` ``path`` imports from LangGraph or LangChain that is private."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in names:
            if module.split(".")[0] not in PACKAGES:
                continue
            private_module = any(part.startswith("_") for part in module.split("."))
            private_name = name.startswith("_") or (
                module == "langgraph.constants" and name in COMPAT_ONLY
            )
            if private_module or private_name:
                found.add(f"{module}.{name}" if name else module)
    return found


def test_no_module_imports_a_private_langgraph_api_beyond_the_known_ones():
    found = {
        (str(path.relative_to(root.parent)), imported)
        for root in ROOTS
        for path in root.rglob("*.py")
        for imported in private_imports(path)
    }
    assert found <= KNOWN, sorted(found - KNOWN)


def test_the_known_private_imports_are_still_there_or_are_struck_off():
    root = ROOTS[0].parent
    for file, imported in KNOWN:
        assert imported in private_imports(root / file), (file, imported)


def test_the_scan_sees_private_modules_names_and_compat_constants(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from langgraph._internal._runnable import RunnableCallable\n"
        "import langgraph.pregel._read\n"
        "from langgraph.checkpoint.serde.types import _DeltaSnapshot\n"
        "from langgraph.constants import CONFIG_KEY_CHECKPOINTER, END\n"
        "from langgraph.types import Send\n"
        "from agent._private import x\n",
        encoding="utf-8",
    )
    assert private_imports(sample) == {
        "langgraph._internal._runnable.RunnableCallable",
        "langgraph.pregel._read",
        "langgraph.checkpoint.serde.types._DeltaSnapshot",
        "langgraph.constants.CONFIG_KEY_CHECKPOINTER",
    }
