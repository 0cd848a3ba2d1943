"""docs/architecture.md's tree is the package's tree (issue 24): it lists every folder and
module of ``agent/`` and nothing else, each with what it holds, and it is drawn in layers:
an entry imports only from itself and the entries drawn below it, so imports flow one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agent"
DOC = ROOT / "docs" / "architecture.md"
ENTRY = re.compile(r"^(?P<prefix>[│├└─ ]*)(?P<name>[\w.]+/?)(?:\s{2,}(?P<what>.*))?$")


def drawn_tree(text: str) -> list[tuple[str, str]]:
    """``(path, description)`` of each entry of ``agent/`` in the first fenced block under
    ``## Layout``, top to bottom; a folder's entries are indented under it by four columns."""
    section = text.split("## Layout", 1)[1]
    block = section.split("```", 2)[1].split("\n", 1)[1]
    entries: list[tuple[str, str]] = []
    parents: list[str] = []
    for line in block.splitlines():
        match = ENTRY.match(line.rstrip())
        if not match:
            continue
        depth = len(match["prefix"]) // 4
        parents = parents[:depth]
        path = "/".join([*parents, match["name"].rstrip("/")])
        if match["name"].endswith("/"):
            parents.append(match["name"].rstrip("/"))
        entries.append((path, (match["what"] or "").strip()))
    return [(p, what) for p, what in entries if p == "agent" or p.startswith("agent/")]


def real_tree() -> set[str]:
    """Every module and package of ``agent/`` (the package itself included), as paths."""
    found = {"agent"}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT)
        found.add(rel.as_posix())
        found |= {p.as_posix() for p in rel.parents if p.as_posix() not in ("", ".")}
    return found


def module_of(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def owner(module: str, drawn: list[str]) -> str | None:
    """The drawn entry a module belongs to: the deepest drawn path that contains it."""
    candidates = [
        p for p in drawn if module == module_of(p) or module.startswith(module_of(p) + ".")
    ]
    return max(candidates, key=len) if candidates else None


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("agent.")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent."):
            found.add(node.module or "")
    return found


@pytest.fixture(scope="module")
def tree() -> list[tuple[str, str]]:
    return drawn_tree(DOC.read_text(encoding="utf-8"))


def test_the_drawing_parser_reads_nesting_and_descriptions():
    text = (
        "## Layout\n```\nagent/        pkg\n├── a.py      one\n├── b/        two\n"
        "│   └── c.py  three\n└── d.py      four\n```\n"
    )
    assert drawn_tree(text) == [
        ("agent", "pkg"),
        ("agent/a.py", "one"),
        ("agent/b", "two"),
        ("agent/b/c.py", "three"),
        ("agent/d.py", "four"),
    ]


def test_the_drawn_tree_lists_every_module_and_folder_and_nothing_else(tree):
    drawn = {path for path, _ in tree}
    real = real_tree()
    required = {p for p in real if not p.endswith("/__init__.py")}  # a folder stands for it
    assert sorted(required - drawn) == [], "in agent/ but not drawn in docs/architecture.md"
    assert sorted(drawn - real) == [], "drawn in docs/architecture.md but not in agent/"


def test_every_drawn_entry_says_what_it_holds(tree):
    assert [path for path, what in tree if not what] == []


def test_imports_flow_down_the_drawing(tree):
    """A top-level entry of ``agent/`` imports only from itself and the entries drawn below it
    (the public ``agent/__init__.py`` at the top imports what it exports)."""
    top = [p for p, _ in tree if p.count("/") == 1]
    rank = {p: i for i, p in enumerate(top)}
    upward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "agent/__init__.py":
            continue
        mine = owner(module_of(rel.removesuffix("/__init__.py")), top)
        for imported in imports_of(path):
            theirs = owner(imported, top)
            if mine and theirs and rank[theirs] < rank[mine]:
                upward.append(f"{rel} imports {imported} (drawn above it)")
    assert upward == []


def test_every_module_path_the_docs_name_exists():
    """A path like ``agent/graph/planner.py`` in README.md or docs/ names a real file (the
    modules moved into stage folders once; a page that still names the old place misleads)."""
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for path in re.findall(r"\b(?:agent|graphs|bench|tests)/[\w/]+\.py\b", page.read_text()):
            if not (ROOT / path).exists():
                stale.append(f"{page.relative_to(ROOT)}: {path}")
    assert stale == []


def test_the_code_cites_the_design_documents_by_no_seed_number():
    """docs/architecture.md names the design documents by title; code that says "seed 002"
    points at a file that is not in the repository."""
    citing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bseeds? 00\d", line, re.IGNORECASE)
    ]
    assert citing == []
