"""The first code of every sandboxed interpreter; it runs before anything generated.

The host passes this file's text with ``python -B -S -s -c`` and a JSON config as ``argv[1]``. In
order: (kernel mode) copy the run's files into its size-limited tmpfs and drop from the
sandbox's root to the run's throw-away user inside a user namespace of its own; set the
resource limits; hold the process to the kernel rules (Landlock and seccomp, the boundary of
the ``landlock`` level, defence in depth under bubblewrap); disarm the process spawner that
audit hooks cannot see; install the audit hook (defence in depth: code can switch it off, the
kernel rules it cannot); then run the requested ``-m module``, ``-c code`` or script as
``python <argv>`` would.

Standard library only: it runs in any interpreter, with nothing of deepreflect importable.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from typing import Any

CONFIG: dict[str, Any] = json.loads(sys.argv[1])
ROOT: str = CONFIG["root"]
WRITABLE: list[str] = [ROOT, *CONFIG.get("writable", [])]
READABLE: list[str] | None = CONFIG.get("readable")  # None: everything visible may be read
DEVICES = {os.devnull, "/dev/urandom", "/dev/random", "/dev/zero", "/dev/full"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# event -> (indexes of path arguments, index of the dir_fd argument or None)
PATH_EVENTS = {
    "os.remove": ((0,), 1),
    "os.rmdir": ((0,), 1),
    "os.mkdir": ((0,), 2),
    "os.rename": ((0, 1), 2),
    "os.link": ((0, 1), 2),
    "os.symlink": ((1,), 2),
    "os.truncate": ((0,), None),
    "os.chmod": ((0,), 2),
    "os.chown": ((0,), 3),
    "os.utime": ((0,), 3),
    "os.chflags": ((0,), None),
    "os.lchflags": ((0,), None),
    "os.setxattr": ((0,), None),
    "os.removexattr": ((0,), None),
    "shutil.rmtree": ((0,), 1),
}
LISTING_EVENTS = {"os.listdir", "os.scandir", "glob.glob", "os.listxattr"}
NETWORK = {
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
}
# a new program would run without this hook, native code around it
PROGRAMS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.forkpty"}
NATIVE = {
    "sqlite3.load_extension",
    "sqlite3.enable_load_extension",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.dlsym/handle",
    "ctypes.cdata",
    "ctypes.call_function",
    "ctypes.addressof",
}


def fd_path(fd: int) -> str | None:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("/") else None  # pipes and sockets are not paths


def resolve(path: Any, dir_fd: Any = None) -> str | None:
    """The real absolute path ``path`` names, or None for a descriptor that is no path."""
    if isinstance(path, int):
        return fd_path(path)
    text = os.fsdecode(path)
    base = fd_path(dir_fd) if isinstance(dir_fd, int) else None
    return os.path.realpath(os.path.join(base or os.getcwd(), text))


def under(full: str, folders: list[str]) -> bool:
    return any(full == f or full.startswith(f.rstrip("/") + "/") for f in folders)


def may_write(full: str | None) -> bool:
    return full is None or full in DEVICES or under(full, WRITABLE)


def may_read(full: str | None) -> bool:
    if full is None or READABLE is None or full in DEVICES or under(full, WRITABLE):
        return True
    if full == "/proc/self" or under(full, [f"/proc/{os.getpid()}"]):
        return True
    return under(full, READABLE)


def deny(what: str) -> None:
    raise PermissionError(f"sandbox: {what} is not allowed")


def on_open(args: tuple[Any, ...]) -> None:
    path, mode, flags = args
    if path is None or isinstance(path, int):
        return
    writing = bool((flags or 0) & WRITE_FLAGS) or any(c in (mode or "") for c in "wax+")
    full = resolve(path)
    if writing and not may_write(full):
        deny(f"writing {os.fsdecode(path)!r} outside the sandbox folder")
    if not may_read(full):
        deny(f"reading {os.fsdecode(path)!r} outside the sandbox folder")
    # os.open() of an outside directory would hand out a dir_fd for relative writes
    if mode is None and full and os.path.isdir(full) and not may_write(full):
        deny(f"opening directory {os.fsdecode(path)!r} outside the sandbox folder")


def on_sqlite(args: tuple[Any, ...]) -> None:
    database = args[0]
    text = os.fsdecode(database) if isinstance(database, str | bytes) else ""
    if text.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        parts = urlsplit(text)
        read_only = parts.query == "mode=ro" and not parts.netloc
        if not (read_only and may_read(resolve(unquote(parts.path)))):
            deny("opening SQLite URI filenames")  # mode=rwc, absolute paths, shared caches
        return
    if text not in ("", ":memory:") and not may_write(resolve(text)):
        deny(f"SQLite database {text!r} outside the sandbox folder")


def hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        on_open(args)
    elif event in PATH_EVENTS:
        indexes, dir_fd_at = PATH_EVENTS[event]
        dir_fd = args[dir_fd_at] if dir_fd_at is not None and dir_fd_at < len(args) else None
        for i in indexes:
            if not may_write(resolve(args[i], dir_fd)):
                deny(f"{event} on {args[i]!r} outside the sandbox folder")
    elif event in LISTING_EVENTS:
        if args and args[0] is not None and not may_read(resolve(args[0])):
            deny(f"{event} of {args[0]!r} outside the sandbox folder")
    elif event == "sqlite3.connect":
        on_sqlite(args)
    elif event == "sqlite3.connect/handle":
        import sqlite3

        # ATTACH and VACUUM INTO would open files the connect check never saw; the handle
        # may not be usable yet here (3.11), then the throw-away uid is the barrier
        try:
            args[0].setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        except sqlite3.Error:
            pass
    elif event == "socket.__new__":
        import socket

        if len(args) > 1 and args[1] not in (socket.AF_UNIX, -1):
            deny("network sockets")  # listen() needs no bind() to serve on every address
    elif event in NETWORK:
        deny(f"network access ({event})")
    elif event in PROGRAMS:
        deny(f"starting programs ({event})")
    elif event in NATIVE:
        deny(f"loading native code ({event})")


def enter_kernel_sandbox() -> None:
    """Inside bubblewrap: fill the tmpfs folder, then become the run's own unprivileged user."""
    source = CONFIG.get("copy_from")
    if source:
        shutil.copytree(source, ROOT, dirs_exist_ok=True, symlinks=True)
    uid = CONFIG.get("uid")
    if uid is None:
        return  # bubblewrap already runs us as an unprivileged user in a user namespace
    # children first: once a folder is the uid's, this root (no DAC override) cannot enter it
    for parent, dirs, names in os.walk(ROOT, topdown=False):
        for name in [*(os.path.join(parent, n) for n in dirs + names), parent]:
            os.lchown(name, uid, uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)  # clears every capability bubblewrap lent for the steps above
    own_user_namespace(uid)


