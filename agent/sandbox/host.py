"""Start sandboxed interpreters, watch them, collect their output, and leave nothing behind.

A run is one or more :class:`Job` s started together (a check runs the artifact and its tests
in two, linked by a socket pair). Each job gets a fresh folder holding only its files, an
environment built from nothing, resource limits, and, when the host is root, a throw-away
user id of its own: the kernel then keeps jobs out of each other's folders and processes, and
the run's processes can all be found and killed afterwards, ``setsid()`` daemons included.
A watcher sums the memory and counts the processes of the whole run, not of each process.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from agent.sandbox import bwrap
from agent.sandbox.isolation import IsolationLevel, isolation_level

_BOOTSTRAP = (Path(__file__).parent / "bootstrap.py").read_text(encoding="utf-8")
_UID_RANGE = (1_900_000_000, 2_000_000_000)  # throw-away ids, far from any real account
_FILE_SIZE_LIMIT = 16 * 1024 * 1024
_DISK_LIMIT = 64 * 1024 * 1024  # the folder's tmpfs and the private /tmp, each (kernel mode)
_PROCESSES = 64  # processes and threads one job may have at once
_OUTPUT_FLOOD_BYTES = 4 * 1024 * 1024  # more output than this (all streams) kills the run
_EXIT_GRACE_S = 0.2  # after the main jobs exit, how long to wait for their children's output
_WATCH_EVERY_S = 0.05
_PATH = "/usr/local/bin:/usr/bin:/bin"


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
    """``"timeout"``, ``"output"`` (flood), ``"cpu"``, ``"memory"``, ``"killed"`` or None."""
    duration_s: float
    """Wall time of the run."""
    isolation: IsolationLevel = "process"
    """The isolation the job ran under."""
    report: str = ""
    """What the job wrote to its report descriptor (``DEEPREFLECT_REPORT_FD``), if it had one."""


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
    """Host files the job may read besides its own (process mode only, and only as far as
    the throw-away user's permissions reach)."""
    report: bool = False
    """Give the job a descriptor (``DEEPREFLECT_REPORT_FD``) whose text comes back as
    ``SandboxResult.report``: a channel no other job of the run can write to."""


def run_jobs(
    jobs: Sequence[Job],
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    link: bool = False,
    isolation: IsolationLevel | None = None,
) -> list[SandboxResult]:
    """Run ``jobs`` together in the sandbox; ``link`` connects the first two by a socket pair
    (``DEEPREFLECT_LINK_FD``). ``memory_mb`` bounds the whole run, every process summed.
    ``isolation`` overrides :func:`isolation_level` (the SQL check reads a host file).

    Raises:
        ValueError: a file path would land outside its folder, or a bad timeout.
        OSError: an interpreter could not be started.
    """
    if not 0 < timeout_s < math.inf:
        msg = f"timeout_s must be a positive number of seconds, not {timeout_s!r}"
        raise ValueError(msg)
    level = isolation or isolation_level()
    base = Path(tempfile.mkdtemp(prefix="deepreflect-sandbox-")).resolve()
    os.chmod(base, 0o711)  # jobs reach their own folder, never list or enter another's
    started: list[_Started] = []
    try:
        links = socket.socketpair() if link else None
        specs = [_prepare(base, i, job, level) for i, job in enumerate(jobs)]
        for i, spec in enumerate(specs):
            extra = [links[i].fileno()] if links is not None and i < 2 else []
            started.append(_start(spec, level, timeout_s, memory_mb, extra))
        if links is not None:
            for end in links:
                end.close()  # the jobs hold their ends; a dead peer then reads as EOF
        return _supervise(started, timeout_s, memory_mb, level)
    finally:
        for run in started:
            run.close()
        _remove_tree(base)


@dataclass
class _Spec:
    job: Job
    folder: Path
    uid: int | None


@dataclass
class _Started:
    spec: _Spec
    proc: subprocess.Popen[bytes]
    captures: dict[IO[bytes], _Capture]
    report: IO[bytes] | None
    started_at: float

    def close(self) -> None:
        for pipe in (*self.captures, self.report):
            if pipe is not None and not pipe.closed:
                pipe.close()


def _prepare(base: Path, index: int, job: Job, level: IsolationLevel) -> _Spec:
    folder = base / f"job{index}"
    folder.mkdir(mode=0o700)
    _write_files(folder, job.files)
    uid = secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]) + _UID_RANGE[0]
    uid_or_none = uid if os.geteuid() == 0 else None
    if uid_or_none is not None and level == "process":
        _chown_tree(folder, uid_or_none)  # kernel mode: the bootstrap chowns its tmpfs copy
    return _Spec(job, folder, uid_or_none)


