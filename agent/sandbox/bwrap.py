"""The bubblewrap command line of a kernel-mode job: what exists inside, and nothing more."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.sandbox.isolation import bwrap_path, interpreter_roots

SOURCE = "/.deepreflect-in"
"""Where the job's files are mounted read-only; the bootstrap copies them into the tmpfs."""
# Capabilities lent to the sandbox's root for the bootstrap's first steps (copy the files,
# hand them to the throw-away uid, switch to it); setuid() to that uid clears them all.
_BOOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")


def command(
    folder: Path,
    *,
    root: bool,
    disk_bytes: int,
    env: Mapping[str, str],
    readable: Sequence[str] = (),
) -> list[str]:
    """``bwrap ...`` up to the program to run; ``root``: the host runs as root; ``readable``:
    host files shown read-only at their own path (a job's ``readable``)."""
    binary = bwrap_path()
    if binary is None:
        msg = "bubblewrap is not usable here"
        raise RuntimeError(msg)
    args = [binary, "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    args += ["--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if root:
        # The bootstrap drops to a throw-away host uid and unshares its own user namespace;
        # bubblewrap's userns would map the code to root outside, where no rlimit binds.
        args += ["--cap-drop", "ALL"]
        for cap in _BOOT_CAPS:
            args += ["--cap-add", cap]
    else:
        args += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    args += _system_mounts()
    args += ["--proc", "/proc", "--dev", "/dev"]
    # bubblewrap's /dev/shm is a folder of the /dev tmpfs, unbounded: give it its own limit
    args += ["--perms", "01777", "--size", str(disk_bytes), "--tmpfs", "/dev/shm"]
    # the private /tmp first: an interpreter or virtualenv under /tmp (CI's) is mounted on it
    args += ["--perms", "01777", "--size", str(disk_bytes), "--tmpfs", "/tmp"]
    for prefix in interpreter_roots():
        args += _traversable_parents(prefix) + ["--ro-bind", prefix, prefix]
    for path in readable:
        args += _traversable_parents(path) + ["--ro-bind", path, path]
    args += ["--ro-bind", str(folder), SOURCE]
    args += ["--perms", "0755", "--size", str(disk_bytes), "--tmpfs", str(folder)]
    args += ["--chdir", str(folder), "--clearenv", "--new-session"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args


def _traversable_parents(path: str) -> list[str]:
    """Create the folders above a mount point passable (0755) by the throw-away uid: the
    host's may be 0700 (``/root``), and only the mounted folder itself is shown."""
    args: list[str] = []
    parent = Path(path).parent
    for folder in reversed([parent, *parent.parents]):
        if str(folder) not in ("/", "/usr", "/tmp"):  # /tmp: the private tmpfs, 01777
            args += ["--perms", "0755", "--dir", str(folder)]
    return args


def _system_mounts() -> list[str]:
    """``/usr`` read-only, and ``/bin``, ``/lib`` … as the host has them (merged or not)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args
