"""The virtual filesystem: file entries in state, path rules, summaries and a scoped workspace.

Subagents never touch the host disk: they read and write entries of the ``files`` state key
through a :class:`Workspace` that enforces their write scope (docs/security.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from typing_extensions import TypedDict

from agent.vfs.filenames import collision, nfc
from agent.vfs.folder import Folder
from agent.vfs.matching import glob_paths, grep_texts
from agent.vfs.paths import MAX_FILE_BYTES, PathError, validate_path
from agent.vfs.quoting import clean_text
from agent.vocabulary import FileStatus

MAX_FILES = 500


class FileEntry(TypedDict, total=False):
    """One file of the virtual filesystem as stored in state."""

    content: str
    """The text of the file."""
    status: str
    """A :class:`~agent.vocabulary.FileStatus` value as its plain string (a checkpoint would
    keep an enum member as an object): ``done`` once its check passed, ``failed`` when it did
    not, ``active`` otherwise."""
    written_at_step: int
    """The graph ``step`` (planner round) that last wrote it; ``age_steps`` derives from it."""
    bytes: int
    """UTF-8 size of ``content``."""
    sha256: str
    """Hash of ``content``: lets reflection notice an unchanged rewrite without reading it."""
    step_id: str | None
    """The plan step that produced it, or None for input files."""
    check: dict[str, Any] | None
    """The ``CheckReport`` of its ``done_when`` check, when it has one."""
    evidence_line: str | None
    """The check's evidence as reflection may see it: one short line, no quoted content."""
    stop_reason: str | None
    """Why the step's revise loop stopped (a :class:`~agent.vocabulary.LoopStop` value), on
    the artifact a subagent produced."""
    rounds: int
    """Revisions the step's revise loop made, on the artifact a subagent produced."""
    defect: str | None
    """Signature of the blocking evidence of a failed step (repeated-defect rule)."""
    kind: Literal["critique"]
    """Set on a step's ``critique.json``, which reflection shows despite its scratch path."""
    origin: Literal["user"]
    """Set on a file the user gave (``agent.vfs.user_files``); it stays when a step edits it."""
    given: str
    """On a user's Python module a step edited: its text as the user gave it, which a later
    rewrite is compared with (``agent.plan.kept``)."""
    base: dict[str, Any]
    """On a file of the workspace folder a step wrote: the file as the step found it on disk
    (``{"sha256": str | None, "mtime_ns": int | None}``, ``agent.vfs.folder.Base``), which
    ``apply`` compares the disk with before it writes the file back."""


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


def file_entry(
    content: str,
    *,
    step: int,
    status: FileStatus = FileStatus.ACTIVE,
    step_id: str | None = None,
    check: dict[str, Any] | None = None,
    **extra: Any,
) -> FileEntry:
    """Build a complete entry so size and hash can never disagree with the content."""
    data = content.encode("utf-8", errors="surrogatepass")
    entry: FileEntry = {
        "content": content,
        "status": str(status),
        "written_at_step": step,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "step_id": step_id,
        "check": check,
    }
    entry.update(extra)  # type: ignore[typeddict-item]
    return entry


def merge_files(
    current: Mapping[str, FileEntry], updates: Iterable[Mapping[str, FileEntry | None]]
) -> dict[str, FileEntry]:
    """Reducer of the ``files`` channel: later writes win, ``None`` deletes.

    Batching-invariant (applying two batches in turn equals applying them together), which
    LangGraph's ``DeltaChannel`` requires to rebuild the value from stored writes.
    """
    merged = dict(current)
    for update in updates:
        for raw, entry in (update or {}).items():
            path = nfc(raw)  # one file per name, however the writer spelled it
            if entry is None:
                merged.pop(path, None)
            else:
                merged[path] = entry
    return merged


QUOTE_CHARS = 8  # a run this long copied from the file is cut out of its evidence line
EVIDENCE_CHARS = 160  # the most of a check's evidence reflection and the planner are shown


def _redact(text: str, content: str) -> str:
    """Replace every run of ``QUOTE_CHARS`` or more characters copied from ``content``."""
    if not content or len(text) < QUOTE_CHARS:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i + QUOTE_CHARS
        if j <= len(text) and text[i:j] in content:
            while j < len(text) and text[i : j + 1] in content:
                j += 1
            out.append("[…]")
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def evidence_line(
    check: Mapping[str, Any] | None, limit: int = EVIDENCE_CHARS, content: str = ""
) -> str | None:
    """The check's evidence on one short line, without text quoted from the file itself.

    Evidence may quote the artifact (a regex match, an exception message); reflection must
    never read artifact text, so such quotes are cut; what remains (a message the artifact
    built at run time, a test's line) is data, so it is cleaned and capped
    (:func:`agent.vfs.quoting.clean_text`). Subagents store this line with the file
    (``FileEntry.evidence_line``) so summaries need not scan large contents again.
    """
    if not check:
        return None
    line = clean_text(check.get("evidence", ""), limit)
    return _redact(line, " ".join(content.split()))


