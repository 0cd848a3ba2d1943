"""The user's files: what a caller hands a run to read or edit, checked once at the boundary.

Three ways in, one set of rules: ``deepreflect run --file PATH`` (:func:`load_files` reads
the host disk), ``run(graph, goal, files={...})`` (:func:`check_user_files`) and
``{"files": {path: text}}`` in the graph's input, which the planner takes in
(:func:`taken_in`) before anything reads the filesystem. Every path passes the virtual
filesystem's own validator; sizes and counts are bounded; text only. A user file is a
``FileEntry`` with ``origin: "user"``: every step reads it, and a step whose
``expected_output`` names it edits it in place (the marker stays, so export and reflection
still know whose file it is).

Naming on the host (``load_files``): a file or folder inside the current directory keeps
its path relative to it (``--file src`` gives ``src/app.py``, ``--file .`` the whole tree at
the root); one outside it is named from its parent (``--file ../lib`` gives ``lib/x.py``,
``--file /tmp/a.py`` gives ``a.py``). A folder adds its files recursively, skipping ``.git/``,
what its ``.gitignore`` files ignore (and those between it and its repository's root), binary
files and symlinks that lead out of it (each skip noted); a file named explicitly is read
even when ignored, but a binary one is refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pathspec import GitIgnoreSpec

from agent.errors import ConfigError
from agent.vfs.entries import MAX_FILE_BYTES, FileEntry, PathError, file_entry, validate_path

__all__ = [
    "MAX_USER_BYTES",
    "MAX_USER_FILES",
    "USER",
    "UserFileError",
    "check_user_files",
    "describe_files",
    "folder_clash",
    "is_user_file",
    "keep_origin",
    "load_files",
    "planner_view",
    "taken_in",
    "user_paths",
]

USER = "user"
"""``FileEntry.origin`` of a file the user gave."""
MAX_USER_FILES = 200
"""User files a thread may hold: well below the VFS's 500, so steps can still write theirs."""
MAX_USER_BYTES = 5_000_000
"""Their total UTF-8 size; each one is also bounded by ``agent.vfs.entries.MAX_FILE_BYTES``."""
MAX_SCANNED = 20_000
"""Entries a folder walk looks at, ignored and binary ones included, before it gives up."""
RESERVED = "work/"
"""The steps' scratch space: a user file there could be overwritten as scratch."""
# how much of the user's files the planner sees: every name and size, the head of the first few
HEAD_FILES, HEAD_LINES, HEAD_WIDTH = 10, 5, 120


class UserFileError(ConfigError):
    """A user file that cannot be taken: the message names it (CLI exit 2, a ``ValueError``)."""


# ------------------------------------------------------------------ the mapping a caller gives


def _shown(path: object) -> str:
    text = repr(path)
    return text if len(text) <= 82 else text[:80] + "…"


def _vfs_path(path: object) -> str:
    """The normalised VFS path of a user file, by the VFS's own rules, or a UserFileError."""
    try:
        normalised = validate_path(path)
    except PathError as exc:
        msg = f"file {_shown(path)}: {exc}"
        raise UserFileError(msg) from None
    if normalised.startswith(RESERVED):
        msg = f"file {_shown(path)}: {RESERVED} is the steps' scratch space; use another folder"
        raise UserFileError(msg)
    return normalised


def _text(path: str, value: object) -> str:
    """The content of one given file: a string, or deepagents' ``{"content": str | [lines]}``."""
    if isinstance(value, Mapping):
        value = value.get("content")
        if isinstance(value, list) and all(isinstance(line, str) for line in value):
            value = "\n".join(value)
    if not isinstance(value, str):
        msg = f"file {path!r}: content must be text (a string), not {type(value).__name__}"
        raise UserFileError(msg)
    if "\x00" in value:
        msg = f"file {path!r} looks binary (it contains NUL bytes); only text files can be given"
        raise UserFileError(msg)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"file {path!r} is not valid UTF-8 text (it holds a lone surrogate)"
        raise UserFileError(msg) from None
    return value


def _size_problem(path: str, size: int) -> str | None:
    if size > MAX_FILE_BYTES:
        return f"file {path!r} is {size} bytes; the limit is {MAX_FILE_BYTES} per file"
    return None