def own_user_namespace(uid: int) -> None:
    """Unshare a user namespace mapping only this uid: nothing else exists in here."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: setuid made /proc/self root's; take it back
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        return  # the kernel forbids it here; the uid and the other namespaces still hold
    for name, text in (("setgroups", "deny"), ("uid_map", f"65534 {uid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"65534 {uid} 1")


def limit(rlimits: dict[str, Any]) -> None:
    for name, (soft, hard) in rlimits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


def hold_to_kernel_rules() -> None:
    """Apply ``kernel_rules.confine`` (its text comes in the config) to this process for good;
    where they are the boundary, a kernel that refuses them means no generated code runs."""
    rules = CONFIG.get("kernel_rules")
    if not rules:
        return
    namespace: dict[str, Any] = {"__name__": "deepreflect_kernel_rules"}
    exec(compile(rules["program"], "kernel_rules.py", "exec"), namespace)
    try:
        shared = rules["shares_host_uid"]
        namespace["confine"](rules["readable"], WRITABLE, shares_host_uid=shared)
    except OSError as exc:
        if rules["required"]:
            sys.stderr.write(f"sandbox: the kernel rules could not be applied ({exc}); ")
            sys.stderr.write("generated code was not run\n")
            os._exit(70)


def disarm_spawner() -> None:
    """``_posixsubprocess.fork_exec`` starts programs without an audit event."""
    import _posixsubprocess

    def fork_exec(*_args: Any, **_kwargs: Any) -> int:
        deny("starting programs (_posixsubprocess.fork_exec)")
        return -1

    _posixsubprocess.fork_exec = fork_exec


def add_site() -> None:
    """What ``site`` would have done (the interpreter runs with ``-S``), but no ``.pth`` file:
    the host's site-packages on ``sys.path``, and ``exit``/``quit``/``help`` as builtins."""
    import site  # under -S importing it runs nothing

    site.setquit()
    site.setcopyright()
    site.sethelper()
    sys.path.extend(d for d in CONFIG.get("site", []) if d not in sys.path)


def preload() -> None:
    """Pooled: import what the job will need while waiting for it (nothing of the job's)."""
    import importlib

    for name in CONFIG.get("preload", []):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def receive_job(null: int) -> list[str]:
    """Pooled: wait (already confined) for the job on stdin, then give it what a cold start
    would have: its files in the empty folder, its environment and limits, stdin on
    ``/dev/null``. A closed or malformed stdin (the pool shut down) runs nothing."""
    chunks = []
    while chunk := os.read(0, 1 << 20):
        chunks.append(chunk)
    os.dup2(null, 0)
    os.close(null)
    try:
        job = json.loads(b"".join(chunks))
        files, argv, env, rlimits = job["files"], job["argv"], job["env"], job["rlimits"]
    except (ValueError, KeyError, TypeError):
        os._exit(0)
    for folder in [ROOT] if CONFIG.get("mode") == "kernel" else WRITABLE[:2]:
        if os.listdir(folder):  # only this process could have written there: never reuse
            sys.stderr.write(f"sandbox: pooled folder {folder} was not empty; nothing was run\n")
            os._exit(70)
    for rel, content in files.items():
        target = os.path.realpath(os.path.join(ROOT, rel))
        if not target.startswith(ROOT.rstrip("/") + "/"):
            deny(f"a job file outside the folder ({rel!r})")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
    limit(rlimits)
    os.environ.clear()
    os.environ.update(env)
    return list(argv)


def run(argv: list[str]) -> None:
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


if CONFIG.get("mode") == "kernel":
    enter_kernel_sandbox()
os.chdir(ROOT)
limit(CONFIG["rlimits"])
NULL = os.open(os.devnull, os.O_RDONLY) if CONFIG.get("pooled") else -1
hold_to_kernel_rules()
disarm_spawner()
add_site()
sys.addaudithook(hook)
del sys.argv[1]
if CONFIG.get("pooled"):
    preload()
    sys.argv[1:] = receive_job(NULL)
run(sys.argv[1:])