def summarize_files(files: Mapping[str, Mapping[str, Any]], step: int) -> dict[str, dict[str, Any]]:
    """What reflection may know about each file: status, size, age and check result.

    Never the content: contents would re-serialise the whole filesystem into every
    reflection call and let text inside an artifact steer the decision. The evidence line is
    the one string the artifact influences: one cleaned line of at most ``EVIDENCE_CHARS``.
    """
    summary: dict[str, dict[str, Any]] = {}
    for path, entry in sorted(files.items()):
        item: dict[str, Any] = {
            "status": entry.get("status", FileStatus.ACTIVE.value),
            "bytes": entry.get("bytes", len((entry.get("content") or "").encode())),
            "age_steps": step - entry.get("written_at_step", step),
        }
        if entry.get("step_id"):
            item["step_id"] = entry["step_id"]
        check = entry.get("check")
        if check:
            item["check"] = "pass" if check.get("passed") else "fail"
            line = entry.get("evidence_line") or evidence_line(
                check, content=entry.get("content") or ""
            )
            item["evidence"] = clean_text(line or "", EVIDENCE_CHARS)  # a stored line too
        if entry.get("stop_reason"):
            item["stop_reason"] = entry["stop_reason"]
        if entry.get("origin"):
            item["origin"] = entry["origin"]
        summary[path] = item
    return summary


SCRATCH = "work/"
"""The folder of the steps' scratch files: never an artifact, a user file or a plan's output."""


def scratch_prefix(step_id: str) -> str:
    """Folder where a step may keep scratch files."""
    return f"{SCRATCH}{step_id}/"


def is_scratch(path: str) -> bool:
    """Whether ``path`` is a step's scratch file."""
    return path.startswith(SCRATCH)