def check_user_files(files: object) -> dict[str, str]:
    """``files`` as ``{normalised path: text}``, or a :class:`UserFileError` naming the first
    path that breaks a rule (VFS path rules, text only, per-file, total and count limits)."""
    if not isinstance(files, Mapping):
        msg = f"files must map paths to text contents, not {type(files).__name__}"
        raise UserFileError(msg)
    if len(files) > MAX_USER_FILES:
        msg = f"{len(files)} files given; at most {MAX_USER_FILES} are accepted"
        raise UserFileError(msg)
    checked: dict[str, str] = {}
    total = 0
    for given, value in files.items():
        path = _vfs_path(given)
        if path in checked:
            msg = f"file {path!r} is given twice (as {_shown(given)} too)"
            raise UserFileError(msg)
        content = _text(path, value)
        size = len(content.encode("utf-8"))
        if problem := _size_problem(path, size):
            raise UserFileError(problem)
        total += size
        if total > MAX_USER_BYTES:
            msg = f"the files given total more than {MAX_USER_BYTES} bytes (at {path!r})"
            raise UserFileError(msg)
        checked[path] = content
    if problem := folder_clash(checked):
        raise UserFileError(problem)
    return checked


def folder_clash(paths: Iterable[str], held: Iterable[str] = ()) -> str | None:
    """Why ``paths`` cannot all be files next to ``held`` ones: a path that is also a folder
    of another (``a`` and ``a/b``) could be neither checked out nor exported, or None."""
    given, others = set(paths), set(held)
    every = given | others
    for path in sorted(every):
        parts = path.split("/")
        for n in range(1, len(parts)):
            folder = "/".join(parts[:n])
            if folder in (every if path in given else given):
                return f"file {path!r} needs {folder!r} to be a folder, and it is a file"
    return None


# ------------------------------------------------------------------ in the thread's state


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


def keep_origin(
    written: Mapping[str, FileEntry | None], files: Mapping[str, Any]
) -> dict[str, FileEntry | None]:
    """A step's writes, with the user's mark kept on the user files it edited."""
    kept = dict(written)
    for path, entry in written.items():
        if entry is not None and is_user_file(files.get(path)):
            kept[path] = cast(FileEntry, {**entry, "origin": USER})
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


# ------------------------------------------------------------------ the host disk


@dataclass
class _Walk:
    """One folder being read: where it is and the ignore rules that apply in it."""

    top: Path
    """The folder, resolved: no file outside it is read through a symlink."""
    prefix: str
    """Its VFS path ("" for the root)."""
    specs: list[tuple[Path, GitIgnoreSpec]]
    """``.gitignore`` rules by the folder they live in, outermost first."""

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Git's rule: the deepest ``.gitignore`` with a matching pattern decides."""
        verdict = False
        for base, spec in self.specs:
            try:
                relative = path.relative_to(base).as_posix()
            except ValueError:
                continue
            result = spec.check_file(relative + ("/" if is_dir else ""))
            if result.include is not None:
                verdict = result.include
        return verdict


