"""A workspace folder read in place: what is reachable (containment, symlinks, .gitignore,
binary files), what a step's reads and writes record, and that nothing is copied in."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.vfs.entries import Workspace
from agent.vfs.folder import MAX_FILE_BYTES, Folder, FolderError
from agent.vfs.paths import PathError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    top = tmp_path / "repo"
    (top / "src" / "deep").mkdir(parents=True)
    (top / "src" / "app.py").write_text("print('app')\n")
    (top / "src" / "deep" / "x.py").write_text("x = 1\n")
    (top / "src" / ".gitignore").write_text("deep/\n!keep.log\n")
    (top / ".gitignore").write_text("*.log\n.env\n")
    (top / ".env").write_text("KEY=secret\n")
    (top / "debug.log").write_text("noise\n")
    (top / "src" / "keep.log").write_text("kept by a negation below\n")
    (top / "data.bin").write_bytes(bytes(range(256)))
    (top / ".git").mkdir()
    (top / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside\n")
    (top / "out.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (top / "outdir").symlink_to(tmp_path / "outside")
    (top / "alias.py").symlink_to(top / "src" / "app.py")
    return top


def test_only_the_files_gitignore_keeps_are_listed(root):
    assert Folder.open(root).paths() == [
        ".gitignore",
        "alias.py",  # a link to a file inside the folder
        "data.bin",
        "src/.gitignore",
        "src/app.py",
        "src/keep.log",  # the deeper .gitignore's negation wins
    ]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("out.txt", "symlink leading out"),
        ("outdir/secret.txt", "symlink leading out"),
        ("../outside/secret.txt", "climbs out"),
        ("/etc/passwd", "absolute"),
        (".env", "ignored"),
        ("src/deep/x.py", "ignored"),
        (".git/config", ".git/"),
        ("data.bin", "binary"),
        ("missing.py", "not found"),
    ],
)
def test_a_path_the_folder_does_not_give_is_refused_with_its_reason(root, path, why):
    with pytest.raises(PathError, match=why.replace(".", r"\.")):
        Folder.open(root).read(path)


def test_a_missing_folder_or_a_file_is_not_a_workspace(root):
    with pytest.raises(FolderError, match="does not exist"):
        Folder.open(root / "nope")
    with pytest.raises(FolderError, match="not a folder"):
        Folder.open(root / "src" / "app.py")


def test_reads_come_from_disk_and_nothing_is_copied_into_the_steps_files(root):
    workspace = Workspace({}, writable=["src/app.py"], folder=Folder.open(root))
    assert workspace.read("src/app.py") == "print('app')\n"
    assert workspace.contents() == {} and workspace.written == {}


def test_a_write_records_the_disk_version_the_step_read(root):
    folder = Folder.open(root)
    workspace = Workspace({}, writable=["src/app.py", "new.md"], scratch="work/S1/", folder=folder)
    workspace.edit("src/app.py", "app", "changed")
    workspace.write("new.md", "hello\n")
    workspace.write("work/S1/notes.txt", "scratch")
    assert workspace.bases["src/app.py"]["sha256"] == folder.base("src/app.py").sha256
    assert workspace.bases["new.md"]["sha256"] is None  # it did not exist
    assert "work/S1/notes.txt" not in workspace.bases  # scratch never goes to the folder
    assert (root / "src" / "app.py").read_text() == "print('app')\n"


def test_a_write_through_a_symlink_leading_out_is_refused(root):
    workspace = Workspace({}, writable=["out.txt"], folder=Folder.open(root))
    with pytest.raises(PathError, match="symlink leading out"):
        workspace.write("out.txt", "overwrite")


def test_the_listing_marks_binary_files_and_the_threads_files_win(root):
    workspace = Workspace({"src/app.py": "thread's\n"}, writable=[], folder=Folder.open(root))
    assert "data.bin (binary: not readable as text)" in workspace.listing()
    assert workspace.read("src/app.py") == "thread's\n"
    assert workspace.grep("thread") == "src/app.py:1: thread's"
    assert workspace.sandbox_files()["src/app.py"] == "thread's\n"  # laid over the folder
    assert ".env" not in workspace.sandbox_files()  # ignored files never reach the sandbox


def test_rewriting_an_applied_version_takes_the_disk_as_its_new_base(root):
    """A follow-up turn edits a file the user already applied: the next apply must not see
    the applied version as a change made on disk."""
    folder = Folder.open(root)
    applied = "print('applied')\n"
    (root / "src" / "app.py").write_text(applied)
    workspace = Workspace({"src/app.py": applied}, writable=["src/app.py"], folder=folder)
    workspace.write("src/app.py", "print('again')\n")
    assert workspace.bases["src/app.py"]["sha256"] == folder.base("src/app.py").sha256


def test_rewriting_a_version_not_applied_keeps_the_threads_base(root):
    workspace = Workspace(
        {"src/app.py": "thread's\n"}, writable=["src/app.py"], folder=Folder.open(root)
    )
    workspace.write("src/app.py", "again\n")
    assert "src/app.py" not in workspace.bases  # keep_base carries the recorded one over


def test_a_symlink_loop_is_left_out_of_the_listing_and_refused_by_name(root):
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    folder = Folder.open(root)
    assert "loop1" not in folder.paths() and "src/app.py" in folder.paths()
    workspace = Workspace({}, writable=["loop1"], folder=folder)
    with pytest.raises(PathError, match="symlink leading in a loop"):
        workspace.read("loop1")
    with pytest.raises(PathError, match="symlink leading in a loop"):
        workspace.write("loop1", "x")


def test_grep_names_a_file_too_large_to_search_instead_of_saying_no_match(root):
    size = MAX_FILE_BYTES + 1
    (root / "big.txt").write_text("needle\n" + "a" * (size - 7))
    workspace = Workspace({}, writable=[], folder=Folder.open(root))
    answer = workspace.grep("needle", path="big.txt")
    assert answer.startswith("no line contains 'needle' (0 files searched)")
    assert f"not searched: 'big.txt' is {size} bytes; the limit is {MAX_FILE_BYTES}" in answer
    assert "src/app.py:1:" in workspace.grep("app")  # a file under the limit is searched


def test_ls_lists_one_folder_when_asked(root):
    workspace = Workspace(
        {"src/new.py": "n\n", "top.md": "t\n"}, writable=[], folder=Folder.open(root)
    )
    assert workspace.listing("src") == [
        "src/.gitignore",
        "src/app.py",
        "src/keep.log",
        "src/new.py",
    ]
    assert workspace.listing("src/") == workspace.listing("src")
    assert "top.md" in workspace.listing() and "top.md" in workspace.listing(".")
    with pytest.raises(PathError):
        workspace.listing("../outside")


def test_a_shared_file_over_its_limit_is_refused_when_written():
    workspace = Workspace({}, writable=[], shared="memories/", shared_max_bytes=10)
    assert workspace.write("memories/ok.md", "short") == "memories/ok.md"
    with pytest.raises(PathError, match="memories/big.md is 11 bytes; a file in memories/ holds"):
        workspace.write("memories/big.md", "x" * 11)
