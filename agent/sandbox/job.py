"""What a sandboxed job is given (:class:`Job`) and what it did (:class:`SandboxResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.sandbox.isolation import IsolationLevel


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed job did."""

    returncode: int | None
    """Exit code of the main process; negative for a signal; None if it could not be reaped."""
    stdout: str
    """Standard output, truncated to ``max_output`` characters."""
    stderr: str
    """Standard error, truncated to ``max_output`` characters."""
    timed_out: bool
    """The wall timeout fired and the run was killed."""
    killed_reason: str | None
    """``"timeout"``, ``"output"`` (flood), ``"cpu"``, ``"memory"``, ``"disk"`` (its folders
    outgrew their limit), ``"killed"`` or None."""
    duration_s: float
    """Wall time of the run."""
    isolation: IsolationLevel = "process"
    """The isolation the job ran under."""
    report: str = ""
    """What the job wrote to its report descriptor (``DEEPREFLECT_REPORT_FD``), if it had one."""
    outlived: bool = False
    """A job that is not ``main`` (or a process it started) was still running a moment after
    the main jobs ended on their own, and was killed: it did not stop when the run was over."""


@dataclass(frozen=True)
class Job:
    """One interpreter of a run."""

    files: Mapping[str, str]
    """VFS files (relative POSIX path -> text) written into the job's fresh folder."""
    argv: Sequence[str]
    """Arguments after the interpreter: ``["-m", "pytest"]``, ``["-c", code]``, a script."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra, non-secret environment variables."""
    max_output: int = 8000
    """Characters kept of each stream (head and tail)."""
    main: bool = True
    """The run ends when every main job has exited; the others are then killed."""
    readable: Sequence[str] = ()
    """Host files the job may read besides its own (read-only, at every level, and only as
    far as the throw-away user's permissions reach)."""
    report: bool = False
    """Give the job a descriptor (``DEEPREFLECT_REPORT_FD``) whose text comes back as
    ``SandboxResult.report``: a channel no other job of the run can write to."""