def _spec(folder: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    ignore = folder / ".gitignore"
    if not ignore.is_file() or ignore.is_symlink():
        return []
    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    return [(folder, GitIgnoreSpec.from_lines(lines))]


def _outer_specs(top: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    """The ``.gitignore`` files of the folders above ``top`` up to its repository's root
    (none when ``top`` is not inside a git repository)."""
    above: list[Path] = []
    for folder in top.parents:
        above.append(folder)
        if (folder / ".git").exists():
            return [s for f in reversed(above) for s in _spec(f)]
    return []


def _read(path: Path, shown: str) -> bytes:
    """A regular file's bytes, never more than the per-file limit plus one (a FIFO or device
    is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        msg = f"{shown} cannot be read: {exc.strerror or exc}"
        raise UserFileError(msg) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            msg = f"{shown} is not a regular file"
            raise UserFileError(msg)
        if problem := _size_problem(shown, info.st_size):
            raise UserFileError(problem)
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            msg = f"{shown} cannot be read: {exc.strerror or exc}"
            raise UserFileError(msg) from None
    if problem := _size_problem(shown, len(data)):
        raise UserFileError(problem)
    return data


def _decoded(data: bytes) -> str | None:
    """The text of a file, or None for a binary one (a NUL byte, or not UTF-8)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class _Loader:
    """Reads the given paths into ``{vfs path: text}``, keeping the limits as it goes."""

    def __init__(self, cwd: Path, skipped: list[str]) -> None:
        self.cwd = cwd
        self.skipped = skipped
        self.files: dict[str, str] = {}
        self.sources: dict[str, Path] = {}
        self.total = 0
        self.scanned = 0

    def add(self, vfs_path: str, source: Path, text: str) -> None:
        path = _vfs_path(vfs_path)
        if path in self.files:
            if self.sources[path] == source.resolve():
                return
            msg = f"{source} and {self.sources[path]} would both be {path!r}"
            raise UserFileError(msg)
        if len(self.files) >= MAX_USER_FILES:
            msg = (
                f"more than {MAX_USER_FILES} files given (at {source}); name fewer, or list "
                "what to leave out in a .gitignore"
            )
            raise UserFileError(msg)
        self.total += len(text.encode("utf-8"))
        if self.total > MAX_USER_BYTES:
            msg = f"the files given total more than {MAX_USER_BYTES} bytes (at {source})"
            raise UserFileError(msg)
        self.files[path] = text
        self.sources[path] = source.resolve()

    def name(self, given: Path) -> str:
        """The VFS path of a given file or folder (the module docstring's rule)."""
        absolute = Path(os.path.abspath(self.cwd / given))
        if absolute == self.cwd:
            return ""
        if absolute.is_relative_to(self.cwd):
            return absolute.relative_to(self.cwd).as_posix()
        return absolute.name

    def given(self, raw: str | os.PathLike[str]) -> None:
        given = Path(raw)
        target = self.cwd / given
        if not target.exists():
            msg = f"--file {raw}: no such file or folder"
            raise UserFileError(msg)
        name = self.name(given)
        if target.is_dir():
            top = target.resolve()
            self.folder(_Walk(top, name, _outer_specs(top) + _spec(top)), top)
            return
        text = _decoded(_read(target.resolve(), str(raw)))
        if text is None:
            msg = f"--file {raw} is binary (a NUL byte, or not UTF-8); only text files can be given"
            raise UserFileError(msg)
        self.add(name, target, text)

    def folder(self, walk: _Walk, folder: Path) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            msg = f"folder {folder} cannot be read: {exc.strerror or exc}"
            raise UserFileError(msg) from None
        self.scanned += len(entries)
        if self.scanned > MAX_SCANNED:
            msg = (
                f"{walk.top} holds more than {MAX_SCANNED} entries; name the folders to give, "
                "or list what to leave out in a .gitignore"
            )
            raise UserFileError(msg)
        for entry in entries:
            path = Path(entry.path)
            shown = path.relative_to(walk.top).as_posix()
            vfs = f"{walk.prefix}/{shown}" if walk.prefix else shown
            if entry.name == ".git":
                continue
            if entry.is_symlink():
                self.link(walk, path, vfs)
            elif entry.is_dir(follow_symlinks=False):
                if not walk.ignored(path, is_dir=True):
                    _vfs_path(vfs)  # a folder too deep for any path inside it: said here
                    inner = _Walk(walk.top, walk.prefix, walk.specs + _spec(path))
                    self.folder(inner, path)
            elif entry.is_file(follow_symlinks=False):
                if not walk.ignored(path, is_dir=False):
                    self.file(path, vfs)
            else:
                self.skipped.append(f"{vfs}: not a regular file")

    def link(self, walk: _Walk, path: Path, vfs: str) -> None:
        """A symlink inside a folder: read as the file it names only when that file is in
        the folder too; a folder or anything outside is never followed."""
        target = path.resolve()
        if not target.is_relative_to(walk.top):
            self.skipped.append(f"{vfs}: a symlink that leads out of the folder")
        elif not target.is_file():
            self.skipped.append(f"{vfs}: a symlink to a folder (not followed)")
        elif not walk.ignored(path, is_dir=False):
            self.file(target, vfs)

    def file(self, path: Path, vfs: str) -> None:
        try:
            data = _read(path, vfs)
        except UserFileError as exc:
            msg = f"{exc} (list it in a .gitignore to leave it out)"
            raise UserFileError(msg) from None
        text = _decoded(data)
        if text is None:
            self.skipped.append(f"{vfs}: binary")
            return
        self.add(vfs, path, text)


def load_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    skipped: list[str] | None = None,
) -> dict[str, str]:
    """Read files and folders from disk as ``{vfs path: text}`` for ``run(files=...)``.

    Args:
        paths: files and folders, relative to ``cwd`` (default: the current directory).
        skipped: if given, receives one line per file a folder held but that was left out
            (binary, a symlink leading out, not a regular file); ignored files are silent.

    Raises:
        UserFileError: a path that does not exist, an explicitly named binary file, a path
            the VFS refuses, or a size or count limit exceeded; the message names the file.
    """
    notes = skipped if skipped is not None else []
    loader = _Loader(Path(os.path.abspath(cwd or os.getcwd())), notes)
    for path in paths:
        loader.given(path)
    return loader.files


def describe_files(files: Mapping[str, str], limit: int = 5) -> str:
    """One line for a person: how many files, how large, the first few names."""
    if not files:
        return "none (the folders given hold no text file to take)"
    total = sum(len(text.encode("utf-8")) for text in files.values())
    names = sorted(files)
    more = f", … ({len(names) - limit} more)" if len(names) > limit else ""
    shown = ", ".join(names[:limit]) + more
    return f"{len(names)} file{'s' if len(names) != 1 else ''}, {total} bytes: {shown}"
