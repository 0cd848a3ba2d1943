import pytest

from agent.vfs import (
    PathError,
    Workspace,
    file_entry,
    merge_files,
    summarize_files,
    validate_path,
)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../etc/passwd", "climbs out"),
        ("a/../../b", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("C:evil", "absolute"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("x" * 201, "limit"),
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("a/\x07b", "control"),
        (".", "does not name a file"),
    ],
)
def test_hostile_paths_are_rejected_with_a_reason(path, why):
    with pytest.raises(PathError, match=why):
        validate_path(path)


def test_paths_are_normalised():
    assert validate_path("a/./b.md") == "a/b.md"


def test_file_entry_size_and_hash_follow_content():
    entry = file_entry("héllo", step=3, status="done", step_id="S1")
    assert entry["bytes"] == 6
    assert len(entry["sha256"]) == 64
    assert entry["written_at_step"] == 3


def test_merge_files_overwrites_and_deletes_and_is_batching_invariant():
    a, b = file_entry("a", step=1), file_entry("b", step=2)
    writes = [{"x": a}, {"y": b}, {"x": None}]
    together = merge_files({}, writes)
    apart = merge_files(merge_files({}, writes[:1]), writes[1:])
    assert together == apart == {"y": b}


def test_summaries_never_carry_content():
    secret = "SECRET-CONTENT " * 1000
    files = {
        "r.md": file_entry(
            secret,
            step=1,
            status="failed",
            check={"kind": "regex", "passed": False, "score": 0.0, "evidence": "pattern not found"},
        )
    }
    summary = summarize_files(files, step=4)
    assert summary["r.md"]["status"] == "failed"
    assert summary["r.md"]["bytes"] == len(secret)
    assert summary["r.md"]["age_steps"] == 3
    assert summary["r.md"]["check"] == "fail"
    assert "SECRET" not in repr(summary)


def test_workspace_writes_only_its_scope():
    ws = Workspace({"dep.md": "x"}, writable=["out.md"], scratch="work/S1/")
    ws.write("out.md", "ok")
    ws.write("work/S1/notes.txt", "scratch")
    with pytest.raises(PathError, match="permission_denied"):
        ws.write("dep.md", "overwrite a dependency")
    with pytest.raises(PathError, match="permission_denied"):
        ws.write("work/S2/x", "another step's scratch")
    assert ws.written == {"out.md": "ok", "work/S1/notes.txt": "scratch"}


def test_workspace_edit_needs_one_exact_match():
    ws = Workspace({"out.md": "a a b"}, writable=["out.md"])
    with pytest.raises(PathError, match="found 2 times"):
        ws.edit("out.md", "a", "c")
    with pytest.raises(PathError, match="not found"):
        ws.edit("out.md", "zzz", "c")
    ws.edit("out.md", "b", "c")
    assert ws.read("out.md") == "a a c"


def test_workspace_limits_size_and_count():
    ws = Workspace({}, writable=["a", "b"], max_file_bytes=10, max_files=1)
    with pytest.raises(PathError, match="limit is 10"):
        ws.write("a", "x" * 11)
    ws.write("a", "x")
    with pytest.raises(PathError, match="too many files"):
        ws.write("b", "y")
