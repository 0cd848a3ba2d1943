"""The kernel holds where the audit hook does not: every attack here first switches the
bootstrap's audit hook off (its globals are reachable from a frame), restores the process
spawner it disarmed and loads ctypes, then goes for the host by several primitives at once.
Both kernel-enforced levels (``kernel``, ``landlock``) must hold every one; the ``process``
level runs only when the user opts in, and is shown not to be a boundary."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import sandbox
from agent.checks import run_check
from agent.sandbox import SandboxResult, SandboxUnavailable, run_python
from tests.fakes import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux")

SWITCH_OFF_HOOK = """
import sys
frame = sys._getframe()
while frame is not None:
    if "hook" in frame.f_globals and "WRITABLE" in frame.f_globals:
        frame.f_globals["deny"] = lambda what: None
        frame.f_globals["WRITABLE"].append("/")
    frame = frame.f_back
del sys.modules["_posixsubprocess"]
import _posixsubprocess, subprocess, ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("HOOK-OFF", flush=True)

def attempt(name, action):
    try:
        print(name, "->", repr(action())[:300], flush=True)
    except BaseException as exc:
        print(name, "-> refused", type(exc).__name__, str(exc)[:120], flush=True)
"""


@pytest.fixture(params=["kernel", "landlock"])
def level(request, monkeypatch) -> str:
    """Each kernel-enforced level (skipped, with the reason, where it cannot run)."""
    if request.param == "kernel" and sandbox.isolation.bwrap_path() is None:
        pytest.skip(f"no usable bubblewrap: {sandbox.isolation._probe_error()}")
    if request.param == "landlock" and not sandbox.isolation.landlock_probe().startswith("abi"):
        pytest.skip(sandbox.isolation.landlock_probe())
    monkeypatch.setenv("DEEPREFLECT_SANDBOX", request.param)
    return request.param


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host folder anyone may write to, as ``/tmp`` is and users' shared folders are."""
    folder = Path(tempfile.mkdtemp(prefix="deepreflect-host-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def attack(code: str, **kwargs) -> SandboxResult:
    result = run_python({}, ["-c", SWITCH_OFF_HOOK + textwrap.dedent(code)], **kwargs)
    assert "HOOK-OFF" in result.stdout, result.stderr  # the attack really ran without it
    return result


def shown(result: SandboxResult) -> str:
    return result.stdout + result.stderr


def readme_line() -> str:
    """A line near the top of the checkout's README (the output kept is head and tail)."""
    lines = (Path(ROOT) / "README.md").read_text().splitlines()
    return next(line for line in lines if len(line) > 30)


def traces_of(token: str) -> list[str]:
    """Anything named with ``token`` in the machine's shared writable folders."""
    found = []
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            found += [name for name in os.listdir(folder) if token in name]
        except OSError:
            continue
    return found


# -- files --------------------------------------------------------------------------------------


def test_host_files_cannot_be_read_by_any_primitive(level, host_dir):
    secret = f"SECRET-{uuid.uuid4().hex}"
    named = host_dir / f"named-{uuid.uuid4().hex}.txt"
    named.write_text(secret)
    named.chmod(0o644)
    unlisted = host_dir / f"unlisted-{uuid.uuid4().hex}"  # its name is never in the code
    unlisted.write_text("")
    database = host_dir / "threads.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("create table t (v)")
        db.execute("insert into t values (?)", (secret,))
    database.chmod(0o644)
    line = readme_line()  # of the editable checkout (on sys.path on the host)
    code = f"""
        import shutil, sqlite3
        targets = [{str(named)!r}, {str(Path(ROOT) / "README.md")!r}, "/etc/shadow"]
        for p in targets:
            attempt("open", lambda: open(p).read())
            attempt("os.open", lambda: os.read(os.open(p, os.O_RDONLY), 4096))
            attempt("libc.open", lambda: os.read(libc.open(p.encode(), 0), 4096))
            attempt("proc root", lambda: open("/proc/self/root" + p).read())
            attempt("parent root", lambda: open(f"/proc/{{os.getppid()}}/root" + p).read())
            attempt("hard link", lambda: (os.link(p, "h"), open("h").read())[1])
            attempt("symlink", lambda: (os.symlink(p, "s"), open("s").read())[1])
            attempt("copy", lambda: open(shutil.copy(p, "c")).read())
            attempt("shell", lambda: os.system(f"cat {{p}}"))
            attempt("program", lambda: subprocess.run(["cat", p], capture_output=True).stdout)
            for name in ("h", "s", "c"):
                attempt("cleanup", lambda: os.remove(name))
        attempt("parent cwd", lambda: open(f"/proc/{{os.getppid()}}/cwd/README.md").read())
        attempt("list", lambda: os.listdir({str(host_dir)!r}))
        attempt("list root", lambda: os.listdir("/root"))
        db = sqlite3.connect(":memory:")
        attempt("attach", lambda: db.execute("attach '{database}' as h").execute(
            "select v from h.t").fetchall())
        attempt("uri", lambda: sqlite3.connect("file:{database}?mode=ro", uri=True).execute(
            "select v from t").fetchall())
    """

    out = shown(attack(code, timeout_s=20))

    assert secret not in out
    assert line not in out
    assert unlisted.name not in out
    assert "root:" not in out  # /etc/shadow


def test_nothing_is_written_outside_the_folder_by_any_primitive(level, host_dir):
    token = f"escape{uuid.uuid4().hex}"
    targets = [f"{host_dir}/{token}", f"/tmp/{token}", f"/dev/shm/{token}", f"/var/tmp/{token}"]
    code = f"""
        import shutil, sqlite3, stat
        open("inside", "w").write("x")
        for i, p in enumerate({targets!r}):
            attempt("open", lambda: open(p + "open", "w").write("x"))
            attempt("os.open", lambda: os.open(p + "creat", os.O_WRONLY | os.O_CREAT))
            attempt("libc.open", lambda: libc.open((p + "libc").encode(), 0o101, 0o644))
            attempt("mkdir", lambda: os.mkdir(p + "dir"))
            attempt("mkfifo", lambda: os.mkfifo(p + "fifo"))
            attempt("mknod", lambda: os.mknod(p + "node", stat.S_IFIFO | 0o666))
            attempt("symlink there", lambda: os.symlink("/etc/passwd", p + "sym"))
            attempt("rename", lambda: os.rename("inside", p + "ren"))
            attempt("link", lambda: os.link("inside", p + "lnk"))
            attempt("copy", lambda: shutil.copy("inside", p + "cp"))
            attempt("through a link", lambda: (
                os.symlink(os.path.dirname(p), f"l{{i}}"),
                open(f"l{{i}}/" + os.path.basename(p) + "via", "w").write("x"),
            ))
            db = sqlite3.connect(":memory:")
            attempt("attach", lambda: db.execute(f"attach '{{p}}att' as a{{i}}").execute(
                f"create table a{{i}}.t (v)"))
            attempt("vacuum into", lambda: db.execute(f"vacuum into '{{p}}vac'"))
            attempt("uri", lambda: sqlite3.connect(f"file:{{p}}uri?mode=rwc", uri=True).execute(
                "create table t (v)"))
            attempt("shell", lambda: os.system(f"echo x > {{p}}sh"))
            attempt("program", lambda: subprocess.run(["touch", p + "prog"]))
    """

    attack(code, timeout_s=20)

    assert list(host_dir.iterdir()) == []
    assert traces_of(token) == []


def test_a_symlink_race_writes_nothing_outside(level, host_dir):
    code = f"""
        import threading
        os.mkdir("real")
        stop = False
        def flip():
            while not stop:
                for target in ("real", {str(host_dir)!r}, "/tmp"):
                    try:
                        os.remove("link")
                    except OSError:
                        pass
                    try:
                        os.symlink(target, "link")
                    except OSError:
                        pass
        threading.Thread(target=flip, daemon=True).start()
        for i in range(2000):
            try:
                open(f"link/race-{{i % 7}}", "w").write("x")
            except OSError:
                pass
        stop = True
    """

    attack(code, timeout_s=20)

    assert list(host_dir.iterdir()) == []
    assert not any(Path(f"/tmp/race-{i}").exists() for i in range(7))


# -- network --------------------------------------------------------------------------------


class Listeners:
    """A loopback TCP server, a UDP socket, an abstract and a path unix socket, each noting
    every connection or datagram that reaches it."""

    def __init__(self, folder: Path) -> None:
        self.reached: list[str] = []
        self.abstract = f"deepreflect-test-{uuid.uuid4().hex}"
        self.path = str(folder / "host.sock")
        tcp = socket.create_server(("127.0.0.1", 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        unix = socket.socket(socket.AF_UNIX)
        unix.bind("\0" + self.abstract)
        unix.listen()
        named = socket.socket(socket.AF_UNIX)
        named.bind(self.path)
        named.listen()
        os.chmod(self.path, 0o777)
        self.tcp_port, self.udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        self.sockets = [tcp, udp, unix, named]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        import selectors

        selector = selectors.DefaultSelector()
        for sock in self.sockets:
            selector.register(sock, selectors.EVENT_READ)
        while not self.done.is_set():
            for key, _ in selector.select(0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock.type == socket.SOCK_DGRAM:
                    self.reached.append(f"udp {sock.recv(100)!r}")
                else:
                    self.reached.append(f"accepted on {sock.getsockname()!r}")
                    sock.accept()[0].close()
        selector.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        for sock in self.sockets:
            sock.close()


def test_no_host_socket_is_reached(level, host_dir):
    listeners = Listeners(host_dir)
    code = f"""
        import socket, time
        attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {listeners.tcp_port}), 1))
        attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
            b"x", ("127.0.0.1", {listeners.udp_port})))
        attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect(
            "\\0{listeners.abstract}"))
        attempt("path", lambda: socket.socket(socket.AF_UNIX).connect({listeners.path!r}))
        attempt("raw socket()", lambda: libc.syscall(41, 2, 1, 0))
        attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
        attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
        attempt("io_uring", lambda: libc.syscall(425, 8, ctypes.create_string_buffer(120)))
        attempt("shell", lambda: os.system(
            "exec 3<>/dev/tcp/127.0.0.1/{listeners.tcp_port}; echo x >&3"))
        attempt("python", lambda: subprocess.run([sys.executable, "-c",
            "import socket; socket.create_connection(('127.0.0.1', {listeners.tcp_port}))"]))
        time.sleep(0.2)
    """
    try:
        result = attack(code, timeout_s=20)
    finally:
        listeners.close()

    assert listeners.reached == [], shown(result)


# -- other processes ------------------------------------------------------------------------


@pytest.fixture
def host_process(tmp_path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """A host process with a secret in its environment and its memory, noting every signal."""
    secret, noted = f"sk-{uuid.uuid4().hex}", tmp_path / "signals"
    code = textwrap.dedent(
        f"""
        import signal, sys, time
        kept = {secret!r}.encode() * 4
        for number in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, lambda n, f: open({str(noted)!r}, "a").write(f"{{n}} "))
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, f"--password={secret}"],
        env={**os.environ, "OPENAI_API_KEY": secret},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    yield proc, secret, noted
    proc.kill()
    proc.wait()


def test_other_processes_cannot_be_read_traced_or_signalled(level, host_process):
    proc, secret, noted = host_process
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda n, f: received.append(n))
    code = f"""
        import signal, time
        host, me = {proc.pid}, os.getppid()
        try:
            pids = os.listdir("/proc")
        except OSError:
            pids = [host, me, 1]
        for pid in pids:
            for name in ("environ", "cmdline", "mem", "maps"):
                attempt("proc", lambda: open(f"/proc/{{pid}}/{{name}}", "rb").read(65536))
        for pid in (host, me):
            attempt("kill", lambda: os.kill(pid, signal.SIGUSR1))
            attempt("pidfd", lambda: libc.syscall(424, libc.syscall(434, pid, 0), 10, None, 0))
            attempt("ptrace", lambda: (libc.ptrace(16, pid, 0, 0), ctypes.get_errno()))
            attempt("vm_readv", lambda: libc.syscall(310, pid, None, 0, None, 0, 0))
        attempt("kill all", lambda: os.kill(-1, signal.SIGUSR1))
        attempt("killpg", lambda: os.killpg(os.getpgid(host), signal.SIGUSR1))
        attempt("shell", lambda: os.system(f"kill -USR1 {{host}} {{me}}"))
        child = os.fork()
        if child == 0:
            time.sleep(5)
            os._exit(0)
        attempt("ptrace own child", lambda: (libc.ptrace(16, child, 0, 0), ctypes.get_errno()))
        attempt("unshare", lambda: libc.unshare(0x10000000))
        attempt("bpf", lambda: libc.syscall(321, 0, None, 0))
        attempt("keyctl", lambda: libc.syscall(250, 0, 0, 0, 0, 0))
        attempt("shmget", lambda: (libc.shmget(0, 1 << 24, 0o1666), ctypes.get_errno()))
        attempt("msgget", lambda: (libc.msgget(0, 0o1666), ctypes.get_errno()))
        attempt("inotify", lambda: libc.inotify_add_watch(libc.inotify_init(), b"/tmp", 0x100))
        time.sleep(0.2)
    """
    try:
        result = attack(code, timeout_s=20)
        time.sleep(0.2)
    finally:
        signal.signal(signal.SIGUSR1, previous)

    out = shown(result)
    assert secret not in out
    assert received == [] and not noted.exists()
    assert proc.poll() is None  # alive
    # the kernel refused ptrace even of the sandbox's own child, and System V IPC: EPERM
    assert "ptrace own child -> (-1, 1)" in out, out
    assert "shmget -> (-1, 1)" in out and "msgget -> (-1, 1)" in out
    assert "inotify -> -1" in out


# -- limits ---------------------------------------------------------------------------------


def test_shared_memory_and_disk_are_bounded_and_removed(level):
    token = f"fill{uuid.uuid4().hex}"
    code = f"""
        import tempfile
        written = 0
        chunk = b"x" * (1024 * 1024)
        for folder in ("/dev/shm", tempfile.gettempdir(), "."):
            for i in range(30):  # 30 files of 15 MB each: under RLIMIT_FSIZE, over the limit
                try:
                    with open(f"{{folder}}/{token}{{i}}", "wb") as handle:
                        for _ in range(15):
                            handle.write(chunk)
                            written += len(chunk)
                except OSError as exc:
                    print(folder, type(exc).__name__, flush=True)
                    break
        print("written", written // (1024 * 1024), flush=True)
    """

    result = attack(code, timeout_s=30)

    assert traces_of(token) == []
    lines = [line for line in result.stdout.splitlines() if line.startswith("written")]
    if level == "kernel":  # each tmpfs is full at its size
        assert lines and int(lines[0].split()[1]) <= 3 * 64 + 15, result.stdout
    else:  # no /dev/shm; folders watched, the run killed past their limit
        assert result.killed_reason == "disk", result.stdout
        assert "/dev/shm PermissionError" in result.stdout


def test_a_fork_bomb_is_bounded_and_leaves_nothing(level):
    token = uuid.uuid4().hex
    code = f"""
        import time  # {token}
        for _ in range(10_000):
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    """

    started = time.monotonic()
    result = attack(code, timeout_s=5)

    assert time.monotonic() - started < 20
    assert result.killed_reason is not None or result.returncode != 0
    time.sleep(0.2)
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        assert token.encode() not in cmdline or state == "Z"


# -- a host without root: the sandbox shares the host's uid ----------------------------------

_UNPRIVILEGED_HOST = """
import json, os, signal, sys
got = []
signal.signal(signal.SIGUSR1, lambda n, f: got.append(n))
from agent.sandbox import isolation_level, run_python
try:
    level = isolation_level()
except Exception as exc:
    print(json.dumps({"unavailable": str(exc)}))
    sys.exit(0)
result = run_python({}, ["-c", sys.argv[1]], timeout_s=15)
print(json.dumps({"level": level, "out": result.stdout + result.stderr, "got": got}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become an unprivileged host")
def test_an_unprivileged_hosts_environment_and_signals_are_out_of_reach(level, host_dir):
    interpreter = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
    setpriv = shutil.which("setpriv")
    if interpreter is None or setpriv is None:
        pytest.skip("needs /usr/bin/python3 and setpriv to play an unprivileged host")
    shutil.copytree(Path(ROOT) / "agent" / "sandbox", host_dir / "agent" / "sandbox")
    (host_dir / "agent" / "__init__.py").write_text("")
    secret = f"sk-{uuid.uuid4().hex}"
    owned = host_dir / "owned.txt"  # the unprivileged host user's own file
    owned.write_text("mine")
    owned.chmod(0o600)
    os.chown(owned, 65534, 65534)
    before = owned.stat()
    code = SWITCH_OFF_HOOK + textwrap.dedent(
        """
        import signal
        host = os.getppid()
        attempt("environ", lambda: open(f"/proc/{host}/environ", "rb").read())
        for fd in range(3, 12):
            attempt("fd", lambda: open(f"/proc/{host}/fd/{fd}", "rb").read(300))
        attempt("kill", lambda: os.kill(host, signal.SIGUSR1))
        attempt("kill all", lambda: os.kill(-1, signal.SIGUSR1))
        attempt("ptrace", lambda: (libc.ptrace(16, host, 0, 0), ctypes.get_errno()))
        owned = "OWNED"
        attempt("chmod", lambda: os.chmod(owned, 0o666))
        attempt("utime", lambda: os.utime(owned, (0, 0)))
        attempt("xattr", lambda: os.setxattr(owned, "user.x", b"1"))
        """.replace("OWNED", str(owned))
    )
    done = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", interpreter, "-I", "-c",
         f"import sys; sys.path.insert(0, {str(host_dir)!r})\n" + _UNPRIVILEGED_HOST, code],
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": secret, "DEEPREFLECT_SANDBOX": level},
        capture_output=True,
        text=True,
        cwd=host_dir,
        timeout=60,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    if "unavailable" in answer:
        pytest.skip(f"{level} does not run for an unprivileged host here: {answer['unavailable']}")
    assert answer["level"] == level
    assert "HOOK-OFF" in answer["out"]
    assert secret not in answer["out"]
    assert answer["got"] == []
    after = owned.stat()
    assert (after.st_mode, after.st_mtime) == (before.st_mode, before.st_mtime), answer["out"]
    assert os.listxattr(owned) == []


# -- the process level: refused unless opted in, and not a boundary --------------------------


@pytest.fixture
def no_kernel_sandbox(monkeypatch) -> None:
    """A machine where neither bubblewrap nor Landlock works."""
    monkeypatch.setattr(sandbox.isolation, "bwrap_path", lambda: None)
    monkeypatch.setattr(sandbox.isolation, "landlock_probe", lambda: "unavailable: no Landlock")
    monkeypatch.delenv("DEEPREFLECT_SANDBOX", raising=False)


def test_without_a_kernel_sandbox_generated_code_is_refused(no_kernel_sandbox, tmp_path):
    marker = tmp_path / "ran"

    with pytest.raises(SandboxUnavailable, match="DEEPREFLECT_SANDBOX=process"):
        run_python({}, ["-c", f"open({str(marker)!r}, 'w')"])
    report = run_check({"kind": "python", "code": "assert True"}, {"a.py": "x = 1\n"}, "a.py")

    assert not marker.exists()
    assert not report["passed"]
    assert "SandboxUnavailable" in report["evidence"]
    assert "DEEPREFLECT_SANDBOX=process" in report["evidence"]
    assert "DEEPREFLECT_SANDBOX=process" in (sandbox.weaker_isolation_warning() or "")


def test_without_bubblewrap_the_landlock_level_is_chosen_and_not_warned(monkeypatch):
    if not sandbox.isolation.landlock_probe().startswith("abi"):
        pytest.skip(sandbox.isolation.landlock_probe())
    monkeypatch.setattr(sandbox.isolation, "bwrap_path", lambda: None)
    monkeypatch.delenv("DEEPREFLECT_SANDBOX", raising=False)

    result = run_python({}, ["-c", "print('ran')"])

    assert sandbox.isolation_level() == "landlock" == result.isolation
    assert result.stdout == "ran\n"
    assert sandbox.weaker_isolation_warning() is None


@pytest.mark.parametrize("forced", ["kernel", "landlock", "namespaces"])
def test_a_forced_level_that_cannot_run_is_an_error(no_kernel_sandbox, monkeypatch, forced):
    monkeypatch.setenv("DEEPREFLECT_SANDBOX", forced)

    with pytest.raises(SandboxUnavailable, match=f"DEEPREFLECT_SANDBOX={forced}"):
        sandbox.isolation_level()


def test_the_opted_in_process_level_runs_warned_and_is_not_a_boundary(
    no_kernel_sandbox, monkeypatch
):
    monkeypatch.setenv("DEEPREFLECT_SANDBOX", "process")
    readme, line = Path(ROOT) / "README.md", readme_line()

    result = attack(f"print(open({str(readme)!r}).read())")

    assert sandbox.isolation_level() == "process"
    assert "not a boundary" in (sandbox.weaker_isolation_warning() or "")
    assert line in result.stdout  # the switched-off hook held nothing: hence the opt-in


@pytest.mark.skipif(os.geteuid() != 0, reason="a throw-away uid needs a root host")
def test_the_process_level_still_counts_and_removes_what_its_uid_left_in_shared_folders(
    monkeypatch,
):
    monkeypatch.setenv("DEEPREFLECT_SANDBOX", "process")
    token = f"left{uuid.uuid4().hex}"
    code = f"""
        import time
        for folder in ("/dev/shm", "/tmp"):
            os.mkdir(f"{{folder}}/{token}")
            for i in range(20):  # 20 files of 15 MB in each: past the 128 MB of the job
                with open(f"{{folder}}/{token}/{{i}}", "wb") as handle:
                    handle.write(b"x" * (15 * 1024 * 1024))
        time.sleep(5)
    """

    result = attack(code, timeout_s=20)

    assert result.killed_reason == "disk", result.stdout + result.stderr
    assert traces_of(token) == []
