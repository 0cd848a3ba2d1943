"""Give a job its folder and start its interpreter, bootstrap first, under one isolation level.

Each job gets a fresh folder holding only its files, a private tmp folder beside it (its
``TMPDIR``; both removed with the run and counted against its disk limit), an environment
built from nothing, resource limits, and, when the host is root, a throw-away user id of its
own: the kernel then keeps jobs out of each other's folders and processes (see
:mod:`agent.sandbox.processes`). At the ``landlock`` and ``kernel`` levels the bootstrap also
holds itself to :mod:`agent.sandbox.kernel_rules` before any generated code.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from agent.sandbox import bwrap
from agent.sandbox.capture import Capture
from agent.sandbox.isolation import IsolationLevel, interpreter_roots
from agent.sandbox.job import Job
from agent.sandbox.processes import PROCESSES_PER_JOB, tasks_of_user
from agent.sandbox.programs import program

FILE_SIZE_LIMIT = 16 * 1024 * 1024
_UID_RANGE = (1_900_000_000, 2_000_000_000)  # throw-away ids, far from any real account
_DISK_LIMIT = 64 * 1024 * 1024  # kernel mode: each tmpfs (folder, /tmp, /dev/shm)
DISK_LIMIT = 2 * _DISK_LIMIT
"""Bytes a job's folder and tmp folder may hold together (``landlock`` and ``process``)."""
_PATH = "/usr/local/bin:/usr/bin:/bin"
# -S: no ``site`` at start-up, so no ``.pth`` file of the host runs in the sandbox before the
# bootstrap has confined it (and none costs start-up time); the bootstrap puts the host's
# site-packages folders on ``sys.path`` itself. -s: no user site folder.
_FLAGS = ("-B", "-S", "-s")
# what a pooled interpreter imports while it waits (the bridge's and the runner's standard
# modules; pytest on the check's side), so a job does not pay for it
_PRELOAD = ("json", "socket", "struct", "operator", "types", "importlib.machinery", "runpy")
_PRELOAD_CHECK = ("pytest",)


@dataclass
class Spec:
    """A job with its folder written and its user chosen, not yet started."""

    job: Job
    folder: Path
    tmp: Path
    """The job's private ``TMPDIR`` (``landlock`` and ``process``; kernel mode has a tmpfs)."""
    uid: int | None
    """The throw-away uid (root hosts only)."""

    def folders(self) -> tuple[Path, Path]:
        """Where the job may write on the host's disk."""
        return self.folder, self.tmp


@dataclass
class Started:
    """A running job: its process, its output captures and its report descriptor."""

    spec: Spec
    proc: subprocess.Popen[bytes]
    captures: dict[IO[bytes], Capture]
    report: IO[bytes] | None
    started_at: float
    env: tuple[dict[str, str], dict[str, str]] = ({}, {})
    """(pooled) The environment a cold start would give: its base and what overrides the
    job's own variables."""

    def close(self) -> None:
        """Close every pipe the host holds for the job."""
        for pipe in (*self.captures, self.report, self.proc.stdin):
            if pipe is not None and not pipe.closed:
                pipe.close()


@dataclass
class _Command:
    """How one job is started, as the isolation level decides."""

    args: list[str]
    env: dict[str, str]
    opened: list[int] = field(default_factory=list)
    """Descriptors opened for the job: passed to it, closed by the host once it started."""
    user: dict[str, Any] = field(default_factory=dict)
    """``Popen``'s ``user``/``group``/``extra_groups`` (process mode as root)."""
    late_env: dict[str, str] = field(default_factory=dict)
    """Variables that override the job's own (the interpreter's descriptors)."""


