"""The rules the kernel holds a sandboxed interpreter to: Landlock for files, TCP, abstract
unix sockets and signals, and a seccomp filter for the system calls Landlock cannot see.

The bootstrap applies :func:`confine` to its own process before any generated code runs;
both are inherited across ``fork`` and ``execve`` and cannot be lifted, so the boundary holds
even when the Python audit hook above it has been switched off. Standard library only (``ctypes``
for the four system calls): it runs inside the sandbox, where nothing of deepreflect is
importable. Run as a script it is the host's probe: it confines itself, checks that the kernel
now refuses a read, a write and a socket, and prints the Landlock ABI.

Why these rules:

* Files: read-only beneath the interpreter and the system libraries, read-write beneath the
  job's folders, nothing else (no ``/tmp``, ``/dev/shm``, ``/proc``, home folders, the
  checkout). ``EXECUTE`` is granted nowhere: no new program starts, the shell included
  (shared libraries are mapped, not executed, so imports still work).
* Network: ``socket()`` is refused outright; ``socketpair(AF_UNIX)`` stays (asyncio needs it)
  and the check's link is an inherited descriptor. Landlock also refuses TCP bind/connect
  (ABI 4) and scopes abstract unix sockets and signals to the sandbox's own domain (ABI 6).
* seccomp: no ``ptrace``, ``process_vm_*``, namespaces, mounts, ``bpf``, ``perf_event_open``,
  keyrings, ``io_uring`` (it performs I/O around this filter), ``userfaultfd``, ``memfd``, System
  V and POSIX message-queue IPC (memory outside every limit, outliving the run, shared with
  the host), ``inotify`` watches (names of host files), module loading, handle-based opens,
  ``TIOCSTI``, ``kill(-1)``; and, when the sandbox shares the host's uid (a host that is not
  root), no change of modes, owners, times or extended attributes (Landlock does not govern
  them, and the host user's own files would be within reach).
  Another architecture than the filter was written for is killed, not trusted.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
import struct
import sys
from collections.abc import Iterable, Sequence

# -- Landlock (include/uapi/linux/landlock.h); the system call numbers are the same everywhere
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ = FS_READ_FILE | FS_READ_DIR
WRITE = READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
WRITE |= FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_SYM | FS_REFER | FS_TRUNCATE
DEVICES = {
    "/dev/null": READ | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV,
    "/dev/zero": READ | FS_IOCTL_DEV,
    "/dev/full": READ | FS_WRITE_FILE | FS_TRUNCATE,
    "/dev/random": READ,
    "/dev/urandom": READ,
}
SYSTEM_READABLE = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
SYSTEM_READABLE += ["/etc/ld.so.cache", "/etc/localtime"]

# -- seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_AF_UNIX = 1
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_CLONE_NAMESPACES = 0x7E020080  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
_DENIED = (
    "ptrace process_vm_readv process_vm_writev unshare setns mount umount2 pivot_root chroot "
    "bpf perf_event_open keyctl add_key request_key io_uring_setup io_uring_enter "
    "io_uring_register userfaultfd memfd_create memfd_secret pidfd_getfd kexec_load "
    "kexec_file_load init_module finit_module delete_module open_by_handle_at "
    "name_to_handle_at fanotify_init open_tree move_mount fsopen fsconfig fsmount fspick "
    "mount_setattr syslog inotify_add_watch mq_open mq_unlink shmget shmat shmctl semget "
    "semctl semop semtimedop msgget msgsnd msgrcv msgctl"
).split()

_METADATA = (
    "chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes futimesat "
    "utimensat setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr"
).split()


def _numbers(table: str) -> dict[str, int]:
    """``"name=number ..."`` as a dict (system call tables read better as text)."""
    return {name: int(number) for name, number in (p.split("=") for p in table.split())}


_X86_64 = _numbers(
    "ioctl=16 socket=41 socketpair=53 clone=56 kill=62 ptrace=101 syslog=103 pivot_root=155 "
    "chroot=161 mount=165 umount2=166 init_module=175 delete_module=176 kexec_load=246 "
    "add_key=248 request_key=249 keyctl=250 unshare=272 perf_event_open=298 fanotify_init=300 "
    "name_to_handle_at=303 open_by_handle_at=304 setns=308 process_vm_readv=310 "
    "process_vm_writev=311 finit_module=313 memfd_create=319 kexec_file_load=320 bpf=321 "
    "userfaultfd=323 shmget=29 shmat=30 shmctl=31 semget=64 semop=65 semctl=66 msgget=68 "
    "msgsnd=69 msgrcv=70 msgctl=71 semtimedop=220 mq_open=240 mq_unlink=241 "
    "inotify_add_watch=254 chmod=90 fchmod=91 chown=92 fchown=93 lchown=94 utime=132 "
    "setxattr=188 lsetxattr=189 fsetxattr=190 removexattr=197 lremovexattr=198 "
    "fremovexattr=199 utimes=235 fchownat=260 futimesat=261 fchmodat=268 utimensat=280"
)
_AARCH64 = _numbers(
    "ioctl=29 umount2=39 mount=40 pivot_root=41 chroot=51 unshare=97 kexec_load=104 "
    "init_module=105 delete_module=106 syslog=116 ptrace=117 kill=129 socket=198 "
    "socketpair=199 add_key=217 request_key=218 keyctl=219 clone=220 perf_event_open=241 "
    "fanotify_init=262 name_to_handle_at=264 open_by_handle_at=265 setns=268 "
    "process_vm_readv=270 process_vm_writev=271 finit_module=273 memfd_create=279 bpf=280 "
    "userfaultfd=282 kexec_file_load=294 inotify_add_watch=27 mq_open=180 mq_unlink=181 "
    "msgget=186 msgctl=187 msgrcv=188 msgsnd=189 semget=190 semctl=191 semtimedop=192 "
    "semop=193 shmget=194 shmctl=195 shmat=196 setxattr=5 lsetxattr=6 fsetxattr=7 "
    "removexattr=14 lremovexattr=15 fremovexattr=16 fchmod=52 fchmodat=53 fchownat=54 "
    "fchown=55 utimensat=88"
)
_COMMON = _numbers(  # the unified table, the same on every architecture
    "io_uring_setup=425 io_uring_enter=426 io_uring_register=427 open_tree=428 move_mount=429 "
    "fsopen=430 fsconfig=431 fsmount=432 fspick=433 clone3=435 pidfd_getfd=438 "
    "mount_setattr=442 memfd_secret=447 fchmodat2=452"
)
# machine -> (audit arch, first number of a foreign ABI on it or None, system call numbers)
_ARCHES: dict[str, tuple[int, int | None, dict[str, int]]] = {
    "x86_64": (0xC000003E, 0x40000000, _X86_64),  # from 0x40000000: the x32 ABI
    "aarch64": (0xC00000B7, None, _AARCH64),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _call(function: str, *args: int | bytes | None) -> int:
    """``libc.<function>(args)`` with integers widened to ``long`` (both are variadic)."""
    wide = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return int(getattr(_libc, function)(*wide))


class Unconfined(OSError):
    """The kernel could not apply a rule: the process must not run generated code."""


def abi() -> int:
    """The Landlock ABI of this kernel, 0 when it has none (or it is disabled)."""
    return max(_call("syscall", _CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION), 0)


def confine(readable: Iterable[str], writable: Iterable[str], *, shares_host_uid: bool) -> int:
    """Hold this process and its descendants to Landlock and seccomp; return the ABI used.

    ``readable`` (besides the system's libraries) and ``writable`` are paths; the
    ``/proc/self/fd/N`` of an inherited descriptor works too (the host opens folders the
    sandbox user could not walk to). Missing paths are skipped. ``shares_host_uid`` (a host
    that is not root, so no throw-away uid): refuse a kernel that cannot scope signals
    (ABI < 6), and refuse changing modes, owners, times and extended attributes, which
    Landlock does not govern and the host user's own files would otherwise allow.

    Raises:
        Unconfined: Landlock or seccomp is missing here, or a rule was refused.
    """
    version = abi()
    if version < 1:
        raise Unconfined("the kernel has no Landlock (or it is disabled)")
    if shares_host_uid and version < 6:
        msg = f"Landlock ABI {version} < 6 cannot keep signals in the sandbox"
        raise Unconfined(msg)
    _no_new_privs()
    _landlock(version, list(readable), list(writable))
    _seccomp(shares_host_uid)
    return version


def _no_new_privs() -> None:
    if _call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise Unconfined(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def _fs_rights(version: int) -> int:
    rights = (1 << 13) - 1
    if version >= 2:
        rights |= FS_REFER
    if version >= 3:
        rights |= FS_TRUNCATE
    if version >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _landlock(version: int, readable: list[str], writable: list[str]) -> None:
    handled = _fs_rights(version)
    attr = struct.pack("=Q", handled)
    if version >= 4:
        attr += struct.pack("=Q", NET_BIND_TCP | NET_CONNECT_TCP)  # no port is ever allowed
    if version >= 6:
        attr += struct.pack("=Q", SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    ruleset = _call("syscall", _CREATE_RULESET, attr, len(attr), 0)
    if ruleset < 0:
        raise Unconfined(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        rules = [(p, READ) for p in [*SYSTEM_READABLE, *readable]]
        rules += [(p, WRITE) for p in writable] + list(DEVICES.items())
        for path, rights in rules:
            _allow(ruleset, path, rights & handled)
        if _call("syscall", _RESTRICT_SELF, ruleset, 0) != 0:
            raise Unconfined(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    """Grant ``rights`` beneath ``path`` (only file rights when it is not a folder)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine (``/lib32``) or not the sandbox user's to reach
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        rule = struct.pack("=Qi", rights, fd)
        if _call("syscall", _ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0) != 0:
            raise Unconfined(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def _seccomp(shares_host_uid: bool) -> None:
    program = filter_program(platform.machine(), metadata=not shares_host_uid)
    buffer = b"".join(struct.pack("=HBBI", *op) for op in program)
    filters = ctypes.create_string_buffer(buffer)
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    if _call("prctl", _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        raise Unconfined(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


Op = tuple[int, int, int, int]
"""One classic BPF instruction: (code, jump if true, jump if false, constant)."""


def filter_program(machine: str, *, metadata: bool = True) -> list[Op]:
    """The seccomp filter for ``machine`` (``platform.machine()``), as BPF instructions;
    ``metadata``: allow changing modes, owners, times and extended attributes.

    Raises:
        Unconfined: no filter was written for this architecture.
    """
    if machine not in _ARCHES:
        raise Unconfined(f"no seccomp filter for the {machine} architecture")
    arch, foreign_from, numbers = _ARCHES[machine]
    nr = {**numbers, **_COMMON}
    nr_at, arch_at, arg0_at, arg1_at = 0, 4, 16, 24

    def errno(code: int) -> Op:
        return (_RET, 0, 0, _RET_ERRNO | code)

    ops: list[Op] = [(_LD_ABS, 0, 0, arch_at), (_JEQ, 1, 0, arch), (_RET, 0, 0, _RET_KILL_PROCESS)]
    ops.append((_LD_ABS, 0, 0, nr_at))
    if foreign_from is not None:
        ops += [(_JGE, 0, 1, foreign_from), (_RET, 0, 0, _RET_KILL_PROCESS)]
    denied = _DENIED + ([] if metadata else [n for n in _METADATA if n in nr])
    for name in denied:
        ops += [(_JEQ, 0, 1, nr[name]), errno(_EPERM)]
    ops += [(_JEQ, 0, 1, nr["socket"]), errno(_EACCES)]
    ops += [(_JEQ, 0, 1, nr["clone3"]), errno(_ENOSYS)]  # its flags are out of reach: clone

    def argument_rule(name: str, at: int, test: Op) -> list[Op]:
        """Refuse ``name`` when ``test`` (jumping over the refusal when allowed) holds."""
        return [(_JEQ, 0, 4, nr[name]), (_LD_ABS, 0, 0, at), test, errno(_EPERM)] + [
            (_LD_ABS, 0, 0, nr_at)
        ]

    # each rule ends by loading the number again, for the next one
    ops += argument_rule("socketpair", arg0_at, (_JEQ, 1, 0, _AF_UNIX))
    ops += argument_rule("clone", arg0_at, (_JSET, 0, 1, _CLONE_NAMESPACES))
    ops += argument_rule("kill", arg0_at, (_JEQ, 0, 1, 0xFFFFFFFF))  # kill(-1): all we may
    ops += argument_rule("ioctl", arg1_at, (_JEQ, 0, 1, _TIOCSTI))
    ops += argument_rule("ioctl", arg1_at, (_JEQ, 0, 1, _TIOCLINUX))
    ops.append((_RET, 0, 0, _RET_ALLOW))
    return ops


def probe(readable: Sequence[str]) -> str:
    """Confine this process, then prove the kernel refuses; the ABI, or why not."""
    try:
        version = confine(readable, [], shares_host_uid=os.geteuid() != 0)
    except OSError as exc:
        return f"unavailable: {exc}"
    for attempt in (_read_outside, _create_socket):
        if attempt():
            return f"unavailable: the kernel did not refuse {attempt.__name__}"
    return f"abi {version}"


def _read_outside() -> bool:
    try:
        os.listdir("/")
    except PermissionError:
        return False
    return True


def _create_socket() -> bool:
    import socket

    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except PermissionError:
        return False
    return True


if __name__ == "__main__":
    print(probe(sys.argv[1:]))
