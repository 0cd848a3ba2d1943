"""The user's files: what a caller hands a run to read or edit, checked once at the boundary.

Three ways in, one set of rules: ``deepreflect run --file PATH`` (``load_files`` in
:mod:`agent.vfs.host_disk` reads the host disk), ``run(graph, goal, files={...})``
(:func:`check_user_files`) and ``{"files": {path: text}}`` in the graph's input, which the
planner takes in (``taken_in`` in :mod:`agent.vfs.origin`) before anything reads the
filesystem. Every path passes the virtual filesystem's own validator; sizes and counts are
bounded; text only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent.errors import ConfigError
from agent.vfs.entries import MAX_FILE_BYTES, SCRATCH, PathError, validate_path

__all__ = [
    "MAX_USER_BYTES",
    "MAX_USER_FILES",
    "UserFileError",
    "check_user_files",
    "folder_clash",
    "size_problem",
    "user_file_path",
]

MAX_USER_FILES = 200
"""User files a thread may hold: well below the VFS's 500, so steps can still write theirs."""
MAX_USER_BYTES = 5_000_000
"""Their total UTF-8 size; each one is also bounded by ``agent.vfs.entries.MAX_FILE_BYTES``."""
RESERVED = SCRATCH
"""The steps' scratch space: a user file there could be overwritten as scratch."""


class UserFileError(ConfigError):
    """A user file that cannot be taken: the message names it (CLI exit 2, a ``ValueError``)."""


def _shown(path: object) -> str:
    text = repr(path)
    return text if len(text) <= 82 else text[:80] + "…"


def user_file_path(path: object) -> str:
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


def size_problem(path: str, size: int) -> str | None:
    """Why a file of ``size`` bytes is too large to take, or None."""
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
        path = user_file_path(given)
        if path in checked:
            msg = f"file {path!r} is given twice (as {_shown(given)} too)"
            raise UserFileError(msg)
        content = _text(path, value)
        size = len(content.encode("utf-8"))
        if problem := size_problem(path, size):
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
