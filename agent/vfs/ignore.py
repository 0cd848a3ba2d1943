"""Which files of a folder on the host are the user's work: ``.gitignore`` rules, the folders
never taken (version control's and deepreflect's own), and text told from binary.

Shared by ``--file`` (:mod:`agent.vfs.host_disk`) and a workspace folder read in place
(:mod:`agent.vfs.folder`), so both leave out the same files. The rules are pathspec's
``GitIgnoreSpec`` (git's wildmatch, negations and directory rules), not a hand-written matcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = [
    "MAX_SCANNED",
    "SKIPPED_FOLDERS",
    "IgnoreRules",
    "decoded",
    "folder_rules",
    "outer_rules",
]

SKIPPED_FOLDERS = frozenset({".git", ".deepreflect"})
"""Folders never read: version control's and deepreflect's own state
(``.deepreflect/threads.sqlite`` and its write-ahead log)."""

MAX_SCANNED = 20_000
"""Entries one walk of a folder looks at, ignored and binary ones included, before it gives up."""


@dataclass
class IgnoreRules:
    """The ``.gitignore`` rules in force in one folder, by the folder each lives in."""

    specs: list[tuple[Path, GitIgnoreSpec]] = field(default_factory=list)
    """Outermost first."""

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

    def inside(self, folder: Path) -> IgnoreRules:
        """The rules in force in ``folder``, a folder below this one: these and its own."""
        return IgnoreRules(self.specs + folder_rules(folder))


def folder_rules(folder: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    """The rules of ``folder``'s own ``.gitignore`` (none when it has none, or it is a link)."""
    ignore = folder / ".gitignore"
    if not ignore.is_file() or ignore.is_symlink():
        return []
    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    return [(folder, GitIgnoreSpec.from_lines(lines))]


def outer_rules(top: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    """The ``.gitignore`` files of the folders above ``top`` up to its repository's root
    (none when ``top`` is not inside a git repository)."""
    above: list[Path] = []
    for folder in top.parents:
        above.append(folder)
        if (folder / ".git").exists():
            return [s for f in reversed(above) for s in folder_rules(f)]
    return []


def decoded(data: bytes) -> str | None:
    """The text of a file, or None for a binary one (a NUL byte, or not UTF-8)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
