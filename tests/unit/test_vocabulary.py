"""The vocabulary is one source: the docs' tables list exactly its members, the code writes
no status or stop reason outside it, and the reflection rules are numbered in one place."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from agent.reflection.rules import RULES
from agent.vocabulary import (
    WAITING,
    ApprovalStatus,
    CallStatus,
    FileStatus,
    LoopStop,
    Status,
    StopReason,
)

ROOT = Path(__file__).resolve().parents[2]
HOW_IT_STOPS = ROOT / "docs" / "how-it-stops.md"
# every status but running is one a run stops in (running has no stop reason)
STOPPED = set(Status) - {Status.RUNNING}
NUMBERS = {"three": 3, "four": 4, "five": 5, "six": 6}
# words other records keep under these keys, none of them in the vocabulary: a Result's
# artifact never written (missing), the seeded-defect evaluation's mutants (survived, killed,
# equivalent), and what `deepreflect show` prints for an interrupted thread, never stored
OTHER_WORDS = {
    "status": {"missing", "survived", "killed", "equivalent"},
    "stop_reason": {"its run stopped unfinished"},
}


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([a-z_]+)`", text)


def _table_rows(text: str) -> list[tuple[str, str]]:
    """The (status, stop_reason) cells of the status × stop_reason table (the page's part
    before its first section heading)."""
    text = text.split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in text.splitlines() if line.startswith("| `")]
    return [(status.strip(), reasons.strip()) for status, reasons in rows]


def test_the_stop_table_lists_every_stop_reason_once_and_nothing_else():
    rows = _table_rows(HOW_IT_STOPS.read_text())
    reasons = Counter(r for _, cell in rows for r in _ticked(cell))
    assert set(reasons) == set(StopReason), "docs/how-it-stops.md's table against StopReason"
    assert [r for r, n in reasons.items() if n > 1] == []


def test_the_stop_table_lists_exactly_the_statuses_a_run_stops_in():
    statuses = {s for cell, _ in _table_rows(HOW_IT_STOPS.read_text()) for s in _ticked(cell)}
    assert statuses == STOPPED


def test_the_readme_names_every_status_a_run_ends_in_and_counts_them():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## How it stops", 1)[1].split("\n## ", 1)[0]
    count = re.search(r"one of (\w+) statuses", section)
    assert count and NUMBERS[count.group(1)] == len(STOPPED)
    named = {word for word in _ticked(section) if word in set(Status)}
    assert named == STOPPED


def test_the_human_in_the_loop_page_names_the_waiting_statuses():
    page = (ROOT / "docs" / "human-in-the-loop.md").read_text()
    paused = re.search(r"A paused thread \(([^)]*)\)", page)
    assert paused and set(_ticked(paused.group(1))) - {"status"} == set(WAITING)


def _numbered_rules(text: str) -> list[tuple[int, str]]:
    """(number, rule function) for each numbered item of a list that names a rule."""
    return [
        (int(number), name)
        for number, name in re.findall(r"^(\d+)\. .*?`(rule_[a-z_]+)`", text, re.MULTILINE)
    ]


def test_how_it_stops_numbers_the_rules_in_the_code_order():
    numbered = _numbered_rules(HOW_IT_STOPS.read_text())
    assert [name for _, name in numbered] == [rule.__name__ for rule in RULES]
    assert [number for number, _ in numbered] == list(range(1, len(RULES) + 1))


def test_no_other_page_numbers_the_rules():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    numbering = [p.name for p in pages if p != HOW_IT_STOPS and _numbered_rules(p.read_text())]
    assert numbering == []


# ---------------------------------------------------------------- what the code writes

ALLOWED = {
    "stop_reason": {*StopReason, *LoopStop},  # a step's revise loop has stop reasons too
    "status": {*Status, *FileStatus, *ApprovalStatus, *CallStatus},
}


def _strings(node: ast.AST | None) -> list[ast.Constant]:
    """The string constants an expression may evaluate to (through ``a if c else b``,
    ``a or b`` and tuples of choices)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [c for value in node.values for c in _strings(value)]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for elt in node.elts for c in _strings(elt)]
    return []


def _key(node: ast.AST) -> str | None:
    """``status`` or ``stop_reason`` when ``node`` reads or names that key, else None."""
    if isinstance(node, ast.Constant) and node.value in ALLOWED:
        return str(node.value)
    if isinstance(node, ast.Name) and node.id.lower() in ALLOWED:  # STOP_REASON = "..." too
        return node.id.lower()
    if isinstance(node, ast.Attribute) and node.attr in ALLOWED:
        return node.attr
    if isinstance(node, ast.Subscript):
        return _key(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "get" and node.args:
            return _key(node.args[0])
    return None


def _written(tree: ast.AST) -> list[tuple[str, ast.Constant]]:
    """(key, value) for every string the code stores under, passes as or compares with a
    ``status`` or ``stop_reason``."""
    found: list[tuple[str | None, ast.AST | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found += [(_key(k), v) for k, v in zip(node.keys, node.values, strict=True) if k]
        elif isinstance(node, ast.Call):
            found += [(kw.arg, kw.value) for kw in node.keywords if kw.arg in ALLOWED]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(_key(t), node.value) for t in targets]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            keys = [k for side in sides if (k := _key(side))]
            found += [(keys[0], side) for side in sides] if keys else []
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.args + node.args.kwonlyargs
            defaults = [*node.args.defaults, *node.args.kw_defaults]
            pairs = zip(reversed(args), reversed(defaults), strict=False)
            found += [(a.arg, d) for a, d in pairs if a.arg in ALLOWED]
    return [(key, c) for key, value in found if key in ALLOWED for c in _strings(value)]


def _stray_values(path: Path, root: Path = ROOT) -> list[str]:
    relative = path.relative_to(root).as_posix()
    return [
        f"{relative}:{c.lineno}: {key}={c.value!r}"
        for key, c in _written(ast.parse(path.read_text()))
        if c.value not in ALLOWED[key] | OTHER_WORDS[key]
    ]


def test_every_status_and_stop_reason_the_code_writes_is_a_member():
    sources = sorted([*(ROOT / "agent").rglob("*.py"), *(ROOT / "graphs").rglob("*.py")])
    stray = [problem for path in sources for problem in _stray_values(path)]
    assert stray == []


def test_the_scan_finds_a_stop_reason_outside_the_vocabulary(tmp_path):
    """The scan above can fail: each way of writing a value is seen."""
    code = tmp_path / "agent" / "example.py"
    code.parent.mkdir()
    code.write_text(
        "def f(d, status='stuck'):\n"
        "    d['stop_reason'] = 'gave_up'\n"
        "    update = {'status': 'lost', 'stop_reason': None}\n"
        "    if d.get('stop_reason') in ('end', 'tired'):\n"
        "        return Decision('x', stop_reason='bored' if d else 'end')\n"
        "    return d['status'] == 'success'\n"
    )
    found = {problem.split(": ", 1)[1] for problem in _stray_values(code, tmp_path)}
    assert found == {
        "status='stuck'",
        "stop_reason='gave_up'",
        "status='lost'",
        "stop_reason='tired'",
        "stop_reason='bored'",
    }
