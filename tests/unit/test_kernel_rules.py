"""The seccomp filter, read by a small classic-BPF interpreter: what each system call gets on
each architecture it was written for, without loading it into a kernel."""

from __future__ import annotations

import struct
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="kernel rules are Linux's")

from agent.sandbox import kernel_rules as rules  # noqa: E402  (loads libc)

KILL, ALLOW = "kill", "allow"


def verdict(
    machine: str, name_or_nr: str | int, *args: int, arch: int | None = None, metadata=True
) -> str:
    """Run the filter for ``machine`` on one system call; ``"allow"``, ``"kill"`` or the errno."""
    own_arch, _, numbers = rules._ARCHES[machine]
    nr = name_or_nr if isinstance(name_or_nr, int) else {**numbers, **rules._COMMON}[name_or_nr]
    padded = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("=iIQ6Q", nr, own_arch if arch is None else arch, 0, *padded)
    program = rules.filter_program(machine, metadata=metadata)
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == rules._LD_ABS:
            accumulator = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == rules._RET:
            if k == rules._RET_ALLOW:
                return ALLOW
            if k == rules._RET_KILL_PROCESS:
                return KILL
            return f"errno {k & 0xFFFF}"
        else:
            taken = {
                rules._JEQ: accumulator == k,
                rules._JGE: accumulator >= k,
                rules._JSET: bool(accumulator & k),
            }[code]
            pc += 1 + (jt if taken else jf)
        assert 0 <= pc < len(program), "a jump left the program"


@pytest.mark.parametrize("machine", sorted(rules._ARCHES))
def test_ordinary_system_calls_are_allowed(machine):
    numbers = rules._ARCHES[machine][2]
    assert verdict(machine, 0) == ALLOW  # io_setup / read: not on any list
    assert verdict(machine, "socketpair", 1, 1, 0) == ALLOW  # AF_UNIX: asyncio's self-pipe
    assert verdict(machine, "clone", 0x01200011) == ALLOW  # fork()'s flags
    assert verdict(machine, "kill", 1234, 15) == ALLOW
    assert verdict(machine, "ioctl", 1, 0x5401) == ALLOW  # TCGETS
    assert numbers["socket"] != numbers["socketpair"]


@pytest.mark.parametrize("machine", sorted(rules._ARCHES))
@pytest.mark.parametrize("name", rules._DENIED)
def test_every_denied_system_call_is_refused(machine, name):
    assert verdict(machine, name) == "errno 1"


@pytest.mark.parametrize("machine", sorted(rules._ARCHES))
def test_sockets_namespaces_mass_kill_and_terminal_injection_are_refused(machine):
    assert verdict(machine, "socket", 2, 1, 0) == "errno 13"  # AF_INET
    assert verdict(machine, "socket", 1, 1, 0) == "errno 13"  # AF_UNIX too: the link is inherited
    assert verdict(machine, "socketpair", 2, 1, 0) == "errno 1"
    assert verdict(machine, "clone", 0x10000000 | 0x11) == "errno 1"  # CLONE_NEWUSER
    assert verdict(machine, "clone", 0x40000000) == "errno 1"  # CLONE_NEWNET
    assert verdict(machine, "clone3") == "errno 38"  # ENOSYS: libc falls back to clone
    assert verdict(machine, "kill", 0xFFFFFFFF, 9) == "errno 1"  # kill(-1)
    assert verdict(machine, "ioctl", 0, rules._TIOCSTI) == "errno 1"


@pytest.mark.parametrize("machine", sorted(rules._ARCHES))
def test_metadata_changes_are_refused_only_when_the_host_uid_is_shared(machine):
    names = [n for n in rules._METADATA if n in {**rules._ARCHES[machine][2], **rules._COMMON}]

    assert {"fchmodat", "fchownat", "utimensat", "fsetxattr"} <= set(names)
    assert all(verdict(machine, n, metadata=False) == "errno 1" for n in names)
    assert all(verdict(machine, n) == ALLOW for n in names)


@pytest.mark.parametrize("machine", sorted(rules._ARCHES))
def test_a_foreign_architecture_is_killed(machine):
    assert verdict(machine, 0, arch=0x40000003) == KILL  # i386 through int 0x80
    if machine == "x86_64":
        assert verdict(machine, 0x40000000 + 41) == KILL  # x32 socket()


def test_an_architecture_without_a_filter_is_refused():
    with pytest.raises(rules.Unconfined, match="riscv64"):
        rules.filter_program("riscv64")


def test_landlock_rights_never_include_execute_or_devices():
    assert not rules.READ & rules.FS_EXECUTE
    assert not rules.WRITE & (rules.FS_EXECUTE | rules.FS_MAKE_CHAR | rules.FS_MAKE_BLOCK)
    assert all(not rights & rules.FS_EXECUTE for rights in rules.DEVICES.values())