def finished_artifacts(files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The paths of the artifacts whose check passed (``done``), not scratch, sorted."""
    return sorted(p for p, e in files.items() if e.get("status") == "done" and not is_scratch(p))


class Workspace:
    """A subagent's view of the filesystem: what it may read, what it may write.

    Writes land in a private overlay, so parallel subagents never race on one dict and a
    failed step leaves nothing half-written in state.
    """

    def __init__(
        self,
        readable: Mapping[str, str],
        *,
        writable: Iterable[str],
        scratch: str | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_files: int = MAX_FILES,
        shared: str | None = None,
        shared_max_bytes: int | None = None,
        folder: Folder | None = None,
    ) -> None:
        self.folder = folder  # the workspace folder read in place, if the run has one
        self.bases: dict[str, dict[str, Any]] = {}
        """Each folder file this step wrote, as it found it on disk (``FileEntry.base``)."""
        self._read_at: dict[str, dict[str, Any]] = {}
        self._files: dict[str, str] = {nfc(p): text for p, text in readable.items()}
        self._writable = {nfc(p) for p in writable}
        self._scratch = scratch
        self._shared = shared  # a folder every step may write (``memories/``)
        self._shared_max_bytes = shared_max_bytes  # the largest file kept there
        self._max_file_bytes = max_file_bytes
        self._max_files = max_files
        self.written: dict[str, str] = {}

    def _check_writable(self, path: str) -> str:
        path = validate_path(path)
        allowed = path in self._writable or any(
            prefix and path.startswith(prefix) for prefix in (self._scratch, self._shared)
        )
        if not allowed:
            scope = sorted(self._writable) + [f"{p}*" for p in (self._scratch, self._shared) if p]
            msg = f"permission_denied: this step may write only {', '.join(scope)}; not {path!r}"
            raise PathError(msg)
        return path

    @property
    def scratch(self) -> str | None:
        """The folder of this step's scratch files (``work/<step_id>/``), if it has one."""
        return self._scratch

    def ls(self) -> list[str]:
        """Paths this subagent can read."""
        return sorted(self._files)

    def read(self, path: str) -> str:
        path = validate_path(path)
        if path in self._files:
            return self._files[path]
        if self.folder is None:
            raise PathError(f"file {path!r} not found; ls() lists {len(self._files)} file(s)")
        text, base = self.folder.read(path)
        self._read_at.setdefault(path, base.as_dict())
        return text

    def found(self, path: str) -> str:
        """The text the step finds at ``path`` (the thread's, else the folder's), "" if none."""
        try:
            return self.read(path)
        except PathError:
            return ""

    def listing(self, under: str | None = None) -> list[str]:
        """Every path this step can read (under the folder ``under``, when given): the
        thread's files and the folder's, a binary folder file marked so."""
        inside = _under(under)
        own = {p for p in self._files if inside(p)}
        if self.folder is None:
            return sorted(own)
        marked = [
            p + (" (binary: not readable as text)" if self.folder.is_binary(p) else "")
            for p in self.folder.paths()
            if p not in self._files and inside(p)
        ]
        return sorted([*own, *marked])

    def _all_paths(self) -> list[str]:
        folder = self.folder.paths() if self.folder is not None else []
        return sorted(set(self._files).union(folder))

    def glob(self, pattern: str) -> list[str]:
        """The readable paths matching the glob ``pattern``."""
        return glob_paths(pattern, self._all_paths())

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None) -> str:
        """The lines containing ``pattern`` (literal text) in the readable files, or in
        ``path`` (a file or a folder) and those matching ``glob``; limits in the result."""
        inside = _under(path)
        paths = [p for p in self._all_paths() if inside(p)]
        if glob:
            paths = glob_paths(glob, paths)
        note: list[str] = []
        skipped: list[str] = []
        own = [(p, self._files[p]) for p in paths if p in self._files]
        rest = [p for p in paths if p not in self._files]
        if self.folder is None:
            texts = own
        else:
            texts = [*own, *self.folder.texts(rest, note=note, skipped=skipped)]
        result = grep_texts(pattern, texts)
        result.truncated = result.truncated or (note[0] if note else None)
        result.skipped = skipped
        return result.text(pattern)

    def write(self, path: str, content: str) -> str:
        path = self._check_writable(path)
        if not isinstance(content, str):
            raise PathError("content must be a string")
        size = len(content.encode("utf-8", errors="surrogatepass"))
        if size > self._max_file_bytes:
            msg = f"content is {size} bytes; the limit is {self._max_file_bytes}"
            raise PathError(msg)
        shared_max = self._shared_max_bytes
        if shared_max is not None and self._in_shared(path) and size > shared_max:
            msg = f"{path} is {size} bytes; a file in {self._shared} holds at most {shared_max}"
            raise PathError(msg)
        if path not in self._files:
            if len(self._files) >= self._max_files:
                raise PathError(f"too many files: the limit is {self._max_files}")
            if (other := collision(path, self._files)) is not None:
                msg = (
                    f"path {path!r} differs from the existing file {other!r} only by letter "
                    f"case or character forms; write {other!r} or choose a distinct name"
                )
                raise PathError(msg)
        if self.folder and path not in self.bases and self._folder_file(path):
            self._note_base(self.folder, path)
        self._files[path] = content
        self.written[path] = content
        return path

    def edit(self, path: str, old: str, new: str) -> str:
        current = self.read(path)
        count = current.count(old) if old else 0
        if count != 1:
            what = "not found" if count == 0 else f"found {count} times"
            msg = f"edit_file needs `old` to occur exactly once in {path!r}; it was {what}"
            raise PathError(msg)
        return self.write(path, current.replace(old, new, 1))

    def _note_base(self, folder: Folder, path: str) -> None:
        """Record the disk version a first write of ``path`` is based on: as the step read
        it, else as the disk holds it now (a path the folder refuses, such as a symlink
        leading out, cannot be written). Rewriting the thread's own version, the base is the
        one the thread recorded (``keep_base``), unless the user applied that version since:
        then the disk holds it, and it is the new base."""
        if path not in self._files:
            self.bases[path] = self._read_at.get(path) or folder.base(path).as_dict()
            return
        now = folder.base(path)
        if now.sha256 == hashlib.sha256(_utf8(self._files[path])).hexdigest():
            self.bases[path] = now.as_dict()

    def _in_shared(self, path: str) -> bool:
        return bool(self._shared) and path.startswith(str(self._shared))

    def _folder_file(self, path: str) -> bool:
        """Whether a write of ``path`` is one ``apply`` writes back into the folder."""
        return self.folder is not None and not is_scratch(path) and not self._in_shared(path)

    def contents(self) -> dict[str, str]:
        """The thread's files this step sees (its writes included), not the folder's."""
        return dict(self._files)

    def sandbox_files(self, omitted: dict[str, str] | None = None) -> dict[str, str]:
        """What a check or ``execute`` runs on: the folder's text files with the thread's
        files laid over them (the folder itself is never written); ``omitted`` names the
        folder's files left out (binary, too large) that the thread does not hold either."""
        if self.folder is None:
            return self.contents()
        left: dict[str, str] = {}
        files = self.folder.sandbox_files(left) | self._files
        if omitted is not None:
            omitted.update((path, why) for path, why in left.items() if path not in files)
        return files


def _under(folder: str | None) -> Callable[[str], bool]:
    """Whether a path is ``folder`` or inside it (every path when ``folder`` is None or
    empty); PathError for a folder that is no valid path."""
    if not folder or folder in (".", "./"):
        return lambda _path: True
    where = validate_path(folder.rstrip("/"))
    return lambda path: path == where or path.startswith(where + "/")
