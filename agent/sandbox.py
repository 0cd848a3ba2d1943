"""Run generated Python in a throw-away subprocess: the one place where model-written code executes.

What a run gets:

* a fresh temp folder holding only the given VFS files, used as working directory, ``HOME``
  and ``TMPDIR``, and removed afterwards;
* an environment built from scratch (never a copy of ``os.environ``), so API keys and tokens
  of the host process never reach the code;
* resource limits: CPU seconds, address space, file size, number of processes, no core dumps;
* when the host runs as root (CI), the unprivileged ``nobody`` user: the kernel ignores
  ``RLIMIT_NPROC`` for root, so only a non-root child turns a fork bomb into a failed ``fork``;
  it also makes the kernel refuse writes to anything ``nobody`` does not own;
* a new session, so the wall timeout kills the whole process group, children included;
* stdout and stderr truncated (head and tail kept, ``[truncated]`` in between); a process
  that floods its output is killed;
* a bootstrap (``_BOOTSTRAP``) that sets the limits and installs an audit hook
  (``sys.addaudithook``) before any generated code runs. The hook refuses: opening a file for
  writing outside the folder; removing, renaming, linking, creating directories, changing
  modes/owners/times outside it; SQLite databases outside it; socket connect/bind/send and
  name lookups; starting programs (``subprocess``, ``os.system``, ``os.exec*``,
  ``os.posix_spawn``) and loading SQLite extensions, because that code would run without
  the hook.

What it does NOT protect against (a best-effort layer, not a kernel sandbox):

* reads: the code can read any file its user may read (world-readable files as ``nobody``);
* native code, which audit hooks do not see: ``ctypes``, C extensions; nor writers without
  an audit event (``os.mkfifo``, ``os.mknod``, ``dbm``);
* when the host is not root, the child runs as the host user: the audit hook is then the only
  barrier against writes outside the folder, and the code may signal the user's processes.
  Concurrent runs as root share ``nobody``, so they share its process budget too;
* a process that calls ``setsid()`` leaves the process group and survives the timeout kill
  (its CPU limit still bounds it);
* network isolation below the hook, kernel exploits, side channels. Run untrusted workloads
  in a container or VM.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

__all__ = ["SandboxResult", "run_python"]

_NOBODY = 65534  # uid/gid of `nobody` on Linux
_FILE_SIZE_LIMIT = 16 * 1024 * 1024
_EXTRA_PROCESSES = 64  # processes (and threads) the child may add to what its user already has
_OUTPUT_FLOOD_BYTES = 4 * 1024 * 1024  # more output than this (both streams) kills the run
_EXIT_GRACE_S = 0.2  # after the main process exits, how long to wait for its children's output
_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed run did."""

    returncode: int | None
    """Exit code of the main process; negative for a signal; None if it could not be reaped."""
    stdout: str
    """Standard output, truncated to ``max_output`` characters."""
    stderr: str
    """Standard error, truncated to ``max_output`` characters."""
    timed_out: bool
    """The wall timeout fired and the process group was killed."""
    killed_reason: str | None
    """``"timeout"``, ``"output"`` (flood), ``"cpu"``, ``"memory"``, ``"killed"`` or None."""
    duration_s: float
    """Wall time of the run."""


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

    Args:
        files: VFS files (relative POSIX path -> text) written into the fresh folder.
        argv: arguments after the interpreter, e.g. ``["-m", "pytest", "-q"]``.
        env: extra, non-secret environment variables (e.g. pytest switches).

    Raises:
        ValueError: a file path would land outside the folder.
        OSError: the interpreter could not be started.
    """
    if not 0 < timeout_s < math.inf:
        msg = f"timeout_s must be a positive number of seconds, not {timeout_s!r}"
        raise ValueError(msg)
    folder = Path(tempfile.mkdtemp(prefix="deepreflect-sandbox-")).resolve()
    try:
        _write_files(folder, files)
        drop_to = _NOBODY if os.geteuid() == 0 else None
        if drop_to is not None:
            _chown_tree(folder, drop_to)
        return _run(folder, list(argv), timeout_s, memory_mb, max_output, drop_to, env or {})
    finally:
        _remove_tree(folder)


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
    """Hand the folder to the unprivileged user so that it can write its own files there."""
    os.chown(folder, uid, uid)
    for parent, dirs, names in os.walk(folder):
        for name in dirs + names:
            os.chown(os.path.join(parent, name), uid, uid)


def _remove_tree(folder: Path) -> None:
    """Remove the folder even if the code made parts of it unreadable.

    Only real directories are made writable again: ``chmod`` follows symlinks, and the code
    may have left one pointing anywhere on the host.
    """

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
    """Limits the bootstrap applies before generated code runs (soft, hard)."""
    cpu = math.ceil(timeout_s) + 1
    # RLIMIT_NPROC counts every task of the user, not just ours: allow a few more than exist.
    nproc = _tasks_of_user(os.getuid() if uid is None else uid) + _EXTRA_PROCESSES
    return {
        "RLIMIT_CPU": (cpu, cpu + 1),
        "RLIMIT_AS": (memory_mb * 1024 * 1024,) * 2,
        "RLIMIT_FSIZE": (_FILE_SIZE_LIMIT,) * 2,
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_CORE": (0, 0),
    }


def _tasks_of_user(uid: int) -> int:
    """Count the processes and threads ``uid`` owns (what the kernel checks RLIMIT_NPROC on)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue  # the process ended while we looked
    return count