def prepare(base: Path, index: int, job: Job, level: IsolationLevel) -> Spec:
    """Write the job's files into ``base/job<index>``, make its ``base/tmp<index>`` and choose
    its throw-away uid."""
    folder, tmp = base / f"job{index}", base / f"tmp{index}"
    folder.mkdir(mode=0o700)
    tmp.mkdir(mode=0o700)
    _write_files(folder, job.files)
    uid = secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]) + _UID_RANGE[0]
    uid_or_none = uid if os.geteuid() == 0 else None
    if uid_or_none is not None and level != "kernel":
        _chown_tree(folder, uid_or_none)  # kernel mode: the bootstrap chowns its tmpfs copy
        _chown_tree(tmp, uid_or_none)
    return Spec(job, folder, tmp, uid_or_none)


def _write_files(folder: Path, files: Mapping[str, str]) -> None:
    """Write the VFS files; a path that would resolve outside ``folder`` is an error."""
    for rel, content in files.items():
        target = _inside(folder, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8", newline="")


def _inside(folder: Path, rel: str) -> Path:
    target = (folder / rel).resolve()
    if target == folder or not target.is_relative_to(folder):
        msg = f"sandbox file path {rel!r} resolves outside the sandbox folder"
        raise ValueError(msg)
    return target


def _chown_tree(folder: Path, uid: int) -> None:
    os.chown(folder, uid, uid)
    for parent, dirs, names in os.walk(folder):
        for name in dirs + names:
            os.chown(os.path.join(parent, name), uid, uid)


def remove_tree(folder: Path) -> None:
    """Remove the folder even if the code made parts of it unreadable; never follow a
    symlink the code left (``chmod`` would act on its target)."""

    def make_writable_and_retry(func: Callable[[str], object], path: str, _exc: object) -> None:
        try:
            for candidate in (os.path.dirname(path), path):
                if stat.S_ISDIR(os.lstat(candidate).st_mode):
                    os.chmod(candidate, 0o700)
            func(path)
        except OSError:
            pass  # leave it; a temp folder is not worth failing the check for

    shutil.rmtree(folder, onerror=make_writable_and_retry)


def start(
    spec: Spec,
    level: IsolationLevel,
    timeout_s: float,
    memory_mb: int,
    fds: list[int],
    *,
    pooled: bool = False,
) -> Started:
    """Start the job's interpreter; ``fds`` (the link's end) are passed to it. ``pooled``: it
    confines itself and then waits for its job on stdin (:func:`deliver`); ``spec.job`` is then
    only the run's shape (its ``report``), the rest comes with the job."""
    job = spec.job
    report_file = tempfile.TemporaryFile() if job.report else None  # the host's, not the job's
    pass_fds = list(fds)
    env: dict[str, str] = dict(job.env)
    if fds:
        env["DEEPREFLECT_LINK_FD"] = str(fds[0])
    if report_file is not None:
        pass_fds.append(report_file.fileno())
        env["DEEPREFLECT_REPORT_FD"] = str(report_file.fileno())
    config: dict[str, Any] = {
        "root": str(spec.folder),
        "rlimits": {} if pooled else _rlimits(timeout_s, memory_mb, spec.uid),
        "mode": level,
        "pooled": pooled,
    }
    if pooled:
        config["preload"] = list(_PRELOAD + (_PRELOAD_CHECK if job.report else ()))
    build = _kernel_command if level == "kernel" else _direct_command
    command = build(spec, config, env)
    try:
        proc = subprocess.Popen(  # no preexec_fn: checks run in threads, where it may deadlock
            command.args,
            cwd=spec.folder,
            env=command.env,
            pass_fds=pass_fds + command.opened,
            start_new_session=True,
            stdin=subprocess.PIPE if pooled else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **command.user,
        )
    except BaseException:
        if report_file is not None:
            report_file.close()
        raise
    finally:
        for fd in command.opened:
            os.close(fd)
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout: Capture(job.max_output), proc.stderr: Capture(job.max_output)}
    run = Started(spec, proc, captures, cast(IO[bytes] | None, report_file), time.monotonic())
    run.env = (_base_env(spec, level), {**env, **command.late_env})
    return run


