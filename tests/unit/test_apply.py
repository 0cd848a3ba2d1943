"""apply's decision per file, from the base a step recorded and the disk now."""

from __future__ import annotations

import hashlib

import pytest

from agent.runs.apply import Change, conflict_of, workspace_files
from agent.vfs.folder import Base


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("base", "now", "expected"),
    [
        (Base(sha("old"), 1), Base(sha("old"), 1), None),  # untouched since read
        (Base(sha("old"), 1), Base(sha("old"), 99), None),  # touched: same bytes
        (Base(sha("old"), 1), Base(sha("new"), 2), None),  # already applied
        (Base(sha("old"), 1), Base(sha("edit"), 2), "changed on disk since the thread read it"),
        (Base(sha("old"), 1), Base(None, None), "deleted on disk since the thread read it"),
        (Base(None, None), Base(None, None), None),  # a new file, still absent
        (Base(None, None), Base(sha("other"), 3), "created on disk since the thread wrote it"),
    ],
)
def test_a_file_is_written_only_over_the_version_it_was_based_on(base, now, expected):
    assert conflict_of(base, now, "new") == expected


def test_only_done_files_written_for_the_folder_are_applied():
    base = {"sha256": None, "mtime_ns": None}
    files = {
        "a.py": {"content": "a", "status": "done", "base": base},
        "b.py": {"content": "b", "status": "failed", "base": base},
        "c.py": {"content": "c", "status": "done"},  # a thread without a folder
        "work/S1/x.txt": {"content": "x", "status": "done", "base": base},
        "memories/m.md": {"content": "m", "status": "done", "base": base},
    }
    assert list(workspace_files(files)) == ["a.py"]


def test_the_diff_is_unified_and_names_a_new_file():
    diff = Change("a.py", "x = 2\n", "x = 1\n").diff()
    assert diff.splitlines()[:2] == ["--- a/a.py", "+++ b/a.py"] and "-x = 1" in diff
    assert Change("n.py", "y\n", None).diff().startswith("--- /dev/null\n+++ b/n.py")
