"""Run sandboxed interpreters together, watch them, collect their output, leave nothing behind.

A run is one or more :class:`Job` s started together (a check runs the artifact and its tests
in two, linked by a socket pair). :mod:`agent.sandbox.launch` gives each its folder and starts
it; :mod:`agent.sandbox.capture` reads its output until the run is over;
:mod:`agent.sandbox.processes` watches the whole run's memory and processes and kills every
one of them at the end, ``setsid()`` daemons included.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

from agent.sandbox import pool
from agent.sandbox.capture import collect, drain
from agent.sandbox.isolation import IsolationLevel, isolation_level
from agent.sandbox.job import Job, SandboxResult
from agent.sandbox.launch import (
    DISK_LIMIT,
    FILE_SIZE_LIMIT,
    Started,
    deliver,
    prepare,
    remove_tree,
    start,
)
from agent.sandbox.processes import Watch, has_exited, kill_all, members, reap, remove_left

__all__ = ["Job", "SandboxResult", "run_jobs"]

_OUTLIVE_GRACE_S = 1.0  # how long the other jobs get to exit once the main jobs have ended


def run_jobs(
    jobs: Sequence[Job],
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    link: bool = False,
    isolation: IsolationLevel | None = None,
    wall_s: float | None = None,
) -> list[SandboxResult]:
    """Run ``jobs`` together in the sandbox; ``link`` connects the first two by a socket pair
    (``DEEPREFLECT_LINK_FD``). ``memory_mb`` bounds the whole run, every process summed.
    ``isolation`` overrides :func:`isolation_level` (the SQL check reads a host file).

    ``timeout_s`` bounds each process's CPU time (``RLIMIT_CPU``) and the run's wall time.
    With ``wall_s`` (at least ``timeout_s``), ``timeout_s`` is the run's CPU time instead,
    summed over its processes (killed: ``"cpu"``), and ``wall_s`` the wall-clock backstop
    (``"timeout"``): a loaded machine slows a job's wall time, not its CPU time, so a job
    that computes little is not failed by a busy machine, and a loop is still stopped.

    Raises:
        SandboxUnavailable: no kernel-enforced sandbox here and no opt-in to ``process``
            (nothing is run), or the forced level cannot run.
        ValueError: a file path would land outside its folder, or a bad timeout.
        OSError: an interpreter could not be started.
    """
    if not 0 < timeout_s < math.inf:
        msg = f"timeout_s must be a positive number of seconds, not {timeout_s!r}"
        raise ValueError(msg)
    if wall_s is not None and not timeout_s <= wall_s < math.inf:
        msg = f"wall_s must be a number of seconds of at least timeout_s, not {wall_s!r}"
        raise ValueError(msg)
    limits = _Limits(timeout_s, wall_s)
    level = isolation or isolation_level()
    if isolation is None and pool.enabled() and pool.fits(jobs, link):
        for _ in range(2):  # a pair that died while it waited is thrown away, never used
            if (taken := pool.take(level)) is None:
                break
            done = _run_pooled(*taken, jobs, limits, memory_mb)
            if done is not None:
                return done
    base = Path(tempfile.mkdtemp(prefix="deepreflect-sandbox-")).resolve()
    os.chmod(base, 0o711)  # jobs reach their own folder, never list or enter another's
    started: list[Started] = []
    try:
        links = socket.socketpair() if link else None
        specs = [prepare(base, i, job, level) for i, job in enumerate(jobs)]
        for i, spec in enumerate(specs):
            extra = [links[i].fileno()] if links is not None and i < 2 else []
            started.append(start(spec, level, timeout_s, memory_mb, extra))
        if links is not None:
            for end in links:
                end.close()  # the jobs hold their ends; a dead peer then reads as EOF
        return _supervise(started, limits, memory_mb, level)
    finally:
        for run in started:
            run.close()
        remove_tree(base)


class _Limits(NamedTuple):
    """A run's time limits: each process's CPU seconds, and the run's wall-clock seconds
    (``wall_s`` None: ``timeout_s`` is both, and the run's CPU is not summed)."""

    timeout_s: float
    wall_s: float | None

    @property
    def deadline_s(self) -> float:
        return self.wall_s if self.wall_s is not None else self.timeout_s

    @property
    def run_cpu_s(self) -> float | None:
        return self.timeout_s if self.wall_s is not None else None


def _run_pooled(
    pair: pool.Pair, owner: Any, jobs: Sequence[Job], limits: _Limits, memory_mb: int
) -> list[SandboxResult] | None:
    """Run ``jobs`` in a waiting pair, which is then killed with the run; None (and the
    pair discarded) if it is no longer usable."""
    started: list[Started] = []
    try:
        if any(has_exited(run.proc.pid) for run in pair.runs):
            return None
        try:
            runs = zip(pair.runs, jobs, strict=True)
            started = [deliver(run, job, limits.timeout_s, memory_mb) for run, job in runs]
        except OSError:
            return None
        return _supervise(started, limits, memory_mb, pair.level)
    finally:
        pair.discard()
        owner.done()


def _supervise(
    started: list[Started], limits: _Limits, memory_mb: int, level: IsolationLevel
) -> list[SandboxResult]:
    """Collect output until the main jobs end, time runs out, output floods or the run's
    processes together outgrow ``memory_mb`` (or their CPU budget); then kill everything
    and report."""
    begun = time.monotonic()
    captures = {pipe: cap for run in started for pipe, cap in run.captures.items()}
    mains = [run for run in started if run.spec.job.main] or started
    members = [(run.proc.pid, run.spec.uid) for run in started]
    folders = [] if level == "kernel" else [str(p) for r in started for p in r.spec.folders()]
    disk = DISK_LIMIT * len(started)
    watch = Watch(members, memory_mb * 1024 * 1024, folders, disk, cpu_s=limits.run_cpu_s)
    reason = collect([run.proc.pid for run in mains], captures, begun + limits.deadline_s, watch)
    outlived = _still_running([run for run in started if run not in mains]) if not reason else []
    for run in started:
        kill_all(run.proc.pid, run.spec.uid)
        if run.spec.uid is not None and level != "kernel":
            remove_left(run.spec.uid)  # the kernel level's /tmp and /dev/shm die with it
    drain(captures, time.monotonic() + 0.5)
    return [_result(run, reason, begun, level, run in outlived) for run in started]


def _still_running(others: list[Started]) -> list[Started]:
    """The jobs among ``others`` that have not exited, with every process they started,
    within a grace period: a linked peer whose link closed has nothing left to do."""
    deadline = time.monotonic() + _OUTLIVE_GRACE_S
    running = [run for run in others if _alive(run)]
    while running and time.monotonic() < deadline:
        time.sleep(0.01)
        running = [run for run in running if _alive(run)]
    return running


def _alive(run: Started) -> bool:
    pid = run.proc.pid
    return not has_exited(pid) or any(p != pid for p in members(pid, run.spec.uid))


def _result(
    run: Started, reason: str | None, begun: float, level: IsolationLevel, outlived: bool
) -> SandboxResult:
    """What one job of a finished run did (its processes are all dead by now)."""
    returncode = reap(run.proc)
    stdout = _relative(run.captures[cast(IO[bytes], run.proc.stdout)].text(), run.spec.folder)
    stderr = _relative(run.captures[cast(IO[bytes], run.proc.stderr)].text(), run.spec.folder)
    return SandboxResult(
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=reason == "timeout",
        killed_reason=reason or _limit_hit(returncode, stderr),
        duration_s=time.monotonic() - begun,
        isolation=level,
        report=_read_report(run.report),
        outlived=outlived,
    )


def _read_report(report: IO[bytes] | None) -> str:
    if report is None:
        return ""
    report.seek(0)
    return report.read(FILE_SIZE_LIMIT).decode("utf-8", errors="replace")


def _relative(text: str, folder: Path) -> str:
    """Paths in the job's folder shown relative to it, so identical failures read identically
    across runs (the reflection rules compare evidence to spot a repeated defect)."""
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), ".")


def _limit_hit(returncode: int | None, stderr: str) -> str | None:
    """Name the resource limit that most likely ended the run (a hint for evidence)."""
    if returncode == -signal.SIGXCPU:
        return "cpu"
    if returncode == -signal.SIGXFSZ:
        return "output"
    if returncode is not None and returncode != 0 and "MemoryError" in stderr[-1000:]:
        return "memory"
    if returncode == -signal.SIGKILL:
        return "killed"
    return None
