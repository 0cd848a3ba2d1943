"""Which isolation this machine gives generated code: ``kernel``, ``landlock``, or none.

Every level the product picks by itself is a boundary the kernel enforces:

* ``kernel`` — bubblewrap: new user, PID, network, mount, IPC and UTS namespaces; only ``/usr``,
  the interpreter and the run's own folder are visible (read-only but the folder), ``/tmp`` and
  ``/dev/shm`` are private size-limited tmpfs, there is no network at all, and the PID namespace
  dies with the run. Landlock and seccomp (below) are applied inside as well, when the kernel has
  them.
* ``landlock`` — where bubblewrap cannot make namespaces (containers, hardened hosts): the
  interpreter holds itself, before any generated code, to Landlock (read-only: interpreter and
  system libraries; read-write: the job's folder and its private tmp folder; nothing else, so no
  host ``/tmp``, ``/dev/shm``, ``/proc``, checkout or home; no program can be executed; no TCP;
  abstract unix sockets and signals scoped to the sandbox) and seccomp (no sockets, ``ptrace``,
  namespaces, mounts, ``io_uring``, ``bpf``, ``memfd``, keyrings …), plus rlimits and, on a
  root host, a throw-away uid. Inherited across ``fork``/``exec`` and irrevocable.
* ``process`` — only when the user opts in with ``DEEPREFLECT_SANDBOX=process``: a subprocess
  whose Python audit hook refuses files, network and programs. Code that switches the hook off
  (its globals are reachable from a frame) is not held: this level is **not** a boundary, and
  every result says so (:func:`weaker_isolation_warning`).

Without ``DEEPREFLECT_SANDBOX`` the first of ``kernel`` and ``landlock`` that works here is used
(each probed once); if neither works, :func:`isolation_level` raises :class:`SandboxUnavailable`
and generated code does not run. ``DEEPREFLECT_SANDBOX=kernel|landlock`` insists on one level
(an error when it is unavailable); the audit hook stays at every level as defence in depth.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Literal

from agent.sandbox.programs import program

__all__ = [
    "IsolationLevel",
    "SandboxUnavailable",
    "interpreter_roots",
    "isolation_level",
    "weaker_isolation_warning",
]

IsolationLevel = Literal["kernel", "landlock", "process"]
LEVELS: tuple[IsolationLevel, ...] = ("kernel", "landlock", "process")
ENV = "DEEPREFLECT_SANDBOX"
WARNING = (
    "generated code runs in the weaker process sandbox, not a kernel sandbox "
    f"({ENV}=process): its audit hook is not a boundary; see docs/security.md"
)


class SandboxUnavailable(RuntimeError):
    """No kernel-enforced sandbox can run here (or not the one ``DEEPREFLECT_SANDBOX`` names):
    generated code does not run."""


def isolation_level() -> IsolationLevel:
    """The isolation that checks get on this machine now (contract).

    Raises:
        SandboxUnavailable: no kernel-enforced level works here and the user did not opt in to
            ``process``, or the level ``DEEPREFLECT_SANDBOX`` names cannot run, or it names none.
    """
    wanted = os.environ.get(ENV, "").strip().lower() or "auto"
    if wanted not in ("auto", *LEVELS):
        msg = f"{ENV}={wanted} is not a sandbox level; use kernel, landlock or process"
        raise SandboxUnavailable(msg)
    if wanted == "process":
        return "process"
    if wanted in ("auto", "kernel") and bwrap_path() is not None:
        return "kernel"
    if wanted == "kernel":
        msg = f"{ENV}=kernel, but bubblewrap cannot create namespaces here: {_probe_error()}"
        raise SandboxUnavailable(msg)
    landlock = landlock_probe()
    if landlock.startswith("abi "):
        return "landlock"
    if wanted == "landlock":
        msg = f"{ENV}=landlock, but the kernel cannot confine a process here: {landlock}"
        raise SandboxUnavailable(msg)
    msg = (
        "generated code was not run: no kernel-enforced sandbox works on this machine "
        f"(bubblewrap: {_probe_error()}; Landlock/seccomp: {landlock}). Install bubblewrap "
        f"with user namespaces or use a kernel with Landlock, or opt in to the weaker audit-hook "
        f"sandbox, which is not a boundary, with {ENV}=process"
    )
    raise SandboxUnavailable(msg)


def weaker_isolation_warning() -> str | None:
    """The one-line warning shown in evidence and CLI output when isolation is weaker than a
    kernel boundary: the ``process`` level, or none at all (why generated code will not run)."""
    try:
        level = isolation_level()
    except SandboxUnavailable as exc:
        return str(exc)
    return WARNING if level == "process" else None


def bwrap_path() -> str | None:
    """The bubblewrap binary, if it can really start a sandbox on this machine."""
    return _usable_bwrap()[0]


def _probe_error() -> str:
    return _usable_bwrap()[1]


@functools.cache
def _usable_bwrap() -> tuple[str | None, str]:
    """Probe once: a binary on PATH is not enough, containers often forbid namespaces."""
    if not sys.platform.startswith("linux"):
        return None, "bubblewrap needs Linux"
    binary = shutil.which("bwrap")
    if binary is None:
        return None, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    args = [binary, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    if os.geteuid() != 0:
        args.insert(2, "--unshare-user")
    try:
        done = subprocess.run(args, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return None, done.stderr.decode(errors="replace").strip()[:200]
    return binary, ""


@functools.cache
def landlock_probe() -> str:
    """``"abi N"`` when an interpreter can hold itself to this module's kernel rules here and
    the kernel then really refuses (probed once, in a child), else ``"unavailable: why"``."""
    if not sys.platform.startswith("linux"):
        return "unavailable: Landlock needs Linux"
    args = [sys.executable, "-I", "-c", program("kernel_rules.py"), *interpreter_roots()]
    try:
        done = subprocess.run(args, capture_output=True, timeout=10, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"
    answer = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or not answer:
        return "unavailable: " + (done.stderr.decode(errors="replace").strip()[-200:] or "?")
    return answer


def interpreter_roots() -> list[str]:
    """The interpreter's installation and the virtualenv's libraries, outside ``/usr``; not the
    rest of ``sys.path`` (an editable checkout is not the sandbox's to read)."""
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}
    roots |= {
        os.path.realpath(p)
        for p in sys.path
        if p and os.path.isabs(p) and os.path.isdir(p) and "site-packages" in p
    }
    roots = {r for r in roots if not r.startswith("/usr/") and r != "/usr"}
    # a nested root is already visible through its parent
    return sorted(r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots))
