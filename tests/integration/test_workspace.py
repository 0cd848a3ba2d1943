"""A real folder as the workspace: read in place (``ls``, ``glob``, ``grep``, ``read_file``),
nothing of it copied into the thread, checks run on it with the thread's writes laid over it,
and ``deepreflect apply`` writes the thread's files back, refusing a file changed on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent import build_graph, run
from agent.errors import ConfigError
from agent.models.scripted import tool_call
from agent.runs.apply import ApplyConflict, apply_changes, planned_changes
from agent.runs.runner import thread_config
from agent.vfs.folder import Folder
from tests.fakes import END, cli, ctx, models, sqlite_graph, step

pytestmark = pytest.mark.slow

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = BUGGY.replace("a - b", "a + b")
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A project: code, its tests, a .gitignore hiding a secret, a binary file, a symlink
    leading out of the folder."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TESTS)
    (root / ".gitignore").write_text("secret.env\nbuild/\n")
    (root / "secret.env").write_text("TOKEN=hunter2\n")
    (root / "build").mkdir()
    (root / "build" / "calc.py").write_text("stale copy\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours\n")
    (root / "leak.txt").symlink_to(outside)
    return root


def explorer(seen: dict[str, str]):
    """A coder that lists, globs, greps, tries the secret, the link out and the binary
    file, reads calc.py, then patches it; ``seen`` keeps each tool's answer by its call."""
    calls = [
        tool_call("ls"),
        tool_call("glob", pattern="*.py"),
        tool_call("grep", pattern="a - b"),
        tool_call("read_file", path="secret.env"),
        tool_call("read_file", path="leak.txt"),
        tool_call("read_file", path="logo.png"),
        tool_call("read_file", path="calc.py"),
        tool_call("edit_file", path="calc.py", old="a - b", new="a + b"),
    ]
    names = [
        f"{c.tool_calls[0]['name']} {next(iter(c.tool_calls[0]['args'].values()), '')}".strip()
        for c in calls
    ]

    def respond(messages, metadata):
        done = [m for m in messages if isinstance(m, ToolMessage)]
        seen.update({names[i]: str(m.content) for i, m in enumerate(done)})
        return calls[len(done)] if len(done) < len(calls) else "fixed"

    return respond


def fix_plan() -> list[dict]:
    check = {"kind": "pytest", "tests": ["test_calc.py"]}  # the user's tests, in the folder
    return [step("S1", "calc.py", action="coder", check=check)]


def test_a_run_reads_the_folder_in_place_and_apply_writes_its_edit_back(folder, tmp_path):
    seen: dict[str, str] = {}
    roles = models(fix_plan(), [END], explorer(seen))
    graph, conn = sqlite_graph(tmp_path / "db", roles)
    result = run(graph, "Fix add so the tests pass", context=ctx(workspace=str(folder)))
    assert (result["status"], result["stop_reason"]) == ("success", "end"), result
    listing = seen["ls"].splitlines()
    assert "calc.py" in listing and "logo.png (binary: not readable as text)" in listing
    assert not {"secret.env", "build/calc.py", "leak.txt"} & set(listing)  # ignored, out
    assert seen["glob *.py"].splitlines() == ["calc.py", "test_calc.py"]
    assert seen["grep a - b"] == "calc.py:2:     return a - b"  # not build/'s stale copy
    assert "ignored by a .gitignore" in seen["read_file secret.env"]
    assert "hunter2" not in str(seen)
    assert "symlink leading out of the workspace" in seen["read_file leak.txt"]
    assert "binary file" in seen["read_file logo.png"]
    assert seen["read_file calc.py"] == BUGGY
    planner_prompt = roles["planner"].calls[0][-1].content
    assert "- test_calc.py" in planner_prompt and "assert add(2, 3)" not in planner_prompt

    values = graph.get_state(thread_config(result["thread_id"])).values
    files = values["files"]
    # only what the step wrote is in the thread: not the tests, the .gitignore, the png
    assert [p for p in files if not p.startswith("work/")] == ["calc.py"]
    entry = files["calc.py"]
    assert (entry["content"], entry["status"]) == (FIXED, "done")
    assert entry["base"]["sha256"] == Folder.open(folder).base("calc.py").sha256
    assert (folder / "calc.py").read_text() == BUGGY  # the folder is untouched until applied
    conn.close()

    db = tmp_path / "db" / "threads.sqlite"
    done = cli("apply", result["thread_id"], db=db)
    assert done.returncode == 0, done.stderr
    assert "-    return a - b" in done.stdout and "+    return a + b" in done.stdout
    assert (folder / "calc.py").read_text() == FIXED
    again = cli("apply", result["thread_id"], db=db)  # already there: nothing to do
    assert again.returncode == 0 and "unchanged" in again.stdout


