"""Which isolation this machine gives generated code: ``kernel`` (bubblewrap) or ``process``.

``kernel``: every run is a bubblewrap sandbox with new user, PID, network, mount, IPC and UTS
namespaces. Only ``/usr``, the interpreter and the run's own folder are visible (read-only but
the folder), ``/tmp`` is private, there is no network at all, and the PID namespace dies with
the run. ``process``: a subprocess hardened by an audit hook and, when the host is root, a
throw-away user id per run. ``DEEPREFLECT_SANDBOX=process`` forces the weaker mode (tests run
both); ``=kernel`` makes a missing bubblewrap an error instead of a silent downgrade.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Literal

__all__ = ["IsolationLevel", "SandboxUnavailable", "isolation_level", "weaker_isolation_warning"]

IsolationLevel = Literal["kernel", "process"]
ENV = "DEEPREFLECT_SANDBOX"
WARNING = (
    "generated code runs in the weaker process sandbox, not a kernel sandbox "
    "(bubblewrap is not usable here, or DEEPREFLECT_SANDBOX=process): see README, Security"
)


class SandboxUnavailable(RuntimeError):
    """``DEEPREFLECT_SANDBOX=kernel`` was asked for but bubblewrap cannot run here."""


def isolation_level() -> IsolationLevel:
    """The isolation that checks get on this machine now (contract)."""
    wanted = os.environ.get(ENV, "auto").strip().lower()
    if wanted == "process":
        return "process"
    if bwrap_path() is not None:
        return "kernel"
    if wanted == "kernel":
        msg = f"{ENV}=kernel, but bubblewrap cannot create namespaces here: {_probe_error()}"
        raise SandboxUnavailable(msg)
    return "process"


def weaker_isolation_warning() -> str | None:
    """The one-line warning shown in evidence and CLI output when isolation is weaker."""
    return WARNING if isolation_level() == "process" else None


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
