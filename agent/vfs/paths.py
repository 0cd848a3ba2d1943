"""The path rules of the virtual filesystem: what a relative POSIX path may be, and the
error a tool returns for one it may not use."""

from __future__ import annotations

import posixpath

from agent.vfs.filenames import name_problem, nfc

__all__ = ["MAX_FILE_BYTES", "MAX_PATH_CHARS", "PathError", "validate_path"]

MAX_PATH_CHARS = 200
MAX_FILE_BYTES = 1_000_000


class PathError(ValueError):
    """A path a subagent may not use; the message is returned to the model as a tool error."""


def validate_path(path: object) -> str:
    """Return the normalised relative POSIX path (NFC, so two spellings of a name are one
    file), or raise :class:`PathError` saying why not and which name to use instead."""
    if not isinstance(path, str) or not path.strip():
        raise PathError("path must be a non-empty string")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    path = nfc(path)
    if "\\" in path:
        raise PathError(f"path {path[:80]!r} contains a backslash; use POSIX '/' separators")
    if len(path) > MAX_PATH_CHARS:
        raise PathError(f"path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise PathError(f"path {path!r} is absolute; use a path relative to the workspace")
    parts = path.split("/")
    if ".." in parts:
        raise PathError(f"path {path!r} climbs out of the workspace with '..'")
    normalised = posixpath.normpath(path)
    if normalised in (".", "") or normalised.startswith("../"):
        raise PathError(f"path {path!r} does not name a file")
    if (problem := name_problem(normalised)) is not None:
        raise PathError(f"path {normalised!r} is refused: {problem}")
    return normalised
