"""A real folder as the workspace, read in place: nothing of it is copied into the thread.

A step lists, globs, greps and reads the folder's files where they are; what a step writes
stays in the thread's files until the user applies it (``deepreflect apply``,
:mod:`agent.runs.apply`). Each read and each write of a folder file notes the file as it was
on disk (:class:`Base`: its hash and modification time), so that ``apply`` can refuse a file
changed on disk since.

What is reachable: the folder's regular files that its ``.gitignore`` files do not ignore,
outside ``.git/`` and ``.deepreflect/`` (:mod:`agent.vfs.ignore`). No path leaves the folder:
paths are relative and checked by the virtual filesystem's rules, every symlink on the way is
resolved and refused when it leads out (with an error saying so), and files are opened
without following a final link. Binary files are listed, never read as text.

Limits: :data:`MAX_SCANNED` entries walked, ``MAX_LISTED`` paths shown by ``ls``/``glob``,
``MAX_FILE_BYTES`` per file read, :data:`MAX_GREP_BYTES` searched by one ``grep``, and
:data:`MAX_SANDBOX_FILES` / :data:`MAX_SANDBOX_BYTES` given to a check or ``execute``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.vfs.ignore import (
    MAX_SCANNED,
    SKIPPED_FOLDERS,
    IgnoreRules,
    decoded,
    folder_rules,
    outer_rules,
)
from agent.vfs.paths import MAX_FILE_BYTES, PathError, validate_path

__all__ = [
    "MAX_GREP_BYTES",
    "MAX_SANDBOX_BYTES",
    "MAX_SANDBOX_FILES",
    "MAX_SCANNED",
    "Base",
    "Folder",
    "FolderError",
    "base_of",
]

MAX_GREP_BYTES = 20_000_000
"""Bytes one ``grep`` reads from the folder before it stops."""
MAX_SANDBOX_FILES = 5_000
"""Text files of the folder a check or ``execute`` is given at most."""
MAX_SANDBOX_BYTES = 50_000_000
"""Their total size at most."""
_SNIFF = 8192  # bytes read to tell a binary file in a listing


class FolderError(PathError):
    """A workspace folder that cannot be used (missing, not a folder, too large)."""


@dataclass(frozen=True)
class Base:
    """A folder file as a step found it: what ``apply`` compares the disk with."""

    sha256: str | None
    """Hash of its bytes; None when it did not exist."""
    mtime_ns: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "mtime_ns": self.mtime_ns}


def base_of(value: object) -> Base | None:
    """A :class:`Base` from a stored ``FileEntry.base`` (None when there is none)."""
    if not isinstance(value, dict) or "sha256" not in value:
        return None
    sha, mtime = value.get("sha256"), value.get("mtime_ns")
    return Base(sha if isinstance(sha, str) else None, mtime if isinstance(mtime, int) else None)


@dataclass
class Folder:
    """One workspace folder on the host, resolved once."""

    root: Path
    rules: IgnoreRules = field(default_factory=IgnoreRules)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Folder:
        """The folder at ``path``; FolderError when it is missing or not a folder."""
        given = Path(path).expanduser()
        if not given.is_dir():
            what = "does not exist" if not given.exists() else "is not a folder"
            msg = f"workspace {os.fspath(path)!r} {what}"
            raise FolderError(msg)
        root = given.resolve()
        return cls(root, IgnoreRules(outer_rules(root) + folder_rules(root)))

    # -- where a path is -------------------------------------------------------------------

    def locate(self, path: str, *, ignore: bool = True) -> tuple[str, Path]:
        """The normalised relative path and its place on disk (its links resolved), or a
        PathError saying why the folder does not give it: outside the folder (a symlink
        leading out included), in ``.git/`` or ``.deepreflect/``, or (with ``ignore``)
        ignored by a ``.gitignore``."""
        relative = validate_path(path)
        parts = relative.split("/")
        if parts[0] in SKIPPED_FOLDERS:
            raise PathError(f"permission_denied: {relative!r} is in {parts[0]}/, never read")
        current = self.root
        rules = self.rules
        for i, name in enumerate(parts):
            current = current / name
            last = i == len(parts) - 1
            if current.is_symlink():
                target = _resolved(current)
                if target is None or not target.is_relative_to(self.root):
                    shown = "/".join(parts[: i + 1])
                    where = "in a loop" if target is None else "out of the workspace folder"
                    msg = (
                        f"permission_denied: {shown!r} is a symlink leading {where}; it "
                        "cannot be read or written"
                    )
                    raise PathError(msg)
            if ignore and rules.ignored(current, is_dir=not last):
                msg = f"{'/'.join(parts[: i + 1])!r} is ignored by a .gitignore of the workspace"
                raise PathError(msg)
            if not last and current.is_dir():
                rules = rules.inside(current)
        return relative, current.resolve()

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> tuple[str, Base]:
        """The text of a folder file and the :class:`Base` it was read at."""
        relative, target = self.locate(path)
        data, base = self._bytes(relative, target)
        if data is None:
            raise PathError(f"file {relative!r} not found; ls() lists the files")
        text = decoded(data)
        if text is None:
            msg = f"{relative!r} is a binary file ({len(data)} bytes): listed, not readable as text"
            raise PathError(msg)
        return text, base

    def base(self, path: str) -> Base:
        """The file at ``path`` as it is on disk now (``sha256`` None: it does not exist);
        an ignored path too (a step may write one; it is never read to the model)."""
        relative, target = self.locate(path, ignore=False)
        return self._bytes(relative, target, limit=None)[1]

    def _bytes(
        self, relative: str, target: Path, limit: int | None = MAX_FILE_BYTES
    ) -> tuple[bytes | None, Base]:
        """The file's bytes (None: it does not exist) and its :class:`Base`."""
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None, Base(None, None)
        except OSError as exc:
            raise PathError(f"{relative!r} cannot be read: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise PathError(f"{relative!r} is not a regular file")
            if limit is not None and info.st_size > limit:
                msg = f"{relative!r} is {info.st_size} bytes; the limit is {limit}"
                raise TooLarge(msg)
            data = handle.read() if limit is None else handle.read(limit + 1)
        return data, Base(hashlib.sha256(data).hexdigest(), info.st_mtime_ns)

    # -- walking ---------------------------------------------------------------------------

    def paths(self) -> list[str]:
        """Every reachable file's relative path, sorted; FolderError past MAX_SCANNED."""
        found: list[str] = []
        self._walk(self.root, "", self.rules, found, [0])
        return sorted(found)

    def _walk(
        self, folder: Path, prefix: str, rules: IgnoreRules, found: list[str], seen: list[int]
    ) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return  # an unreadable folder holds nothing the agent can read
        seen[0] += len(entries)
        if seen[0] > MAX_SCANNED:
            msg = (
                f"the workspace holds more than {MAX_SCANNED} entries; list what to leave out "
                "in a .gitignore"
            )
            raise FolderError(msg)
        for entry in entries:
            path = Path(entry.path)
            relative = f"{prefix}{entry.name}"
            if entry.name in SKIPPED_FOLDERS:
                continue
            if entry.is_symlink():
                target = _resolved(path)
                if target is not None and target.is_relative_to(self.root) and target.is_file():
                    if not rules.ignored(path, is_dir=False):
                        found.append(relative)
                continue  # a link leading out, or to a folder, is never followed
            if entry.is_dir(follow_symlinks=False):
                if not rules.ignored(path, is_dir=True):
                    self._walk(path, relative + "/", rules.inside(path), found, seen)
            elif entry.is_file(follow_symlinks=False) and not rules.ignored(path, is_dir=False):
                found.append(relative)

    def is_binary(self, path: str) -> bool:
        """Whether the file's first bytes say binary (a NUL, or not UTF-8)."""
        try:
            with open(self.root / path, "rb") as handle:
                head = handle.read(_SNIFF)
        except OSError:
            return False
        if b"\x00" in head:
            return True
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            return exc.start < len(head) - 4  # a character cut at the sniff's end is text
        return False

    def texts(
        self,
        paths: list[str],
        *,
        max_bytes: int = MAX_GREP_BYTES,
        note: list[str] | None = None,
        skipped: list[str] | None = None,
        left_out: dict[str, str] | None = None,
    ) -> Iterator[tuple[str, str]]:
        """``(path, text)`` of the text files among ``paths``, until ``max_bytes`` were
        read (then ``note`` says so); binary and unreadable files are passed over.
        ``skipped`` names each file too large to read, with its size; ``left_out`` gets
        every file passed over, by path, with why."""
        total = 0
        for path in paths:
            try:
                text, _ = self.read(path)
            except TooLarge as exc:
                if skipped is not None:
                    skipped.append(str(exc))
                if left_out is not None:
                    left_out[path] = str(exc)
                continue
            except PathError as exc:
                if left_out is not None:
                    left_out[path] = str(exc)
                continue
            total += len(text.encode("utf-8", errors="surrogatepass"))
            if total > max_bytes:
                if note is not None:
                    note.append(f"read more than {max_bytes} bytes of the workspace")
                return
            yield path, text

    def sandbox_files(self, omitted: dict[str, str] | None = None) -> dict[str, str]:
        """The folder's text files as a check or ``execute`` sees them (before the thread's
        writes are laid over them); ``omitted`` names each file left out (binary, too large,
        unreadable) with why. FolderError past the limits."""
        paths = self.paths()
        if len(paths) > MAX_SANDBOX_FILES:
            msg = (
                f"the workspace has {len(paths)} files; checks and execute take at most "
                f"{MAX_SANDBOX_FILES} (leave some out with a .gitignore)"
            )
            raise FolderError(msg)
        note: list[str] = []
        files = dict(self.texts(paths, max_bytes=MAX_SANDBOX_BYTES, note=note, left_out=omitted))
        if note:
            msg = f"the workspace's text files total more than {MAX_SANDBOX_BYTES} bytes"
            raise FolderError(msg + "; checks and execute cannot be given them all")
        return files


class TooLarge(PathError):
    """A folder file over the size a tool reads."""


def _resolved(link: Path) -> Path | None:
    """Where a symlink leads, its links resolved; None for a loop (or a chain too long)."""
    try:
        return link.resolve()
    except (RuntimeError, OSError):
        return None
