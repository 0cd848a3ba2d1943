"""The user's files at the boundary: reading them from disk, checking what callers send, and
taking a graph input's raw values into the thread (agent.vfs.host_disk, agent.vfs.user_files,
agent.vfs.origin)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.plan.validation import parse_plan
from agent.vfs import host_disk
from agent.vfs.entries import MAX_FILE_BYTES, file_entry, summarize_files
from agent.vfs.host_disk import MAX_SCANNED, load_files
from agent.vfs.origin import keep_origin, planner_view, taken_in, user_paths
from agent.vfs.paths import MAX_PATH_CHARS
from agent.vfs.user_files import (
    MAX_USER_BYTES,
    MAX_USER_FILES,
    UserFileError,
    check_user_files,
    folder_clash,
)
from tests.fakes import step


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small repository: code, tests, ignored build output, a binary, a .git folder."""
    root = tmp_path / "proj"
    write(root / ".git" / "config", "[core]\n")
    write(root / ".gitignore", "*.log\nbuild/\n/secret.txt\n!keep.log\n")
    write(root / "app.py", "def add(a, b):\n    return a - b\n")
    write(root / "tests" / "test_app.py", "from app import add\n")
    write(root / "run.log", "noise\n")
    write(root / "keep.log", "kept despite *.log\n")
    write(root / "build" / "out.py", "generated\n")
    write(root / "secret.txt", "anchored: only the top one is ignored\n")
    write(root / "docs" / "secret.txt", "not the anchored one\n")
    write(root / "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    return root


# ---------------------------------------------------------------- reading from disk


def test_a_folder_inside_the_current_directory_keeps_its_relative_paths(project):
    skipped: list[str] = []
    files = load_files(["proj"], cwd=project.parent, skipped=skipped)
    assert set(files) == {
        "proj/.gitignore",
        "proj/app.py",
        "proj/tests/test_app.py",
        "proj/keep.log",
        "proj/docs/secret.txt",
    }
    assert files["proj/app.py"] == "def add(a, b):\n    return a - b\n"
    assert skipped == ["proj/logo.png: binary"]


def test_the_current_directory_itself_puts_its_files_at_the_root(project):
    files = load_files(["."], cwd=project)
    assert "app.py" in files and "tests/test_app.py" in files
    assert not any(p.startswith((".git/", "build/")) or p.endswith("run.log") for p in files)


def test_a_path_outside_the_current_directory_is_named_from_its_parent(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert set(load_files([project / "app.py"], cwd=elsewhere)) == {"app.py"}
    by_folder = load_files(["../proj/tests"], cwd=elsewhere)
    assert set(by_folder) == {"tests/test_app.py"}


def test_nested_gitignore_files_and_the_repositorys_outer_ones_apply(project):
    write(project / "tests" / ".gitignore", "fixture_*.py\n!fixture_keep.py\n")
    write(project / "tests" / "fixture_big.py", "x\n")
    write(project / "tests" / "fixture_keep.py", "y\n")
    write(project / "tests" / "inner.log", "ignored by the outer *.log\n")
    files = load_files(["tests"], cwd=project)  # the folder alone: the repo's root rules too
    assert set(files) == {"tests/.gitignore", "tests/test_app.py", "tests/fixture_keep.py"}


def test_a_file_named_explicitly_is_read_even_when_ignored(project):
    assert load_files(["run.log"], cwd=project) == {"run.log": "noise\n"}


def test_an_explicit_binary_file_is_refused_naming_it(project):
    with pytest.raises(UserFileError, match=r"logo\.png is binary"):
        load_files(["logo.png"], cwd=project)
    write(project / "latin1.txt", "caf\xe9".encode("latin-1"))
    with pytest.raises(UserFileError, match="latin1.txt is binary"):
        load_files(["latin1.txt"], cwd=project)


def test_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(UserFileError, match="no-such.py: no such file or folder"):
        load_files(["no-such.py"], cwd=tmp_path)


def test_symlinks_that_lead_out_of_the_folder_are_never_followed(tmp_path):
    outside = write(tmp_path / "outside" / "passwd", "root:x:0:0\n")
    folder = tmp_path / "folder"
    write(folder / "a.py", "a = 1\n")
    (folder / "leak").symlink_to(outside)
    (folder / "leak_dir").symlink_to(outside.parent, target_is_directory=True)
    (folder / "up").symlink_to("../outside/passwd")
    (folder / "alias.py").symlink_to("a.py")  # inside: read as the file it names
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    skipped: list[str] = []
    files = load_files(["folder"], cwd=tmp_path, skipped=skipped)
    assert files == {"folder/a.py": "a = 1\n", "folder/alias.py": "a = 1\n"}
    assert not any("root:x" in text for text in files.values())
    assert "folder/leak: a symlink that leads out of the folder" in skipped
    assert "folder/up: a symlink that leads out of the folder" in skipped
    assert "folder/leak_dir: a symlink that leads out of the folder" in skipped
    assert "folder/loop: a symlink to a folder (not followed)" in skipped


def test_a_fifo_in_a_folder_is_skipped_not_waited_on(tmp_path):
    write(tmp_path / "d" / "a.txt", "a\n")
    os.mkfifo(tmp_path / "d" / "pipe")
    skipped: list[str] = []
    assert load_files(["d"], cwd=tmp_path, skipped=skipped) == {"d/a.txt": "a\n"}
    assert skipped == ["d/pipe: not a regular file"]
    with pytest.raises(UserFileError, match="not a regular file"):
        load_files(["d/pipe"], cwd=tmp_path)


def test_a_file_over_the_size_limit_is_refused_naming_it(tmp_path):
    write(tmp_path / "d" / "big.txt", "x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(UserFileError, match=rf"d/big\.txt.*{MAX_FILE_BYTES} per file"):
        load_files(["d"], cwd=tmp_path)


def test_too_many_files_or_too_many_bytes_in_all_are_refused(tmp_path):
    for n in range(MAX_USER_FILES + 1):
        write(tmp_path / "many" / f"f{n:04d}.txt", "x\n")
    with pytest.raises(UserFileError, match=rf"more than {MAX_USER_FILES} files.*\.gitignore"):
        load_files(["many"], cwd=tmp_path)
    chunk = MAX_FILE_BYTES - 10
    for n in range(MAX_USER_BYTES // chunk + 1):
        write(tmp_path / "heavy" / f"h{n}.txt", "y" * chunk)
    with pytest.raises(UserFileError, match=rf"total more than {MAX_USER_BYTES} bytes"):
        load_files(["heavy"], cwd=tmp_path)


def test_a_host_name_the_vfs_refuses_is_an_error_naming_it(tmp_path):
    write(tmp_path / "d" / "back\\slash.py", "x\n")
    with pytest.raises(UserFileError, match="backslash"):
        load_files(["d"], cwd=tmp_path)
    deep = tmp_path / "e" / ("n" * 120) / ("m" * 120)
    write(deep / "f.py", "x\n")
    with pytest.raises(UserFileError, match=f"the limit is {MAX_PATH_CHARS}"):
        load_files(["e"], cwd=tmp_path)


def test_two_sources_for_one_path_are_an_error_the_same_one_twice_is_not(tmp_path):
    here = tmp_path / "here"
    write(here / "a" / "x.py", "1\n")
    write(tmp_path / "b" / "a" / "x.py", "2\n")  # outside: named from its parent, a/x.py
    assert load_files(["a", "a/x.py", "./a"], cwd=here) == {"a/x.py": "1\n"}
    with pytest.raises(UserFileError, match="would both be 'a/x.py'"):
        load_files(["a", "../b/a"], cwd=here)


def test_a_file_under_the_steps_scratch_space_is_refused(tmp_path):
    write(tmp_path / "work" / "S1" / "notes.md", "x\n")
    with pytest.raises(UserFileError, match="scratch space"):
        load_files(["work"], cwd=tmp_path)


# ---------------------------------------------------------------- what callers send


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../x.py", "climbs out"),
        ("a/../../x.py", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("C:/x.py", "absolute"),
        ("a\x00b.py", "NUL"),
        ("a\\b.py", "backslash"),
        ("", "non-empty"),
        (".", "does not name a file"),
        ("a\nb.py", "control character"),
        ("x" * (MAX_PATH_CHARS + 1), "characters long"),
        ("work/S1/x.py", "scratch space"),
        (7, "non-empty string"),
    ],
)
def test_a_hostile_path_is_refused_with_the_vfs_reason(path, why):
    with pytest.raises(UserFileError, match=why):
        check_user_files({path: "text"})


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"bytes", "must be text"),
        (None, "must be text"),
        (["a", 1], "must be text"),
        ("a\x00b", "binary"),
        ("\ud800", "lone surrogate"),
        ("x" * (MAX_FILE_BYTES + 1), f"limit is {MAX_FILE_BYTES} per file"),
        ("é" * (MAX_FILE_BYTES // 2 + 1), "per file"),  # UTF-8 bytes, not characters
    ],
)
def test_content_must_be_text_within_the_size_limit(content, why):
    with pytest.raises(UserFileError, match=why):
        check_user_files({"a.py": content})


def test_paths_are_normalised_and_two_spellings_of_one_path_refused():
    assert check_user_files({"./src//a.py": "x"}) == {"src/a.py": "x"}
    with pytest.raises(UserFileError, match="given twice"):
        check_user_files({"a.py": "1", "./a.py": "2"})


def test_deepagents_file_data_is_accepted_as_lines():
    given = {"a.py": {"content": ["x = 1", "y = 2"], "created_at": "", "modified_at": ""}}
    assert check_user_files(given) == {"a.py": "x = 1\ny = 2"}


def test_not_a_mapping_or_too_many_files_is_refused():
    with pytest.raises(UserFileError, match="must map paths"):
        check_user_files(["a.py"])
    with pytest.raises(UserFileError, match=f"at most {MAX_USER_FILES}"):
        check_user_files({f"f{n}.py": "" for n in range(MAX_USER_FILES + 1)})


def test_a_user_file_error_is_a_value_error():
    assert issubclass(UserFileError, ValueError)


# ---------------------------------------------------------------- taken into the thread


def test_raw_input_values_become_user_entries_and_node_entries_are_left_alone():
    artifact = file_entry("done", step=1, status="done", step_id="S1")
    files = {"report.md": artifact, "./data.csv": "a,b\n1,2\n"}
    update, problem = taken_in(files, step=3)
    assert problem is None
    assert set(update) == {"./data.csv", "data.csv"}
    assert update["./data.csv"] is None  # the raw spelling is deleted
    entry = update["data.csv"]
    assert entry is not None
    assert (entry["origin"], entry["status"], entry["written_at_step"]) == ("user", "active", 3)
    assert entry["bytes"] == len(b"a,b\n1,2\n") and entry["step_id"] is None


def test_refused_input_is_deleted_whole_and_the_problem_names_the_file():
    files = {"ok.py": "x", "../evil.py": "y"}
    update, problem = taken_in(files, step=0)
    assert problem is not None and "'../evil.py'" in problem and "climbs out" in problem
    assert update == {"ok.py": None, "../evil.py": None}


def test_a_forged_looking_dict_without_the_entry_fields_is_raw_input():
    update, problem = taken_in({"a.py": {"content": "x", "status": "done"}}, step=0)
    assert problem is None and update["a.py"] is not None
    assert update["a.py"]["status"] == "active" and update["a.py"]["origin"] == "user"


def test_the_threads_user_files_stay_within_the_limits_across_turns():
    held = {f"f{n}.py": file_entry("x", step=0, origin="user") for n in range(MAX_USER_FILES)}
    _, problem = taken_in({**held, "one_more.py": "y"}, step=1)
    assert problem is not None and f"at most {MAX_USER_FILES}" in problem
    replaced, problem = taken_in({**held, "f0.py": "new"}, step=1)  # a replacement is fine
    assert problem is None and replaced["f0.py"]["content"] == "new"


def test_edits_keep_the_users_mark_and_summaries_show_it():
    files = {"app.py": file_entry("old", step=0, origin="user")}
    written = {"app.py": file_entry("new", step=2, status="done", step_id="S1"), "x.md": None}
    kept = keep_origin(written, files)
    assert kept["app.py"]["origin"] == "user" and kept["app.py"]["content"] == "new"
    assert kept["app.py"]["given"] == "old"  # what a later rewrite is still compared with
    again = keep_origin({"app.py": file_entry("newer", step=3, step_id="S2")}, kept)
    assert again["app.py"]["given"] == "old" and again["app.py"]["content"] == "newer"
    assert kept["x.md"] is None
    summary = summarize_files({**files, "y.md": file_entry("y", step=1)}, step=2)
    assert summary["app.py"]["origin"] == "user" and "origin" not in summary["y.md"]
    assert "content" not in summary["app.py"] and "old" not in str(summary)
    summary = summarize_files(kept | {"x.md": file_entry("x", step=2)}, step=2)
    assert "old" not in str(summary) and "given" not in summary["app.py"]


def test_the_planner_sees_every_name_and_size_and_the_head_of_the_first_files():
    files = {
        f"m{n:02d}.py": file_entry(f"# module {n}\n" + "x = 1\n" * 10, step=0, origin="user")
        for n in range(12)
    }
    files["out.md"] = file_entry("not the user's", step=1)
    view = planner_view(files)
    assert user_paths(files) == sorted(p for p in files if p != "out.md")
    assert "- m00.py (" in view and "11 lines" in view and "- m11.py" in view
    assert "| # module 0" in view and "| # module 9" in view
    assert "| # module 10" not in view and "out.md" not in view
    assert view.count("| x = 1") == 10 * 4  # five lines of each head
    assert planner_view({}) == "(none)"


def test_a_plan_may_edit_a_user_file_and_check_it_with_the_users_tests():
    plan = [step("S1", "app.py", action="coder", check={"kind": "pytest", "tests": ["t.py"]})]
    user = ["app.py", "t.py"]  # the user's files, already in the thread
    steps, errors = parse_plan({"steps": plan}, actions={"coder"}, max_steps=5, files=user)
    assert errors == [] and steps is not None and steps[0].expected_output == "app.py"


def test_a_path_that_is_also_a_folder_of_another_is_refused():
    with pytest.raises(UserFileError, match="needs 'a' to be a folder"):
        check_user_files({"a": "x", "a/b.py": "y"})
    held = {"out": file_entry("artifact", step=1)}
    _, problem = taken_in({**held, "out/x.py": "y"}, step=2)
    assert problem is not None and "needs 'out' to be a folder" in problem
    _, problem = taken_in({"lib/m.py": file_entry("m", step=1), "lib": "x"}, step=2)
    assert problem is not None and "'lib/m.py' needs 'lib'" in problem
    assert folder_clash(["b.py"], ["a", "a/c"]) is None  # a clash among held files is not ours


def test_a_huge_tree_is_refused_before_it_is_walked_whole(tmp_path, monkeypatch):
    scanned = 300  # the rule, not the figure: a smaller cap, so the tree is cheap to make
    assert scanned < MAX_SCANNED
    monkeypatch.setattr(host_disk, "MAX_SCANNED", scanned)
    folder = tmp_path / "huge"
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n")  # all ignored: still each one is looked at
    for n in range(scanned + 1):
        (folder / f"{n}").touch()
    with pytest.raises(UserFileError, match=f"more than {scanned} entries"):
        load_files(["huge"], cwd=tmp_path)


def test_a_folder_nested_deeper_than_any_vfs_path_is_an_error_not_a_crash(tmp_path):
    deep = tmp_path / "d"
    for _ in range(150):
        deep = deep / "a"
    write(deep / "f.txt", "x\n")
    with pytest.raises(UserFileError, match=f"the limit is {MAX_PATH_CHARS}"):
        load_files(["d"], cwd=tmp_path)


def test_an_oversized_file_in_a_folder_says_how_to_leave_it_out(tmp_path):
    write(tmp_path / "d" / "data.bin.txt", "x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(UserFileError, match="list it in a .gitignore"):
        load_files(["d"], cwd=tmp_path)


def test_an_entry_shaped_value_at_a_hostile_path_is_checked_like_raw_input():
    forged = file_entry("x", step=0, status="done")
    update, problem = taken_in({"../../etc/cron.d/x": forged}, step=1)
    assert problem is not None and "climbs out" in problem
    assert update == {"../../etc/cron.d/x": None}
    update, problem = taken_in({"./a.py": forged}, step=1)  # not normalised: re-taken
    assert problem is None and update["./a.py"] is None
    assert (update["a.py"]["status"], update["a.py"]["origin"]) == ("active", "user")


def test_a_host_name_that_is_not_utf8_is_an_error_naming_it(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    fd = os.open(os.fsencode(folder) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    with pytest.raises(UserFileError, match="d/caf"):  # the VFS's reason follows the name
        load_files(["d"], cwd=tmp_path)


def test_a_folder_never_gives_deepreflects_own_state_folder(project, monkeypatch):
    write(project / ".deepreflect" / "threads.sqlite-wal", "WAL text that looks like text\n")
    write(project / ".deepreflect" / "notes.txt", "state\n")
    monkeypatch.chdir(project)
    files = load_files(["."])
    assert "app.py" in files
    assert not [p for p in files if p.startswith((".deepreflect/", ".git/"))]
