"""A tool result too large for a step's conversation: kept whole in a scratch file, its head
shown with the path to read on from.

One search or file read can outgrow a model's context window by itself; trimming old results
(:mod:`agent.controller.context_window`) cannot help the newest. So a result over
``Context.tool_result_chars`` characters is written to ``work/<step_id>/tool_results/`` through
the step's workspace (bounded like any write) and the model gets its first lines and that
path; ``read_file(path, offset, limit)`` reads on, a page at a time. A ``read_file`` result
is already a file: the model gets its first lines and the offset to read on from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from agent.vfs.entries import PathError, Workspace

__all__ = ["HEAD_CHARS", "Fitted", "fit_result", "head_lines"]

HEAD_CHARS = 4000
"""The most of a large result's head the model is shown."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class Fitted(NamedTuple):
    """A tool result as the model gets it, and the scratch file holding it whole, if any."""

    text: str
    path: str | None = None


def head_lines(text: str, limit: int) -> tuple[str, int]:
    """The first whole lines of ``text`` within ``limit`` characters (at least part of the
    first line), and how many lines that is."""
    lines = text.splitlines(keepends=True)
    taken: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) > limit:
            break
        taken.append(line)
        size += len(line)
    if not taken and lines:
        return lines[0][:limit], 1
    return "".join(taken), len(taken)


def fit_result(
    text: str,
    *,
    tool: str,
    args: Mapping[str, Any],
    workspace: Workspace,
    number: int,
    limit: int,
) -> Fitted:
    """``text`` as it is when it fits in ``limit`` characters; else its head and where the
    rest is (``number`` tells this step's large results apart)."""
    if len(text) <= limit:
        return Fitted(text)
    head, shown = head_lines(text, min(HEAD_CHARS, limit))
    total = len(text.splitlines())
    if tool == "read_file" and isinstance(args.get("path"), str):
        start = _offset(args)
        note = (
            f"[{len(text)} characters: lines {start + 1}-{start + shown} of the {total} read "
            f"are shown; read_file(path={args['path']!r}, offset={start + shown}, "
            f"limit={max(shown, 1)}) reads on]"
        )
        return Fitted(f"{head.rstrip()}\n{note}")
    if workspace.scratch is None:
        return Fitted(f"{head.rstrip()}\n[{len(text) - len(head)} more characters were cut]")
    path = f"{workspace.scratch}tool_results/{number}-{_UNSAFE.sub('_', tool)[:40]}.txt"
    try:
        workspace.write(path, text)
    except PathError as exc:
        cut = len(text) - len(head)
        return Fitted(f"{head.rstrip()}\n[{cut} more characters were cut: {exc}]")
    note = (
        f"[the whole result, {len(text)} characters in {total} lines, is in {path}; lines "
        f"1-{shown} are shown: read_file(path={path!r}, offset={shown}, limit={max(shown, 1)}) "
        "reads on]"
    )
    return Fitted(f"{head.rstrip()}\n{note}", path)


def _offset(args: Mapping[str, Any]) -> int:
    offset = args.get("offset")
    return offset if isinstance(offset, int) and offset > 0 else 0
