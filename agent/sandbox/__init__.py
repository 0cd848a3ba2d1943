"""Run generated Python in a throw-away sandbox: the one place where model-written code runs.

Three isolation levels (:func:`isolation_level`, contract; details in :mod:`.isolation`):

* ``kernel`` — bubblewrap: new user, PID, network, mount, IPC and UTS namespaces; only
  ``/usr``, the interpreter and the job's own folder (a size-limited tmpfs) are visible, ``/tmp``
  and ``/dev/shm`` are private size-limited tmpfs, there is no network, and the PID namespace
  dies with the run. As root, the code runs as a throw-away uid of its own inside its own user
  namespace. The ``landlock`` rules below are applied inside too, as defence in depth.
* ``landlock`` — where bubblewrap cannot make namespaces: the interpreter holds itself, before
  any generated code, to Landlock (read the interpreter and system libraries, write only the
  job's folder and its private tmp folder, execute nothing, no TCP, abstract unix sockets and
  signals kept in the sandbox) and a seccomp filter (no sockets, ``ptrace``, namespaces,
  mounts, ``io_uring``, ``bpf``, ``memfd`` …), with a throw-away uid when the host is root.
  Kernel-enforced, inherited by every child, irrevocable.
* ``process`` — only when the user opts in (``DEEPREFLECT_SANDBOX=process``): the audit hook
  alone, which code can switch off. Not a boundary; every result carries the warning.

Without a kernel-enforced level and without that opt-in, nothing runs: :func:`run_jobs`
raises :class:`SandboxUnavailable` (a check fails with that evidence). At every level: the
bootstrap's audit hook (defence in depth), an environment built from nothing (no API keys),
limits on CPU, memory (summed over every process of the run), file size, disk (the folders
summed), processes and wall time, output truncated, and every process and file of the run
removed at its end.

Modules: ``host`` (run jobs together), ``launch`` (a job's folder and interpreter), ``capture``
(its output), ``processes`` (find, watch, kill), ``isolation`` and ``bwrap`` (the levels),
``programs`` (the text of the programs that run inside: ``bootstrap``, ``kernel_rules``,
the ``bridge`` package, ``check_runner``, ``sql_runner``, standard library only, never
imported by the host).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.sandbox.host import run_jobs
from agent.sandbox.isolation import (
    IsolationLevel,
    SandboxUnavailable,
    isolation_level,
    weaker_isolation_warning,
)
from agent.sandbox.job import Job, SandboxResult
from agent.sandbox.programs import program, program_package

__all__ = [
    "IsolationLevel",
    "Job",
    "SandboxResult",
    "SandboxUnavailable",
    "isolation_level",
    "program",
    "program_package",
    "run_jobs",
    "run_python",
    "weaker_isolation_warning",
]


def run_python(
    files: Mapping[str, str],
    argv: Sequence[str],
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    max_output: int = 8000,
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run ``python <argv>`` (``-m module``, ``-c code`` or a script path) on ``files``.

    Raises:
        ValueError: a file path would land outside the folder.
        OSError: the interpreter could not be started.
    """
    job = Job(files=files, argv=list(argv), env=dict(env or {}), max_output=max_output)
    return run_jobs([job], timeout_s=timeout_s, memory_mb=memory_mb)[0]