def _interpreter(drop_to: int | None) -> tuple[str, dict[str, str], tuple[int, ...]]:
    """Return (executable, env additions, fds to pass) that start this Python in the child.

    Run as root, the child becomes ``nobody``, who often cannot reach the interpreter (pyenv
    under ``/root``, mode 0700). The parent then opens the installation folder and passes the
    descriptor: ``/proc/self/fd/N`` reaches it without walking through ``/root``, so
    ``PYTHONHOME`` and the loader path point there. Nothing else under ``/root`` is exposed.
    """
    if drop_to is None:
        return sys.executable, {}, ()
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
    return executable, extra, tuple(fds)


def _environment(folder: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """Build the child's environment from nothing: secrets in ``os.environ`` never leak."""
    return {
        "PATH": _PATH,
        "HOME": str(folder),
        "TMPDIR": str(folder),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        **extra,
    }


def _run(
    folder: Path,
    argv: list[str],
    timeout_s: float,
    memory_mb: int,
    max_output: int,
    drop_to: int | None,
    env: Mapping[str, str],
) -> SandboxResult:
    """Start the bootstrap, collect its output under the wall timeout, clean up the group."""
    config = {"root": str(folder), "rlimits": _rlimits(timeout_s, memory_mb, drop_to)}
    interpreter, interpreter_env, fds = _interpreter(drop_to)
    as_user = {} if drop_to is None else {"user": drop_to, "group": drop_to, "extra_groups": []}
    started = time.monotonic()
    try:
        proc = _popen(
            [interpreter, "-B", "-c", _BOOTSTRAP, json.dumps(config), *argv],
            cwd=folder,
            env=_environment(folder, {**env, **interpreter_env}),
            pass_fds=fds,
            start_new_session=True,
            **as_user,
        )
    finally:
        for fd in fds:
            os.close(fd)
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout: _Capture(max_output), proc.stderr: _Capture(max_output)}
    reason = _collect(proc, captures, started + timeout_s)
    _kill_group(proc.pid)
    _drain(captures, time.monotonic() + 0.5)
    returncode = _reap(proc)
    stdout = _relative(captures[proc.stdout].text(), folder)
    stderr = _relative(captures[proc.stderr].text(), folder)
    return SandboxResult(
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=reason == "timeout",
        killed_reason=reason or _limit_hit(returncode, stderr),
        duration_s=time.monotonic() - started,
    )


def _relative(text: str, folder: Path) -> str:
    """Show paths in the run's folder relative to it: identical failures then read identically
    across runs (the reflection rules compare evidence to spot a repeated defect)."""
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), ".")


