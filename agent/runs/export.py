"""The files a thread wrote, in the user's hands: read them from state, or write them to disk.

Writing never leaves the target folder: every path is checked by the virtual filesystem's own
rules, no symlink inside the folder is followed, and an existing file is replaced only when
asked (``force``). Contents are written byte for byte as the thread holds them.

The user's files (``origin: "user"``) are exported like artifacts: one a step edited and
checked is ``done`` and written at its own path, so exporting into the folder it came from
(``--force``) puts the edited version in place; one no step touched is written only with
``include_all``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.vfs.entries import PathError, validate_path
from agent.vocabulary import FileStatus

if TYPE_CHECKING:  # the runner imports LangGraph's graph: `deepreflect export` does not need it
    from agent.runs.runner import Graph

__all__ = ["ExportError", "MANIFEST", "artifacts", "export_files"]

MANIFEST = "deepreflect-export.json"
"""Written with ``include_all``: each exported path with its status and sha256."""


class ExportError(ValueError):
    """A file that cannot be written where asked; nothing outside the folder is touched."""


class ExportClash(ExportError):
    """A file exists with other content: ``force`` overwrites it (the CLI's ``--force``)."""

    def __init__(self, target: Path) -> None:
        super().__init__(f"{target} exists with other content; pass force=True to overwrite it")
        self.target = target


def artifacts(graph: Graph, thread_id: str, *, include_all: bool = False) -> dict[str, str]:
    """``{path: content}`` of the thread's done files (every file with ``include_all``)."""
    from agent.runs.runner import thread_config

    files = graph.get_state(thread_config(thread_id)).values.get("files") or {}
    return {path: entry["content"] for path, entry in _chosen(files, include_all).items()}


def export_files(
    files: Mapping[str, Mapping[str, Any]],
    directory: str | Path,
    *,
    include_all: bool = False,
    force: bool = False,
) -> list[Path]:
    """Write the chosen files under ``directory``; return the paths written.

    Raises:
        ExportError: a path is not a safe relative path, would pass through a symlink, or
            exists already with other content (without ``force``), or ``directory`` is a
            file. Checked for every file before any is written; a file that already holds
            the same bytes (an earlier export of the same thread) is left as it is.
    """
    root = Path(directory).resolve()
    for folder in [root, *root.parents]:  # the folder, or the nearest part of it that exists
        if folder.exists():
            if not folder.is_dir():
                shown = "it" if folder == root else str(folder)
                msg = f"cannot export into {directory}: {shown} is a file, not a folder"
                raise ExportError(msg + "; name a folder")
            break
    chosen = _chosen(files, include_all)
    contents = {path: str(entry.get("content") or "") for path, entry in chosen.items()}
    targets = {path: _target(root, path, contents[path], force) for path in chosen}
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for path in chosen:
        if not _same(targets[path], contents[path]):
            _write(root, targets[path], contents[path], force=force)
        written.append(targets[path])
    if include_all:
        manifest = {
            p: {"status": e.get("status"), "sha256": e.get("sha256"), "bytes": e.get("bytes")}
            | ({"origin": e["origin"]} if e.get("origin") else {})
            for p, e in chosen.items()
        }
        text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        _write(root, root / MANIFEST, text, force=True)  # ours: rewritten on every export
    return written


def _chosen(files: Mapping[str, Mapping[str, Any]], include_all: bool) -> dict[str, Any]:
    return {
        path: entry
        for path, entry in sorted(files.items())
        if entry and (include_all or entry.get("status") == FileStatus.DONE)
    }


def _same(target: Path, content: str) -> bool:
    """The file already holds exactly these bytes (never through a symlink)."""
    if target.is_symlink() or not target.is_file():
        return False
    return target.read_bytes() == content.encode("utf-8", errors="surrogatepass")


def _target(root: Path, path: str, content: str, force: bool) -> Path:
    """Where ``path`` goes under ``root``, refusing anything that would land elsewhere."""
    try:
        relative = validate_path(path)
    except PathError as exc:
        msg = f"refusing to export {path[:80]!r}: {exc}"
        raise ExportError(msg) from exc
    target = root / relative
    for parent in [target, *target.parents]:
        if parent == root:
            break
        if parent.is_symlink():
            msg = f"refusing to export {relative}: {parent} is a symlink"
            raise ExportError(msg)
    if target.is_dir() and not target.is_symlink():
        msg = f"refusing to export {relative}: {target} is a folder"
        raise ExportError(msg)
    if target.exists() and not force and not _same(target, content):
        raise ExportClash(target)
    return target


def _write(root: Path, target: Path, content: str, *, force: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.resolve().parent.is_relative_to(root):  # a race on the folders above
        msg = f"refusing to export {target}: it resolves outside {root}"
        raise ExportError(msg)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | (0 if force else os.O_EXCL)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content.encode("utf-8", errors="surrogatepass"))