def _write_files(folder: Path, files: Mapping[str, str]) -> None:
    """Write the VFS files; a path that would resolve outside ``folder`` is an error."""
    for rel, content in files.items():
        target = (folder / rel).resolve()
        if target == folder or not target.is_relative_to(folder):
            msg = f"sandbox file path {rel!r} resolves outside the sandbox folder"
            raise ValueError(msg)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8", newline="")


def _chown_tree(folder: Path, uid: int) -> None:
    os.chown(folder, uid, uid)
    for parent, dirs, names in os.walk(folder):
        for name in dirs + names:
            os.chown(os.path.join(parent, name), uid, uid)


def _remove_tree(folder: Path) -> None:
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


def _rlimits(timeout_s: float, memory_mb: int, uid: int | None) -> dict[str, tuple[int, int]]:
    cpu = math.ceil(timeout_s) + 1
    # RLIMIT_NPROC counts every task of the user: a throw-away uid has none but ours.
    nproc = _PROCESSES + (0 if uid is not None else _tasks_of_user(os.getuid()))
    return {
        "RLIMIT_CPU": (cpu, cpu + 1),
        "RLIMIT_AS": (memory_mb * 1024 * 1024,) * 2,
        "RLIMIT_FSIZE": (_FILE_SIZE_LIMIT,) * 2,
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_CORE": (0, 0),
    }


def _tasks_of_user(uid: int) -> int:
    count = 0
    for pid in _pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return count


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _start(
    spec: _Spec, level: IsolationLevel, timeout_s: float, memory_mb: int, fds: list[int]
) -> _Started:
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
        "rlimits": _rlimits(timeout_s, memory_mb, spec.uid),
        "mode": level,
    }
    opened: list[int] = []
    if level == "kernel":
        config.update(uid=spec.uid, copy_from=bwrap.SOURCE, writable=["/tmp"])
        env = {**_environment(spec.folder, "/tmp"), **env}
        args = bwrap.command(
            spec.folder, root=spec.uid is not None, disk_bytes=_DISK_LIMIT, env=env
        )
        args += [sys.executable, "-B", "-c", _BOOTSTRAP, json.dumps(config), *job.argv]
        kwargs: dict[str, Any] = {}
    else:
        interpreter, interpreter_env, opened = _interpreter(spec.uid)
        config["readable"] = _readable_roots() + [os.path.realpath(p) for p in job.readable]
        args = [interpreter, "-B", "-c", _BOOTSTRAP, json.dumps(config), *job.argv]
        pass_fds += opened
        kwargs = {}
        if spec.uid is not None:
            kwargs = {"user": spec.uid, "group": spec.uid, "extra_groups": []}
        env = {**_environment(spec.folder, str(spec.folder)), **env, **interpreter_env}
    try:
        proc = subprocess.Popen(  # no preexec_fn: checks run in threads, where it may deadlock
            args,
            cwd=spec.folder,
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **kwargs,
        )
    except BaseException:
        if report_file is not None:
            report_file.close()
        raise
    finally:
        for fd in opened:
            os.close(fd)
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout: _Capture(job.max_output), proc.stderr: _Capture(job.max_output)}
    return _Started(spec, proc, captures, cast(IO[bytes] | None, report_file), time.monotonic())


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


def _readable_roots() -> list[str]:
    """What process-mode code may read besides its folder: the interpreter and libraries."""
    roots = {sys.base_prefix, sys.prefix, "/usr", "/lib", "/lib64", "/etc/localtime"}
    roots |= {p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)}
    roots -= {"/", os.path.expanduser("~"), os.getcwd()}  # a venv in the checkout is enough
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


def _supervise(
    started: list[_Started], timeout_s: float, memory_mb: int, level: IsolationLevel
) -> list[SandboxResult]:
    """Collect output until the main jobs end, time runs out, output floods or the run's
    processes together outgrow ``memory_mb``; then kill everything and report."""
    begun = time.monotonic()
    captures = {pipe: cap for run in started for pipe, cap in run.captures.items()}
    mains = [run for run in started if run.spec.job.main] or started
    watch = _Watch(started, memory_mb * 1024 * 1024)
    reason = _collect(mains, captures, begun + timeout_s, watch)
    for run in started:
        _kill_all(run)
    _drain(captures, time.monotonic() + 0.5)
    results = []
    for run in started:
        returncode = _reap(run.proc)
        stdout = _relative(run.captures[cast(IO[bytes], run.proc.stdout)].text(), run.spec.folder)
        stderr = _relative(run.captures[cast(IO[bytes], run.proc.stderr)].text(), run.spec.folder)
        killed = reason or _limit_hit(returncode, stderr)
        results.append(
            SandboxResult(
                returncode=returncode,
                stdout=stdout,
                stderr=stderr,
                timed_out=reason == "timeout",
                killed_reason=killed,
                duration_s=time.monotonic() - begun,
                isolation=level,
                report=_read_report(run.report),
            )
        )
    return results