def _popen(args: list[str], **kwargs) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` with pipes and no ``preexec_fn``: LangGraph runs checks in threads,
    where ``preexec_fn`` may deadlock, so limits are set by the bootstrap instead."""
    return subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )


class _Capture:
    """Keep the head and the tail of a stream: pytest puts its verdict on the last line."""

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


def _collect(
    proc: subprocess.Popen[bytes], captures: dict[IO[bytes], _Capture], deadline: float
) -> str | None:
    """Read both pipes until they close, the main process is gone, time runs out or output
    floods. Returns ``"timeout"``, ``"output"`` or None."""
    selector = selectors.DefaultSelector()
    for pipe in captures:
        selector.register(pipe, selectors.EVENT_READ)
    exited_at = None
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if exited_at is None and _has_exited(proc.pid):
                exited_at = now
            if exited_at is not None and now - exited_at > _EXIT_GRACE_S:
                return None  # leftover children hold the pipes; the group kill ends them
            for key, _ in selector.select(timeout=min(deadline - now, 0.05)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                captures[cast(IO[bytes], key.fileobj)].add(chunk)  # the pipes registered above
                if sum(c.total for c in captures.values()) > _OUTPUT_FLOOD_BYTES:
                    return "output"
        # Pipes closed; the process may still run (it closed them itself): wait for it.
        while not _has_exited(proc.pid):
            if time.monotonic() >= deadline:
                return "timeout"
            time.sleep(0.01)
        return None
    finally:
        selector.close()


def _has_exited(pid: int) -> bool:
    """True once ``pid`` has exited; it stays a zombie (unreaped) so its group id stays ours."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid: int) -> None:
    """SIGKILL every process left in the run's session (its group id is the child's pid)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
    """Collect the exit status; a child that cannot be reaped must not hang the caller."""
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def _limit_hit(returncode: int | None, stderr: str) -> str | None:
    """Name the resource limit that most likely ended the run (a hint for evidence)."""
    if returncode == -signal.SIGXCPU:
        return "cpu"
    if returncode is not None and returncode != 0 and "MemoryError" in stderr[-1000:]:
        return "memory"
    if returncode == -signal.SIGKILL:
        return "killed"
    return None


# The child's first code. It runs before anything generated: limits, audit hook, then the
# requested `-m module`, `-c code` or script, as `python <argv>` would. Kept free of imports
# beyond the standard library so that it works in any interpreter.
_BOOTSTRAP = r"""
import json, os, resource, sys

CONFIG = json.loads(sys.argv[1])
ROOT = CONFIG["root"]
ALLOWED = {os.devnull}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# event -> (indexes of path arguments, index of the dir_fd argument or None)
PATH_EVENTS = {
    "os.remove": ((0,), 1), "os.rmdir": ((0,), 1), "os.mkdir": ((0,), 2),
    "os.rename": ((0, 1), 2), "os.link": ((0, 1), 2), "os.symlink": ((1,), 2),
    "os.truncate": ((0,), None), "os.chmod": ((0,), 2), "os.chown": ((0,), 3),
    "os.utime": ((0,), 3), "os.chflags": ((0,), None), "os.lchflags": ((0,), None),
    "os.setxattr": ((0,), None), "os.removexattr": ((0,), None),
    "shutil.rmtree": ((0,), 1), "sqlite3.connect": ((0,), None),
}
NETWORK = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
           "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
           "socket.getnameinfo"}
# a new program would run without this hook, a native library around it
PROGRAMS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
            "os.forkpty"}
NATIVE = {"sqlite3.load_extension", "sqlite3.enable_load_extension"}


def fd_path(fd):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("/") else None  # pipes and sockets are not paths


def outside(path, dir_fd=None):
    if isinstance(path, int):
        path = fd_path(path)
        if path is None:
            return False
    path = os.fsdecode(path)
    base = fd_path(dir_fd) if isinstance(dir_fd, int) else os.getcwd()
    full = os.path.realpath(os.path.join(base or os.getcwd(), path))
    inside = full == ROOT or full.startswith(ROOT + os.sep)
    return not inside and full not in ALLOWED


def deny(what):
    raise PermissionError(f"sandbox: {what} is not allowed")


def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writing = bool((flags or 0) & WRITE_FLAGS) or any(c in (mode or "") for c in "wax+")
        if path is None or isinstance(path, int):
            return
        if writing and outside(path):
            deny(f"writing {os.fsdecode(path)!r} outside the sandbox folder")
        # os.open() of an outside directory would hand out a dir_fd for relative writes
        if mode is None and outside(path) and os.path.isdir(path):
            deny(f"opening directory {os.fsdecode(path)!r} outside the sandbox folder")
    elif event in PATH_EVENTS:
        indexes, dir_fd_at = PATH_EVENTS[event]
        dir_fd = args[dir_fd_at] if dir_fd_at is not None and dir_fd_at < len(args) else None
        for i in indexes:
            if outside(args[i], dir_fd):
                deny(f"{event} on {args[i]!r} outside the sandbox folder")
    elif event in NETWORK:
        deny(f"network access ({event})")
    elif event in PROGRAMS:
        deny(f"starting programs ({event})")
    elif event in NATIVE:
        deny(f"loading native code ({event})")


def limit():
    for name, (soft, hard) in CONFIG["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


def main(argv):
    import runpy
    sys.path[0] = ROOT
    if argv[:1] == ["-m"] and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[:1] == ["-c"] and len(argv) > 1:
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    elif argv:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.exit("sandbox: nothing to run")


limit()
sys.addaudithook(hook)
del sys.argv[1]
main(sys.argv[1:])
"""
