"""The ``execute`` tool: a subagent runs a command (``pytest -q``, ``python app.py``) in the
sandbox checks run in, on the files its step can read, and keeps what it wrote.

What the command writes comes back through the step's :class:`Workspace`, exactly as a
``write_file`` would: only the step's ``expected_output`` and ``work/<step_id>/`` are kept,
each file bounded and its path validated; everything else is named in the result with the
reason it was not kept. The command sees no network and no host environment (its
environment is built from nothing), runs under the sandbox's limits, and its output is
capped. Its time limit is CPU time, summed over its processes, with a wall-clock backstop a
few times longer: a busy machine slows a command without failing it, a loop is still
stopped. It runs only where generated code may run at all: a kernel-enforced sandbox, or
``DEEPREFLECT_SANDBOX=process`` when the user opted in (:func:`agent.sandbox.isolation_level`).
An approval rule holds it like any tool (``interrupt_on={"execute": True}``), bound to the
exact command.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated

from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool

from agent.errors import AgentError, ErrorClass
from agent.sandbox import SandboxUnavailable, isolation_level, weaker_isolation_warning
from agent.sandbox.commands import CommandRefused, CommandResult, run_command
from agent.store.effects import declare_tool
from agent.vfs.entries import PathError, Workspace

__all__ = ["EXECUTE", "execute_available", "execute_tool", "result_text"]

EXECUTE = "execute"
DEFAULT_TIMEOUT_S = 60.0
WALL_PER_CPU = 5
"""A command's wall-clock backstop, in multiples of its CPU time limit: on a loaded machine
``import pytest`` alone can take 11 s of wall time and a fraction of one of CPU."""
OUTPUT_CHARS = 4000
"""Characters of each stream the model sees (head and tail)."""
MEMORY_MB = 1024
_SHOWN = 20  # files listed by name in a result

_DESCRIPTION = (
    "Run a command in a sandbox on a copy of the files you can read, e.g. `pytest -q` or "
    "`python -m app`; no network. Runs python, python3, pytest and cd (no other program, no "
    "pipes), joined by &&, || or ;. Files it writes within your write scope are kept."
)


def execute_available() -> bool:
    """Whether commands may run here: a kernel-enforced sandbox or the user's opt-in."""
    try:
        isolation_level()
    except SandboxUnavailable:
        return False
    return True


def execute_tool(*, timeout_s: float = DEFAULT_TIMEOUT_S) -> BaseTool:
    """The ``execute`` tool, its commands stopped once their processes used ``timeout_s``
    seconds of CPU time, or after :data:`WALL_PER_CPU` times that of wall time."""

    async def execute(
        command: Annotated[str, "The command line, e.g. `pytest -q tests/`."],
        workspace: Annotated[Workspace, InjectedToolArg],
    ) -> str:
        omitted: dict[str, str] = {}
        try:
            result = await asyncio.to_thread(
                run_command,
                workspace.sandbox_files(omitted),  # a folder's files, the thread's over them
                command,
                timeout_s=timeout_s,
                wall_s=timeout_s * WALL_PER_CPU,
                memory_mb=MEMORY_MB,
                max_output=OUTPUT_CHARS,
                folders=[workspace.scratch] if workspace.scratch else [],
            )
        except CommandRefused as exc:
            raise AgentError(ErrorClass.INVALID_INPUT, f"execute: {exc}") from exc
        except SandboxUnavailable as exc:
            raise AgentError(ErrorClass.PERMISSION_DENIED, f"execute: {exc}") from exc
        kept, refused = keep_files(workspace, result)
        return result_text(result, kept, refused, omitted)

    tool = StructuredTool.from_function(coroutine=execute, name=EXECUTE, description=_DESCRIPTION)
    # its only effect is on the step's own workspace, rebuilt when the step runs again
    return declare_tool(tool, read_only=True)


def keep_files(workspace: Workspace, result: CommandResult) -> tuple[list[str], dict[str, str]]:
    """Write the command's files through the workspace (its scope and bounds); the paths
    kept, and the others with the reason they were not."""
    kept: list[str] = []
    refused = dict(result.skipped)
    for path, content in sorted(result.files.items()):
        try:
            kept.append(workspace.write(path, content))
        except PathError as exc:
            refused[path] = str(exc).removeprefix("permission_denied: ")
    for path in result.deleted:
        refused[path] = "deleted by the command; deletions are not applied"
    return kept, refused


def result_text(
    result: CommandResult,
    kept: list[str],
    refused: dict[str, str],
    omitted: Mapping[str, str] | None = None,
) -> str:
    """What the model reads: the exit status, the output, what became of the files, and the
    workspace folder's files the command was not given (``omitted``: binary, too large),
    so a "file not found" in its output is not a mystery."""
    if result.killed_reason:
        head = f"killed ({result.killed_reason}) after {result.duration_s:.1f} s"
        if result.killed_reason == "timeout":
            head += ": the command did not finish in time"
        elif result.killed_reason == "cpu":
            head += ": the command used up its CPU time"
    else:
        head = f"exit code {result.returncode}"
    lines = [f"{head} [sandbox: {result.isolation}]"]
    if (warning := weaker_isolation_warning()) and result.isolation == "process":
        lines.append(f"warning: {warning}")
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            lines += [f"--- {name} ---", text.rstrip()]
    if kept:
        lines.append("files kept: " + _listed(kept))
    if refused:
        shown = [f"{path} ({why})" for path, why in sorted(refused.items())]
        lines.append("files not kept: " + _listed(shown))
    if omitted:
        shown = [why for _path, why in sorted(omitted.items())]
        lines.append("folder files the command was not given: " + _listed(shown))
    if not result.reported:
        lines.append("no file was kept: the run ended before it could hand its files back")
    return "\n".join(lines)


def _listed(items: list[str]) -> str:
    more = len(items) - _SHOWN
    return "; ".join(items[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
