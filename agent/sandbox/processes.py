"""Find, measure and kill every process of a sandboxed job, ``setsid()`` daemons included.

A job's processes are found by its throw-away uid when the host is root (the kernel then
keeps other jobs' processes out of the count), else by descent from its first process. The
watcher sums memory and counts processes over the whole run, not per process, so six
children of 400 MB each cannot hide under a 512 MB limit; and it sums the disk the run's
folders hold (``RLIMIT_FSIZE`` bounds one file, not a thousand), with whatever a throw-away
uid left in the shared ``/tmp`` and ``/dev/shm``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence

PROCESSES_PER_JOB = 64  # processes and threads one job may have at once
WATCH_EVERY_S = 0.05
DISK_EVERY_S = 0.2  # walking folders costs more than reading /proc
FILES_PER_JOB = 20_000  # entries a job's folders may hold: inodes are disk too
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")

Member = tuple[int, int | None]
"""How to find a job's processes: (pid of its first process, its throw-away uid or None)."""


def pids() -> list[int]:
    """Every process on the machine (that this process can see)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def tasks_of_user(uid: int) -> int:
    """Processes and threads running as ``uid``: they count against its RLIMIT_NPROC."""
    count = 0
    for pid in pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return count


def members(pid: int, uid: int | None) -> list[int]:
    """Every live process of the job: by its throw-away uid, else by descent from ``pid``."""
    if uid is not None:
        return [other for other in pids() if _uid_of(other) == uid]
    return list(_descendants(pid))


def has_exited(pid: int) -> bool:
    """True once ``pid`` has exited; it stays a zombie (unreaped) so its group id stays ours."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def kill_all(pid: int, uid: int | None) -> None:
    """SIGKILL the job's session and every process it left, until none is left."""
    for _ in range(50):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        left = [other for other in members(pid, uid) if other != pid or not has_exited(other)]
        if not left:
            return
        for other in left:
            try:
                os.kill(other, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def reap(proc: subprocess.Popen[bytes]) -> int | None:
    """The exit code of a killed job's first process, None if it cannot be reaped."""
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def left_in_shared_folders(uid: int) -> list[str]:
    """What ``uid`` created at the top of the machine's shared temporary folders."""
    found = []
    for folder in SHARED_FOLDERS:
        try:
            with os.scandir(folder) as entries:
                found += [e.path for e in entries if e.stat(follow_symlinks=False).st_uid == uid]
        except OSError:
            continue
    return found


def remove_left(uid: int) -> None:
    """Remove what a throw-away uid left in the shared folders (it owns nothing else)."""
    for path in left_in_shared_folders(uid):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def disk_use(paths: Iterable[str]) -> tuple[int, int]:
    """(bytes allocated, entries) beneath ``paths``, never following a symlink."""
    used = count = 0
    todo = list(paths)
    while todo:
        path = todo.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        used += info.st_blocks * 512
        count += 1
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                todo += [os.path.join(path, name) for name in os.listdir(path)]
            except OSError:
                continue
    return used, count


class Watch:
    """Memory and process count of the whole run, summed over all its processes, the disk
    its folders (and its throw-away uids' leftovers) hold, and, when given a CPU budget, the
    CPU time its processes used (:class:`CpuTime`)."""

    def __init__(
        self,
        jobs: Sequence[Member],
        limit_bytes: int,
        folders: Sequence[str] = (),
        disk_bytes: int = 0,
        cpu_s: float | None = None,
    ) -> None:
        self.jobs = list(jobs)
        self.limit = limit_bytes
        self.folders = list(folders)
        self.disk_limit = disk_bytes
        self.cpu = CpuTime() if cpu_s is not None else None
        self.cpu_limit = cpu_s or 0.0
        self.next_at = 0.0
        self.disk_at = 0.0

    def over(self, now: float) -> str | None:
        """``"killed"`` (too many processes), ``"memory"``, ``"cpu"``, ``"disk"`` or None;
        looks at most every ``WATCH_EVERY_S``, since walking ``/proc`` is not free."""
        if now < self.next_at:
            return None
        self.next_at = now + WATCH_EVERY_S
        found = [pid for job in self.jobs for pid in members(*job)]
        if len(found) > PROCESSES_PER_JOB * len(self.jobs):
            return "killed"
        if sum(_rss(pid) for pid in found) > self.limit:
            return "memory"
        if self.cpu is not None and self.cpu.used(found) > self.cpu_limit:
            return "cpu"
        if self.folders and now >= self.disk_at:
            self.disk_at = now + DISK_EVERY_S
            return self._disk_over()
        return None

    def _disk_over(self) -> str | None:
        shared = [p for _, uid in self.jobs if uid is not None for p in left_in_shared_folders(uid)]
        used, entries = disk_use(self.folders + shared)
        too_many = entries > FILES_PER_JOB * len(self.jobs)
        return "disk" if used > self.disk_limit or too_many else None


class CpuTime:
    """CPU seconds a run's processes used, summed: ``RLIMIT_CPU`` bounds each process, not
    the forty a loop forks. Each process counts what it used since it was first seen (a
    pooled interpreter's imports before its job are not the job's); one that lived less
    than a look apart, or whose last moments fell between two looks, is missed: the count
    errs low, never kills early, and the wall backstop and each ``RLIMIT_CPU`` still hold."""

    def __init__(self) -> None:
        self.first: dict[tuple[int, int], float] | None = None
        self.last: dict[tuple[int, int], float] = {}
        self.before: dict[tuple[int, int], float] = {}

    def used(self, pids: Iterable[int]) -> float:
        """The run's CPU seconds so far, given its live processes."""
        seen = dict(filter(None, (_cpu_of(pid) for pid in pids)))
        if self.first is None:  # the run's first look: what they used before is not its
            self.first = dict(seen)
        for key, seconds in seen.items():
            self.before.setdefault(key, self.first.get(key, 0.0))
            self.last[key] = max(seconds, self.last.get(key, 0.0))
        return sum(self.last[key] - self.before[key] for key in self.last)


def _cpu_of(pid: int) -> tuple[tuple[int, int], float] | None:
    """``((pid, start time), user + system CPU seconds)`` of a process: the start time keeps
    a reused pid from counting as the process it replaced."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15
        return (pid, int(fields[19])), ticks / os.sysconf("SC_CLK_TCK")  # starttime: 22
    except (OSError, ValueError, IndexError):
        return None


def _rss(pid: int) -> int:
    """Resident memory the process does not share (forked copies share most of theirs)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            fields = handle.read().split()
        return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _descendants(root: int) -> Iterable[int]:
    children: dict[int, list[int]] = {}
    for pid in pids():
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
