"""``glob`` and ``grep`` over paths and texts, with their limits: pure functions the
workspace applies to the thread's files and to a folder read in place alike.

A glob is matched segment by segment (``*``, ``?`` and ``[…]`` within one name, ``**`` for
any number of folders), as a shell with ``globstar`` does; a pattern with no ``/`` matches a
name at any depth (``*.py``: every Python file), as deepagents' ``glob`` does. ``grep``
searches literal text, never a regular expression: a pattern from a model cannot make it
run for long, and a fixed string is what deepagents' ``grep`` takes too.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache

from agent.vfs.paths import PathError

__all__ = [
    "MAX_GREP_MATCHES",
    "MAX_LISTED",
    "MAX_LINE_CHARS",
    "GrepResult",
    "glob_match",
    "glob_paths",
    "grep_texts",
    "listed",
]

MAX_LISTED = 1000
"""Paths ``ls`` and ``glob`` return at most; the rest are counted, not shown."""
MAX_GREP_MATCHES = 200
"""Matching lines ``grep`` returns at most."""
MAX_LINE_CHARS = 200
"""Characters of a matching line shown."""
MAX_PATTERN_CHARS = 500


@lru_cache(maxsize=256)
def _segment(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern))


def _split(pattern: str) -> tuple[str, ...]:
    if not isinstance(pattern, str) or not pattern.strip():
        raise PathError("the glob pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        msg = f"the pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}"
        raise PathError(msg)
    pattern = pattern.strip().lstrip("/")  # "/src/*.py" names the workspace's root
    if ".." in pattern.split("/"):
        raise PathError(f"glob pattern {pattern!r} climbs out of the workspace with '..'")
    parts = tuple(p for p in pattern.split("/") if p not in ("", "."))
    if len(parts) == 1 and parts[0] != "**":
        return ("**", parts[0])  # a bare name matches at any depth
    return parts or ("**",)


def _match(parts: tuple[str, ...], names: tuple[str, ...]) -> bool:
    """Whether ``names`` (a path's segments) match ``parts`` (a pattern's), ``**`` spanning
    zero or more whole segments; memoised, so it is linear in parts times names."""

    @cache
    def at(i: int, j: int) -> bool:
        if i == len(parts):
            return j == len(names)
        if parts[i] == "**":
            return at(i + 1, j) or (j < len(names) and at(i, j + 1))
        return j < len(names) and bool(_segment(parts[i]).match(names[j])) and at(i + 1, j + 1)

    return at(0, 0)


def glob_match(pattern: str, path: str) -> bool:
    """Whether the relative POSIX ``path`` matches the glob ``pattern``."""
    return _match(_split(pattern), tuple(path.split("/")))


def glob_paths(pattern: str, paths: Iterable[str]) -> list[str]:
    """The ``paths`` matching ``pattern``, sorted (raises PathError for a bad pattern)."""
    parts = _split(pattern)
    return sorted(p for p in paths if _match(parts, tuple(p.split("/"))))


def listed(paths: list[str], limit: int = MAX_LISTED, *, what: str = "files") -> str:
    """Paths one a line, at most ``limit``, then how many more there were."""
    if not paths:
        return f"(no {what})"
    shown = paths[:limit]
    more = len(paths) - len(shown)
    tail = [f"… and {more} more {what}; narrow it with glob(pattern)"] if more > 0 else []
    return "\n".join(shown + tail)


@dataclass
class GrepResult:
    """What a grep found: ``path:line: text`` lines, and whether it stopped at a limit."""

    lines: list[str] = field(default_factory=list)
    files: int = 0
    """Files searched."""
    truncated: str | None = None
    """The limit that stopped it, if one did."""
    skipped: list[str] = field(default_factory=list)
    """Files not searched, each with why (too large to read)."""

    def text(self, pattern: str) -> str:
        shown = self.skipped[:MAX_SKIPPED_SHOWN]
        more = len(self.skipped) - len(shown)
        skipped = [f"(not searched: {'; '.join(shown)}{f'; {more} more' if more else ''})"]
        tail = ([f"(stopped: {self.truncated})"] if self.truncated else []) + (
            skipped if self.skipped else []
        )
        if not self.lines:
            return "\n".join([f"no line contains {pattern!r} ({self.files} files searched)", *tail])
        return "\n".join(self.lines + tail)


MAX_SKIPPED_SHOWN = 5
"""How many files a grep names as not searched (the rest are counted)."""


def grep_texts(
    pattern: str,
    texts: Iterable[tuple[str, str]],
    *,
    max_matches: int = MAX_GREP_MATCHES,
    line_chars: int = MAX_LINE_CHARS,
) -> GrepResult:
    """Every line of ``texts`` (``(path, text)`` pairs) containing ``pattern`` literally, as
    ``path:number: line``, stopping after ``max_matches`` lines."""
    if not isinstance(pattern, str) or not pattern:
        raise PathError("the grep pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS or "\n" in pattern:
        msg = f"the grep pattern must be one line of at most {MAX_PATTERN_CHARS} characters"
        raise PathError(msg)
    result = GrepResult()
    for path, text in texts:
        result.files += 1
        if pattern not in text:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern not in line:
                continue
            if len(result.lines) >= max_matches:
                result.truncated = f"more than {max_matches} matching lines; narrow the search"
                return result
            shown = line if len(line) <= line_chars else line[: line_chars - 1] + "…"
            result.lines.append(f"{path}:{number}: {shown}")
    return result
