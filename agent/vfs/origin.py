"""The user's files in the thread's state: a ``FileEntry`` with ``origin: "user"``.

The planner takes a graph input's raw values in (:func:`taken_in`) by the rules of
:mod:`agent.vfs.user_files`; every step reads a user file, and a step whose
``expected_output`` names it edits it in place (:func:`keep_origin`: the marker stays, so
export and reflection still know whose file it is, and an edited module keeps the text the
user gave, :func:`given`, which a later rewrite is still compared with); the planner sees
their names and first lines (:func:`planner_view`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any, cast

from agent.vfs.entries import FileEntry, PathError, file_entry, validate_path
from agent.vfs.user_files import (
    MAX_USER_BYTES,
    MAX_USER_FILES,
    UserFileError,
    check_user_files,
    folder_clash,
)

__all__ = [
    "USER",
    "given",
    "given_module",
    "is_user_file",
    "keep_base",
    "keep_origin",
    "planner_view",
    "same_as_given",
    "taken_in",
    "user_paths",
]

USER = "user"
"""``FileEntry.origin`` of a file the user gave."""
# how much of the user's files the planner sees: every name and size, the head of the first few
HEAD_FILES, HEAD_LINES, HEAD_WIDTH = 10, 5, 120


def is_user_file(entry: object) -> bool:
    return isinstance(entry, Mapping) and entry.get("origin") == USER


def user_paths(files: Mapping[str, Any]) -> list[str]:
    """The paths of the user's files, sorted."""
    return sorted(path for path, entry in files.items() if is_user_file(entry))


def _is_entry(value: object) -> bool:
    """Whether ``value`` is a ``FileEntry`` a node wrote, not a raw input value."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("content"), str)
        and isinstance(value.get("sha256"), str)
        and isinstance(value.get("written_at_step"), int)
        and value.get("status") in ("active", "done", "failed")
    )


def _normalised(path: object) -> bool:
    """Whether ``path`` is a valid VFS path as written: every node writes only such paths, so
    an entry at any other came in with a graph input and is checked like one."""
    try:
        return validate_path(path) == path
    except PathError:
        return False


def taken_in(files: Mapping[str, Any], step: int) -> tuple[dict[str, FileEntry | None], str | None]:
    """The ``files`` update that turns the raw values a graph input wrote (plain strings) into
    user ``FileEntry`` records, and the problem that refuses them all (then the update only
    deletes them: a refused file never stays in the thread)."""
    raw = {p: v for p, v in files.items() if not (_is_entry(v) and _normalised(p))}
    if not raw:
        return {}, None
    deleted: dict[str, FileEntry | None] = dict.fromkeys(raw)
    try:
        checked = check_user_files(raw)
    except UserFileError as exc:
        return deleted, str(exc)
    held = [p for p, e in files.items() if _is_entry(e) and p not in checked]
    if problem := folder_clash(checked, held):
        return deleted, problem
    kept = {p: e for p, e in files.items() if is_user_file(e) and p not in checked}
    if len(kept) + len(checked) > MAX_USER_FILES:
        n = len(kept) + len(checked)
        return deleted, f"the thread would hold {n} user files; at most {MAX_USER_FILES}"
    total = sum(int(e.get("bytes") or 0) for e in kept.values())
    total += sum(len(c.encode("utf-8")) for c in checked.values())
    if total > MAX_USER_BYTES:
        msg = f"the thread's user files would total {total} bytes; at most {MAX_USER_BYTES}"
        return deleted, msg
    entries = {path: file_entry(text, step=step, origin=USER) for path, text in checked.items()}
    return deleted | entries, None


def given(entry: Mapping[str, Any]) -> str:
    """The text of a user file as the user gave it: its ``given`` once a step edited it
    (a Python module's), else its content."""
    return str(entry.get("given", entry.get("content", "")))


def given_module(files: Mapping[str, Any], path: str) -> str | None:
    """The text of the user's module at ``path`` as the user gave it; None for any other
    file (only a module keeps that text once a step edited it, :func:`keep_origin`)."""
    entry = files.get(path)
    if not is_user_file(entry) or not path.lower().endswith(".py"):
        return None
    return given(cast(Mapping[str, Any], entry))


def keep_origin(
    written: Mapping[str, FileEntry | None], files: Mapping[str, Any]
) -> dict[str, FileEntry | None]:
    """A step's writes, with the user's mark kept on the user files it edited, and an edited
    module's text as the user gave it (:func:`given`)."""
    kept = dict(written)
    for path, entry in written.items():
        before = files.get(path)
        if entry is None or not is_user_file(before):
            continue
        mark: dict[str, Any] = {"origin": USER}
        if path.lower().endswith(".py"):
            mark["given"] = given(cast(Mapping[str, Any], before))
        kept[path] = cast(FileEntry, {**entry, **mark})
    return kept


def planner_view(files: Mapping[str, Any]) -> str:
    """What the planner sees of the user's files: each name, size and line count, and the
    first lines of the first few, so it can name them in steps and checks."""
    paths = user_paths(files)
    if not paths:
        return "(none)"
    rows = []
    for n, path in enumerate(paths):
        content = str(files[path].get("content") or "")
        lines = content.splitlines()
        rows.append(f"- {path} ({files[path].get('bytes', 0)} bytes, {len(lines)} lines)")
        if n < HEAD_FILES:
            rows += [f"    | {line[:HEAD_WIDTH]}" for line in lines[:HEAD_LINES]]
    return "\n".join(rows)


def keep_base(
    written: Mapping[str, FileEntry | None], files: Mapping[str, Any]
) -> dict[str, FileEntry | None]:
    """A step's writes, a workspace folder file keeping the ``base`` it was first found at
    when this step rewrote the thread's version of it (and so found no disk file itself)."""
    kept = dict(written)
    for path, entry in written.items():
        before = files.get(path)
        if entry is None or "base" in entry or not isinstance(before, Mapping):
            continue
        if isinstance(before.get("base"), Mapping):
            kept[path] = cast(FileEntry, {**entry, "base": dict(before["base"])})
    return kept


def same_as_given(path: str, before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` again: the same text (white space at its ends aside),
    or for a module the same code (its syntax tree: comments and layout aside)."""
    if before.strip() == after.strip():
        return True
    if not path.lower().endswith(".py"):
        return False
    try:
        return ast.dump(ast.parse(before)) == ast.dump(ast.parse(after))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
