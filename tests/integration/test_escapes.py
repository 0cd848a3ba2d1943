"""Escapes from the sandbox, as an adversarial artifact would try them, under both isolation
levels: nothing of the host (files, secrets, network, other runs) is reachable, no process
outlives its run, and memory is bounded for the whole run, not per process."""

from __future__ import annotations

import os
import socket
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

from agent.sandbox import Job, SandboxResult, run_jobs, run_python
from tests.fakes import both_isolation_levels

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux")


mode = both_isolation_levels()


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host folder the way a user's are: owned by the host user, others may read it."""
    folder = Path(tempfile.mkdtemp(prefix="deepreflect-host-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def run_code(code: str, **kwargs) -> SandboxResult:
    return run_python({}, ["-c", textwrap.dedent(code)], **kwargs)


def survivors(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


# -- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "import sqlite3; sqlite3.connect('file:{t}?mode=rwc', uri=True)"
        ".execute('create table a(b)')",
        "import sqlite3; c = sqlite3.connect(':memory:'); c.execute(\"ATTACH '{t}' AS x\"); "
        "c.execute('create table x.a(b)')",
        "import sqlite3; c = sqlite3.connect(':memory:'); c.execute('create table a(b)'); "
        "c.execute(\"VACUUM INTO '{t}'\")",
        "import os; os.symlink('{d}', 'link'); open('link/escaped', 'w').write('x')",
    ],
    ids=["sqlite-uri", "attach", "vacuum-into", "symlink"],
)
def test_sqlite_and_symlink_tricks_write_nothing_on_the_host(code, host_dir):
    target = host_dir / "escaped"

    run_code(code.format(t=target, d=host_dir))

    assert not target.exists()
    assert list(host_dir.iterdir()) == []


def test_a_symlink_race_on_open_writes_nothing_on_the_host(host_dir):
    code = f"""
        import os, threading
        os.mkdir('real')
        stop = False
        def flip():
            while not stop:
                for target in ('real', {str(host_dir)!r}):
                    try:
                        os.remove('link')
                    except OSError:
                        pass
                    try:
                        os.symlink(target, 'link')
                    except OSError:
                        pass
        threading.Thread(target=flip, daemon=True).start()
        for i in range(3000):
            try:
                open('link/escaped', 'w').write('x')
            except OSError:
                pass
        stop = True
    """

    run_code(code, timeout_s=20)

    assert list(host_dir.iterdir()) == []


def test_host_files_and_other_threads_databases_cannot_be_read(host_dir):
    database = host_dir / "threads.sqlite"
    database.write_text("SECRET-ROWS-" + uuid.uuid4().hex)
    database.chmod(0o644)  # as SQLite leaves it: readable by every user on the machine

    result = run_code(f"print(open({str(database)!r}).read())")

    assert "SECRET-ROWS" not in result.stdout
    assert result.returncode != 0


def test_one_run_cannot_read_or_write_another_runs_folder():
    secret = uuid.uuid4().hex
    keeper = Job(files={"secret.txt": secret}, argv=["-c", "import time; time.sleep(2)"])
    thief = Job(
        files={},
        argv=[
            "-c",
            textwrap.dedent(
                """
                import glob, os
                for folder in glob.glob('/tmp/deepreflect-sandbox-*/job*'):
                    if os.path.realpath(folder) == os.getcwd():
                        continue  # its own
                    for name in ('secret.txt', 'conftest.py'):
                        try:
                            print(open(os.path.join(folder, 'secret.txt')).read())
                        except OSError as exc:
                            print('denied', type(exc).__name__)
                        try:
                            open(os.path.join(folder, name), 'a').write('x')
                            print('WROTE', folder)
                        except OSError:
                            pass
                """
            ),
        ],
    )

    results = run_jobs([keeper, thief], timeout_s=10)

    assert secret not in results[1].stdout
    assert "WROTE" not in results[1].stdout


# -- secrets in other processes ------------------------------------------------------------------


def test_secrets_in_host_processes_command_lines_and_environments_are_out_of_reach():
    password, key = f"pw-{uuid.uuid4().hex}", f"sk-{uuid.uuid4().hex}"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", f"postgresql://u:{password}@h/db"],
        env={**os.environ, "OPENAI_API_KEY": key},
    )
    try:
        result = run_code(
            """
            import os
            for pid in os.listdir('/proc'):
                for name in ('cmdline', 'environ'):
                    try:
                        print(open(f'/proc/{pid}/{name}', 'rb').read())
                    except OSError:
                        pass
            """
        )
    finally:
        holder.kill()
        holder.wait()

    assert password not in result.stdout and key not in result.stdout
    assert password not in result.stderr and key not in result.stderr


# -- programs and processes ---------------------------------------------------------------------


def test_hidden_spawners_cannot_start_a_program():
    marker = uuid.uuid4().hex
    result = run_code(
        f"""
        import multiprocessing.util as util
        util.spawnv_passfds('/bin/sh', ['/bin/sh', '-c', 'echo {marker}'], [])
        """
    )

    assert marker not in result.stdout
    assert "PermissionError" in result.stderr


def test_a_setsid_daemon_does_not_outlive_its_run():
    token = uuid.uuid4().hex
    result = run_code(
        f"""
        import os, time  # {token}
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(60)
            os._exit(0)
        print('parent done', flush=True)
        """,
        timeout_s=10,
    )

    assert "parent done" in result.stdout
    assert survivors(token) == []


def test_memory_is_bounded_for_the_whole_run_not_per_process():
    # six processes of 300 MB each stay under a 512 MB per-process limit, not under 512 MB
    result = run_code(
        """
        import os, time
        for _ in range(5):
            if os.fork() == 0:
                break
        block = b'x' * (300 * 1024 * 1024)
        time.sleep(10)
        """,
        memory_mb=512,
        timeout_s=20,
    )

    assert result.killed_reason == "memory"
    assert result.duration_s < 15


# -- network ------------------------------------------------------------------------------------


def test_no_connection_reaches_a_host_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        run_code(f"import socket; socket.create_connection(('127.0.0.1', {port}), 2).send(b'x')")
    finally:
        done.set()
        thread.join()
        server.close()

    assert accepted == []


def _listening_ports() -> set[int]:
    ports = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(name).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_listen_without_bind_serves_nothing_on_the_host():
    before = _listening_ports()
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(_listening_ports() - before)
            time.sleep(0.05)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        result = run_code(
            """
            import socket, time
            s = socket.socket()
            s.listen()
            print(s.getsockname()[1], flush=True)
            time.sleep(1.5)
            """,
            timeout_s=10,
        )
    finally:
        done.set()
        thread.join()

    port = result.stdout.strip()
    assert not port.isdigit() or int(port) not in seen