def deliver(run: Started, job: Job, timeout_s: float, memory_mb: int) -> Started:
    """Hand a pooled interpreter its job: files, argv, environment and limits, on its stdin,
    exactly what a cold start would have given it. Raises OSError if it is gone.

    Raises:
        ValueError: a file path would land outside the job's folder (nothing is sent).
        OSError: the interpreter is gone.
    """
    spec = Spec(job, run.spec.folder, run.spec.tmp, run.spec.uid)
    for rel in job.files:
        _inside(spec.folder, rel)
    base, late = run.env
    message = {
        "files": dict(job.files),
        "argv": list(job.argv),
        "env": {**base, **job.env, **late},
        "rlimits": _rlimits(timeout_s, memory_mb, spec.uid),
    }
    stdin = cast(IO[bytes], run.proc.stdin)
    try:
        stdin.write(json.dumps(message).encode("utf-8"))
    finally:
        try:
            stdin.close()
        except OSError:
            pass
    pipes = cast(tuple[IO[bytes], IO[bytes]], (run.proc.stdout, run.proc.stderr))
    captures = {pipe: Capture(job.max_output) for pipe in pipes}
    return Started(spec, run.proc, captures, run.report, time.monotonic())


def _base_env(spec: Spec, level: IsolationLevel) -> dict[str, str]:
    return _environment(spec.folder, "/tmp" if level == "kernel" else str(spec.tmp))


def _kernel_command(spec: Spec, config: dict[str, Any], env: dict[str, str]) -> _Command:
    """bubblewrap around the interpreter; the bootstrap copies the files into its tmpfs."""
    readable = [os.path.realpath(p) for p in spec.job.readable]
    config.update(uid=spec.uid, copy_from=bwrap.SOURCE, writable=["/tmp", "/dev/shm"])
    # defence in depth under the namespaces; a kernel without Landlock still has them
    rules = _kernel_rules([*interpreter_roots(), *readable], False, required=False)
    config["kernel_rules"] = rules
    config["site"] = site_packages()
    env = {**_environment(spec.folder, "/tmp"), **env}
    root = spec.uid is not None
    args = bwrap.command(spec.folder, root=root, disk_bytes=_DISK_LIMIT, env=env, readable=readable)
    args += [sys.executable, *_FLAGS, "-c", program("bootstrap.py"), json.dumps(config)]
    return _Command(args + list(spec.job.argv), env)


def _direct_command(spec: Spec, config: dict[str, Any], env: dict[str, str]) -> _Command:
    """The interpreter itself, as the throw-away user when the host is root; at the
    ``landlock`` level it holds itself to the kernel rules before any generated code."""
    interpreter, interpreter_env, opened = _interpreter(spec.uid)
    extra = [os.path.realpath(p) for p in spec.job.readable]
    config.update(readable=_readable_roots() + extra, writable=[str(spec.tmp)])
    config["site"] = site_packages(
        interpreter_env.get("PYTHONHOME"), interpreter_env.get("PYTHONPATH")
    )
    if config["mode"] == "landlock":
        # the throw-away uid may not walk to the interpreter (under /root): the descriptors
        # the host opened for it (``/proc/self/fd/N``) name it instead
        reach = [p for p in interpreter_env.get("PYTHONPATH", "").split(":") if p]
        reach += [interpreter_env["PYTHONHOME"]] if "PYTHONHOME" in interpreter_env else []
        readable = [*interpreter_roots(), *reach, *extra]
        config["kernel_rules"] = _kernel_rules(readable, spec.uid is None, required=True)
    args = [interpreter, *_FLAGS, "-c", program("bootstrap.py"), json.dumps(config)]
    user: dict[str, Any] = {}
    if spec.uid is not None:
        user = {"user": spec.uid, "group": spec.uid, "extra_groups": []}
    env = {**_environment(spec.folder, str(spec.tmp)), **env, **interpreter_env}
    return _Command(args + list(spec.job.argv), env, opened, user, interpreter_env)


