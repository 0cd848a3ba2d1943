"""The user's files read from the host disk: ``deepreflect run --file PATH`` (:func:`load_files`).

Naming: a file or folder inside the current directory keeps its path relative to it
(``--file src`` gives ``src/app.py``, ``--file .`` the whole tree at the root); one outside it
is named from its parent (``--file ../lib`` gives ``lib/x.py``, ``--file /tmp/a.py`` gives
``a.py``). A folder adds its files recursively, skipping ``.git/`` and ``.deepreflect/`` (the
threads database beside the work), what its ``.gitignore`` files ignore (and those between it
and its repository's root), binary files and symlinks that lead out of it (each skip noted); a
file named explicitly is read even when ignored, but a binary one is refused. Paths, sizes and
counts follow :mod:`agent.vfs.user_files`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.vfs.entries import MAX_FILE_BYTES
from agent.vfs.ignore import (
    MAX_SCANNED,
    SKIPPED_FOLDERS,
    IgnoreRules,
    decoded,
    folder_rules,
    outer_rules,
)
from agent.vfs.user_files import (
    MAX_USER_BYTES,
    MAX_USER_FILES,
    UserFileError,
    size_problem,
    user_file_path,
)

__all__ = ["MAX_SCANNED", "SKIPPED_FOLDERS", "describe_files", "load_files"]


@dataclass
class _Walk:
    """One folder being read: where it is and the ignore rules that apply in it."""

    top: Path
    """The folder, resolved: no file outside it is read through a symlink."""
    prefix: str
    """Its VFS path ("" for the root)."""
    rules: IgnoreRules


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
        if problem := size_problem(shown, info.st_size):
            raise UserFileError(problem)
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            msg = f"{shown} cannot be read: {exc.strerror or exc}"
            raise UserFileError(msg) from None
    if problem := size_problem(shown, len(data)):
        raise UserFileError(problem)
    return data


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
        path = user_file_path(vfs_path)
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
            self.folder(_Walk(top, name, IgnoreRules(outer_rules(top) + folder_rules(top))), top)
            return
        text = decoded(_read(target.resolve(), str(raw)))
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
            if entry.name in SKIPPED_FOLDERS:
                continue  # a repository's and deepreflect's own state, never the user's files
            if entry.is_symlink():
                self.link(walk, path, vfs)
            elif entry.is_dir(follow_symlinks=False):
                if not walk.rules.ignored(path, is_dir=True):
                    user_file_path(vfs)  # a folder too deep for any path inside it: said here
                    inner = _Walk(walk.top, walk.prefix, walk.rules.inside(path))
                    self.folder(inner, path)
            elif entry.is_file(follow_symlinks=False):
                if not walk.rules.ignored(path, is_dir=False):
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
        elif not walk.rules.ignored(path, is_dir=False):
            self.file(target, vfs)

    def file(self, path: Path, vfs: str) -> None:
        try:
            data = _read(path, vfs)
        except UserFileError as exc:
            msg = f"{exc} (list it in a .gitignore to leave it out)"
            raise UserFileError(msg) from None
        text = decoded(data)
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
