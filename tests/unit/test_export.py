"""Exporting a thread's files: byte for byte, never outside the folder, never overwriting."""

from __future__ import annotations

import json
import os

import pytest

from agent.runs.export import MANIFEST, ExportError, export_files
from agent.vfs.entries import file_entry


def files(**contents: tuple[str, str]) -> dict:
    return {
        path: file_entry(text, step=1, status=status) for path, (text, status) in contents.items()
    }


def test_done_files_are_written_byte_for_byte_and_the_rest_only_with_all(tmp_path):
    thread = {
        "report.md": file_entry("é\r\nline two\n", step=1, status="done"),
        "src/app.py": file_entry("print(1)\n", step=1, status="done"),
        "draft.md": file_entry("not yet", step=1, status="failed"),
    }

    written = export_files(thread, tmp_path / "out")

    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        "report.md",
        "src/app.py",
    ]
    assert (tmp_path / "out" / "report.md").read_bytes() == "é\r\nline two\n".encode()
    assert not (tmp_path / "out" / "draft.md").exists()

    export_files(thread, tmp_path / "all", include_all=True)
    manifest = json.loads((tmp_path / "all" / MANIFEST).read_text())
    assert manifest["draft.md"]["status"] == "failed"
    assert (tmp_path / "all" / "draft.md").read_text() == "not yet"


@pytest.mark.parametrize("path", ["../escape.md", "/etc/escape.md", "a/../../escape.md", "a\\b.md"])
def test_hostile_paths_in_a_thread_are_refused_before_anything_is_written(tmp_path, path):
    thread = {
        "ok.md": file_entry("ok", step=1, status="done"),
        path: file_entry("x", step=1, status="done"),
    }

    with pytest.raises(ExportError, match="refusing"):
        export_files(thread, tmp_path / "out")

    assert not (tmp_path / "out" / "ok.md").exists()
    assert not (tmp_path / "escape.md").exists()


def test_a_symlink_in_the_folder_is_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(outside, tmp_path / "out" / "docs")

    with pytest.raises(ExportError, match="symlink"):
        export_files({"docs/a.md": file_entry("x", step=1, status="done")}, tmp_path / "out")

    assert list(outside.iterdir()) == []


def test_an_existing_file_is_replaced_only_with_force(tmp_path):
    (tmp_path / "a.md").write_text("mine")
    thread = {"a.md": file_entry("theirs", step=1, status="done")}

    with pytest.raises(ExportError, match="exists"):
        export_files(thread, tmp_path)
    assert (tmp_path / "a.md").read_text() == "mine"

    export_files(thread, tmp_path, force=True)
    assert (tmp_path / "a.md").read_text() == "theirs"


def test_exporting_under_a_file_says_the_file_is_not_a_folder(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    files = {"a.md": file_entry("A", step=1, status="done")}
    with pytest.raises(ExportError, match="is a file, not a folder"):
        export_files(files, tmp_path / "file.txt" / "sub")
    assert (tmp_path / "file.txt").read_text() == "x"