def test_apply_refuses_a_file_changed_on_disk_since_it_was_read_and_loses_nothing(folder, tmp_path):
    graph, conn = sqlite_graph(tmp_path / "db", models(fix_plan(), [END], explorer({})))
    result = run(graph, "Fix add", context=ctx(workspace=str(folder)))
    assert result["status"] == "success", result
    conn.close()
    edited = "def add(a, b):\n    return b - a  # edited by hand\n"
    (folder / "calc.py").write_text(edited)

    db = tmp_path / "db" / "threads.sqlite"
    refused = cli("apply", result["thread_id"], db=db)
    assert refused.returncode == 1
    assert "changed on disk since the thread read it" in refused.stdout
    assert (folder / "calc.py").read_text() == edited  # nothing written
    forced = cli("apply", result["thread_id"], "--force", db=db)
    assert forced.returncode == 0, forced.stderr
    assert (folder / "calc.py").read_text() == FIXED


def test_checks_see_the_folder_with_the_threads_writes_over_it(folder, tmp_path):
    """The user's tests live only in the folder; the pytest check runs them against the
    step's edit, and fails against the folder's own buggy version."""

    def edits(messages, metadata):
        if isinstance(messages[-1], ToolMessage):
            return "done"
        return tool_call("write_file", path="calc.py", content=contents.pop(0))

    contents = [BUGGY.replace("a - b", "a * b"), FIXED]
    roles = models(fix_plan(), [END], edits)
    saver = InMemorySaver()
    graph = build_graph(models=roles, retry_policy=None, checkpointer=saver, workspace=folder)
    result = run(graph, "Fix add", context=ctx(fresh_drafts=0))
    assert result["status"] == "success", result
    checks = [e for e in graph.get_state(thread_config(result["thread_id"])).values["trajectory"]
              if e["action"] == "check"]  # fmt: skip
    assert [c["check"]["passed"] for c in checks] == [False, True]
    assert "assert 6 == 5" in checks[0]["observation"]  # the folder's test, the step's code
    assert (folder / "calc.py").read_text() == BUGGY


def test_a_missing_workspace_is_a_clear_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        build_graph(workspace=tmp_path / "nope")
    problems = ctx(workspace=str(tmp_path / "nope")).validate()
    assert any("workspace" in p and "does not exist" in p for p in problems)


def test_apply_keeps_the_folder_when_any_file_conflicts(folder):
    """All or nothing: one conflicting file and the other is not written either."""
    root = Folder.open(folder)
    base_calc = root.base("calc.py").as_dict()
    files = {
        "calc.py": {"content": FIXED, "status": "done", "base": base_calc},
        "notes.md": {
            "content": "new\n",
            "status": "done",
            "base": {"sha256": None, "mtime_ns": None},
        },
    }
    (folder / "notes.md").write_text("created meanwhile\n")
    changes = planned_changes(files, root)
    assert [c.conflict for c in changes] == [None, "created on disk since the thread wrote it"]
    with pytest.raises(ApplyConflict):
        apply_changes(changes, root)
    assert (folder / "calc.py").read_text() == BUGGY
    assert (folder / "notes.md").read_text() == "created meanwhile\n"


def test_apply_refuses_a_path_through_a_symlink_leading_out(folder, tmp_path):
    root = Folder.open(folder)
    files = {
        "leak.txt": {"content": "x", "status": "done", "base": {"sha256": None, "mtime_ns": None}}
    }
    with pytest.raises(ValueError, match="symlink leading out"):
        planned_changes(files, root)
    assert (tmp_path / "outside.txt").read_text() == "not yours\n"