def _read_report(report: IO[bytes] | None) -> str:
    if report is None:
        return ""
    report.seek(0)
    return report.read(_FILE_SIZE_LIMIT).decode("utf-8", errors="replace")


def _relative(text: str, folder: Path) -> str:
    """Paths in the job's folder shown relative to it, so identical failures read identically
    across runs (the reflection rules compare evidence to spot a repeated defect)."""
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), ".")


class _Watch:
    """Memory and process count of the whole run, summed over all its processes."""

    def __init__(self, started: list[_Started], limit_bytes: int) -> None:
        self.started = started
        self.limit = limit_bytes
        self.next_at = 0.0

    def over(self, now: float) -> str | None:
        if now < self.next_at:
            return None
        self.next_at = now + _WATCH_EVERY_S
        pids = [pid for run in self.started for pid in _members(run)]
        if len(pids) > _PROCESSES * len(self.started):
            return "killed"
        rss = sum(_rss(pid) for pid in pids)
        return "memory" if rss > self.limit else None


def _rss(pid: int) -> int:
    """Resident memory the process does not share (forked copies share most of theirs)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            fields = handle.read().split()
        return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _members(run: _Started) -> list[int]:
    """Every live process of the job: by its throw-away uid, else by descent from it."""
    if run.spec.uid is not None:
        return [pid for pid in _pids() if _uid_of(pid) == run.spec.uid]
    return list(_descendants(run.proc.pid))


def _uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _descendants(root: int) -> Iterable[int]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    todo = [root]
    while todo:
        pid = todo.pop()
        yield pid
        todo.extend(children.get(pid, []))


def _collect(
    mains: list[_Started],
    captures: dict[IO[bytes], _Capture],
    deadline: float,
    watch: _Watch,
) -> str | None:
    """Read every pipe until the main jobs are gone, time runs out, output floods or the
    watcher objects. Returns ``"timeout"``, ``"output"``, ``"memory"``, ``"killed"`` or None."""
    selector = selectors.DefaultSelector()
    for pipe in captures:
        selector.register(pipe, selectors.EVENT_READ)
    exited_at = None
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if verdict := watch.over(now):
                return verdict
            if exited_at is None and all(_has_exited(run.proc.pid) for run in mains):
                exited_at = now
            if exited_at is not None and (
                now - exited_at > _EXIT_GRACE_S or not selector.get_map()
            ):
                return None  # leftover children may hold pipes; the kill ends them
            if not selector.get_map():
                time.sleep(0.01)
                continue
            for key, _ in selector.select(timeout=min(deadline - now, _WATCH_EVERY_S)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                captures[cast(IO[bytes], key.fileobj)].add(chunk)
                if sum(c.total for c in captures.values()) > _OUTPUT_FLOOD_BYTES:
                    return "output"
    finally:
        selector.close()


def _has_exited(pid: int) -> bool:
    """True once ``pid`` has exited; it stays a zombie (unreaped) so its group id stays ours."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_all(run: _Started) -> None:
    """SIGKILL the job's session and every process it left, until none is left."""
    for _ in range(50):
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        left = [pid for pid in _members(run) if pid != run.proc.pid or not _has_exited(pid)]
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _drain(captures: dict[IO[bytes], _Capture], deadline: float) -> None:
    """Read what killed processes left in the pipes, then close them."""
    for pipe, capture in captures.items():
        os.set_blocking(pipe.fileno(), False)
        while time.monotonic() < deadline:
            try:
                chunk = os.read(pipe.fileno(), 65536)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if not chunk:
                break
            if capture.total < _OUTPUT_FLOOD_BYTES:
                capture.add(chunk)
        pipe.close()


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


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


class _Capture:
    """Keep the head and the tail of a stream: the last lines often carry the verdict."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.keep = 2 * max_chars + 4  # bytes per end; UTF-8 needs up to 4 per char
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: -self.keep]

    def text(self) -> str:
        if self.total == len(self.head) + len(self.tail):  # nothing dropped yet
            first = last = (self.head + self.tail).decode("utf-8", errors="replace")
            if len(first) <= self.max_chars:
                return first
        else:
            first = self.head.decode("utf-8", errors="replace")
            last = self.tail.decode("utf-8", errors="replace")
        half = max(self.max_chars // 2, 1)
        return f"{first[:half]}\n[truncated]\n{last[-half:]}"
