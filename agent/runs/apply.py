"""A thread's writes put back into its workspace folder: ``deepreflect apply THREAD``.

Steps never write the folder (:mod:`agent.vfs.folder`); each file they wrote there carries the
file as they found it on disk (``FileEntry.base``: its hash, or none when it did not exist).
Applying compares the disk with that base, file by file, before writing anything:

- the disk still holds the base: the thread's version is written;
- the disk already holds the thread's version: nothing to do;
- anything else (edited, created or deleted on disk since the thread read it): a conflict.

One conflict and nothing is written (``force`` overwrites anyway), so an apply never leaves
the folder half-changed, and a refused apply loses nothing: the thread keeps its files. The
decision is by content hash, never by modification time alone (a ``touch`` changes nothing).
Every write stays inside the folder (the folder's own path rules: no symlink leading out),
replaces the file atomically, and is shown as a unified diff.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.errors import ConfigError
from agent.vfs.entries import PathError, is_scratch
from agent.vfs.folder import Base, Folder, base_of
from agent.vfs.ignore import decoded
from agent.vocabulary import FileStatus

if TYPE_CHECKING:  # the runner imports LangGraph's graph: `deepreflect apply` does not need it
    from agent.runs.runner import Graph

__all__ = [
    "ApplyConflict",
    "Change",
    "apply",
    "apply_changes",
    "thread_workspace",
    "conflict_of",
    "planned_changes",
    "workspace_files",
]

MEMORIES = "memories/"  # kept in the store, never the folder's (agent.store.memories)


class ApplyConflict(ConfigError):
    """Files changed on disk since the thread read them: nothing was written."""

    def __init__(self, conflicts: list[Change]) -> None:
        listed = "; ".join(f"{c.path} ({c.conflict})" for c in conflicts)
        super().__init__(f"nothing applied: {listed}; pass --force to overwrite")
        self.conflicts = conflicts


@dataclass(frozen=True)
class Change:
    """One file of the thread and what applying it does to the folder."""

    path: str
    after: str
    """The thread's version."""
    before: str | None
    """The disk's text now (None: no file; a binary one is shown as empty)."""
    conflict: str | None = None
    """Why it cannot be written without ``force``."""

    @property
    def unchanged(self) -> bool:
        return self.before == self.after

    def diff(self) -> str:
        """The unified diff from the disk's version to the thread's."""
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        source = f"a/{self.path}" if self.before is not None else "/dev/null"
        lines = difflib.unified_diff(old, new, fromfile=source, tofile=f"b/{self.path}")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def workspace_files(files: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The thread's files meant for the folder: written by a step of a run with a workspace
    (they carry a ``base``), checked ``done``, neither scratch nor memories."""
    return {
        path: entry
        for path, entry in sorted(files.items())
        if entry
        and base_of(entry.get("base")) is not None
        and entry.get("status") == FileStatus.DONE
        and not is_scratch(path)
        and not path.startswith(MEMORIES)
    }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def conflict_of(base: Base, now: Base, after: str) -> str | None:
    """Why the disk's state ``now`` refuses the thread's version (None: it may be written)."""
    if now.sha256 == _sha256(after.encode("utf-8", errors="surrogatepass")):
        return None  # already there
    if now.sha256 == base.sha256:
        return None
    if base.sha256 is None:
        return "created on disk since the thread wrote it"
    if now.sha256 is None:
        return "deleted on disk since the thread read it"
    return "changed on disk since the thread read it"


def planned_changes(files: Mapping[str, Mapping[str, Any]], folder: Folder) -> list[Change]:
    """What applying the thread's files to ``folder`` would do, conflicts included; reads
    the disk, writes nothing. Raises PathError for a path the folder refuses."""
    changes = []
    for path, entry in workspace_files(files).items():
        base = base_of(entry.get("base")) or Base(None, None)
        after = str(entry.get("content") or "")
        relative, target = folder.locate(path, ignore=False)
        now = folder.base(relative)
        before = None
        if now.sha256 is not None:
            before = decoded(target.read_bytes()) or ""
        changes.append(Change(relative, after, before, conflict_of(base, now, after)))
    return changes


def apply_changes(changes: list[Change], folder: Folder, *, force: bool = False) -> list[Change]:
    """Write the changed files into ``folder``; the changes written. With a conflict and
    no ``force``, :class:`ApplyConflict` and nothing is written."""
    conflicts = [c for c in changes if c.conflict]
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    written = []
    for change in changes:
        if change.unchanged:
            continue
        _write(folder, change.path, change.after)
        written.append(change)
    return written


def _write(folder: Folder, path: str, text: str) -> None:
    """Replace ``path`` in the folder atomically (a temporary file beside it, renamed)."""
    relative, target = folder.locate(path, ignore=False)  # checked again: the disk may move
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    if not parent.resolve().is_relative_to(folder.root):
        msg = f"permission_denied: {relative!r} would be written outside the workspace"
        raise PathError(msg)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, temporary = tempfile.mkstemp(dir=parent, prefix=".deepreflect-apply-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", errors="surrogatepass"))
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def thread_workspace(values: Mapping[str, Any], default: str | None = None) -> Folder:
    """The folder a thread ran with (its Context's, else ``default``); ConfigError without."""
    where = (values.get("context") or {}).get("workspace") or default
    if not where:
        msg = "the thread ran without a workspace folder; name one (--workdir DIR, workspace=)"
        raise ConfigError(msg + ", or use export")
    try:
        return Folder.open(where)
    except PathError as exc:
        raise ConfigError(str(exc)) from exc


def apply(
    graph: Graph,
    thread_id: str,
    *,
    force: bool = False,
    dry_run: bool = False,
    workspace: str | os.PathLike[str] | None = None,
) -> list[Change]:
    """Write a thread's files back into its workspace folder (``workspace`` overrides it);
    the changes, each with its :meth:`Change.diff`. ``dry_run`` writes nothing.

    Raises:
        ApplyConflict: a file changed on disk since the thread read it (nothing written;
            ``force`` writes anyway).
        ConfigError: the thread has no folder, or a path the folder refuses."""
    from agent.graph.build import WORKSPACE_ATTRIBUTE
    from agent.runs.runner import thread_config

    values = graph.get_state(thread_config(thread_id)).values
    default = getattr(graph, WORKSPACE_ATTRIBUTE, None)
    folder = thread_workspace(values, os.fspath(workspace) if workspace else default)
    try:
        changes = planned_changes(values.get("files") or {}, folder)
        if not dry_run:
            apply_changes(changes, folder, force=force)
    except ApplyConflict:
        raise
    except PathError as exc:
        raise ConfigError(f"cannot apply into {folder.root}: {exc}") from exc
    return changes
