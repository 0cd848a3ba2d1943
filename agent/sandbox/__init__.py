"""Run generated Python in a throw-away sandbox: the one place where model-written code runs.

Two isolation levels (:func:`isolation_level`, contract):

* ``kernel`` — bubblewrap: new user, PID, network, mount, IPC and UTS namespaces; only
  ``/usr``, the interpreter and the job's own folder (a size-limited tmpfs) are visible, ``/tmp``
  is private, there is no network, and the PID namespace dies with the run. As root, the code
  runs as a throw-away uid of its own inside its own user namespace.
* ``process`` — where bubblewrap cannot run: a subprocess whose bootstrap installs an audit
  hook before any generated code (no writes or reads outside the folder and the interpreter,
  no other process's ``/proc``, no network sockets, no new programs, no native code, no SQLite
  URIs or ATTACH) and, when the host is root, a throw-away uid per job, so the kernel keeps
  jobs out of each other's folders and processes. Weaker: see the README's Security section.

Both: an environment built from nothing (no API keys), limits on CPU, memory (summed over
every process of the run), file size, processes and wall time, output truncated, and every
process of the run killed at its end.

Modules: ``host`` (run jobs together), ``launch`` (a job's folder and interpreter), ``capture``
(its output), ``processes`` (find, watch, kill), ``isolation`` and ``bwrap`` (the levels),
``programs`` (the text of the programs that run inside: ``bootstrap``, ``bridge``,
``check_runner``, ``sql_runner``, standard library only, never imported by the host).
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
from agent.sandbox.programs import program

__all__ = [
    "IsolationLevel",
    "Job",
    "SandboxResult",
    "SandboxUnavailable",
    "isolation_level",
    "program",
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