def _kernel_rules(readable: list[str], shares_host_uid: bool, *, required: bool) -> dict[str, Any]:
    """What the bootstrap needs to apply :mod:`agent.sandbox.kernel_rules` to itself;
    ``shares_host_uid``: no throw-away uid keeps the code off the host user's files."""
    return {
        "program": program("kernel_rules.py"),
        "readable": readable,
        "shares_host_uid": shares_host_uid,
        "required": required,
    }


def _rlimits(timeout_s: float, memory_mb: int, uid: int | None) -> dict[str, tuple[int, int]]:
    cpu = math.ceil(timeout_s) + 1
    # RLIMIT_NPROC counts every task of the user: a throw-away uid has none but ours.
    nproc = PROCESSES_PER_JOB + (0 if uid is not None else tasks_of_user(os.getuid()))
    return {
        "RLIMIT_CPU": (cpu, cpu + 1),
        "RLIMIT_AS": (memory_mb * 1024 * 1024,) * 2,
        "RLIMIT_FSIZE": (FILE_SIZE_LIMIT,) * 2,
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_CORE": (0, 0),
    }


def _interpreter(uid: int | None) -> tuple[str, dict[str, str], list[int]]:
    """(executable, env additions, fds to pass) that start this Python as ``uid``.

    A throw-away user often cannot reach the interpreter (pyenv under ``/root``, mode 0700).
    The parent opens the installation folder and passes the descriptor: ``/proc/self/fd/N``
    reaches it without walking through ``/root``. Nothing else under ``/root`` is exposed.
    """
    if uid is None:
        return sys.executable, {}, []
    home_fd = os.open(sys.base_prefix, os.O_RDONLY | os.O_DIRECTORY)
    home = f"/proc/self/fd/{home_fd}"
    executable = os.path.realpath(sys.executable)
    if Path(executable).is_relative_to(sys.base_prefix):
        executable = f"{home}/{os.path.relpath(executable, sys.base_prefix)}"
    extra = {"PYTHONHOME": home, "LD_LIBRARY_PATH": f"{home}/lib"}
    fds = [home_fd]
    if sys.prefix != sys.base_prefix:  # a virtualenv: its site-packages hold the tools
        venv_fd = os.open(sys.prefix, os.O_RDONLY | os.O_DIRECTORY)
        fds.append(venv_fd)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        extra["PYTHONPATH"] = f"/proc/self/fd/{venv_fd}/lib/{version}/site-packages"
    return executable, extra, fds


def site_packages(home: str | None = None, venv: str | None = None) -> list[str]:
    """The host's site-packages folders as the job's interpreter reaches them: through the
    descriptors of ``home`` (the installation) and ``venv`` (its site-packages) when given."""
    found = []
    for path in sys.path:
        if not (path and os.path.isabs(path) and "site-packages" in path and os.path.isdir(path)):
            continue
        real = os.path.realpath(path)
        if venv is not None and sys.prefix != sys.base_prefix and _under(real, sys.prefix):
            found.append(venv)
        elif home is not None and _under(real, sys.base_prefix):
            found.append(f"{home}/{os.path.relpath(real, os.path.realpath(sys.base_prefix))}")
        else:
            found.append(real)
    return list(dict.fromkeys(found))


def _under(path: str, prefix: str) -> bool:
    return Path(path).is_relative_to(os.path.realpath(prefix))


def _readable_roots() -> list[str]:
    """What the audit hook lets code read besides its folders: the interpreter and libraries,
    not the rest of ``sys.path`` (an editable checkout is the host's, not the sandbox's)."""
    roots = {"/usr", "/lib", "/lib64", "/etc/localtime", *interpreter_roots()}
    return sorted(os.path.realpath(r) for r in roots)


def _environment(folder: Path, tmpdir: str) -> dict[str, str]:
    """Built from nothing: secrets in ``os.environ`` never leak."""
    return {
        "PATH": _PATH,
        "HOME": str(folder),
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
