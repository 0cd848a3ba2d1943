"""The sandbox: a fresh folder, no secrets, resource limits, a killed process group, no escape."""

from __future__ import annotations

import ast
import os
import shutil
import sys
import tempfile
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent import sandbox
from agent.sandbox import SandboxResult, run_python
from tests.fakes import both_isolation_levels

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux /proc")


mode = both_isolation_levels()


def run_code(code: str, files: dict[str, str] | None = None, **kwargs) -> SandboxResult:
    return run_python(files or {}, ["-c", textwrap.dedent(code)], **kwargs)


def running_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds ``token``: a PID
    namespace renumbers processes, but the code's own text is in its command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def escape_path() -> Path:
    return Path(f"/tmp/deepreflect_escape_{uuid.uuid4().hex}")


def test_run_python_returns_output_and_exit_code():
    result = run_code("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")

    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and result.killed_reason is None


def test_sandbox_folder_holds_only_the_given_files():
    files = {"a.txt": "alpha", "pkg/mod.py": "VALUE = 42\n"}

    result = run_code(
        """
        import os
        from pkg.mod import VALUE
        print(sorted(os.listdir('.')), sorted(os.listdir('pkg')), open('a.txt').read(), VALUE)
        """,
        files,
    )

    assert result.stdout == "['a.txt', 'pkg'] ['mod.py'] alpha 42\n"


def test_sandbox_folder_is_removed_afterwards(monkeypatch):
    created: list[str] = []
    real_mkdtemp = sandbox.host.tempfile.mkdtemp

    def recording_mkdtemp(**kwargs):
        created.append(real_mkdtemp(**kwargs))
        return created[-1]

    monkeypatch.setattr(sandbox.host.tempfile, "mkdtemp", recording_mkdtemp)

    run_code("open('left_behind.txt', 'w').write('x')", {"a.txt": "a"})
    with pytest.raises(ValueError):
        run_python({"../outside.txt": "x"}, ["-c", "pass"])

    assert len(created) == 2
    assert not any(os.path.exists(path) for path in created)


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/deepreflect_abs.txt", "a/../../b.txt"])
def test_file_paths_outside_the_folder_are_rejected(path):
    with pytest.raises(ValueError, match="outside the sandbox folder"):
        run_python({path: "x"}, ["-c", "pass"])


def test_environment_is_built_without_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-test-secret-value")

    result = run_code("import os; print(sorted(os.environ.items()))")

    assert "secret-value" not in result.stdout
    names = {name for name, _ in ast.literal_eval(result.stdout)}
    allowed = {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"}
    allowed |= {"PYTHONHOME", "LD_LIBRARY_PATH", "PYTHONPATH"}  # interpreter location as root
    allowed |= {"PWD"}  # bubblewrap's --chdir
    assert {"PATH", "HOME", "TMPDIR", "PYTHONHASHSEED"} <= names <= allowed


def test_home_is_the_sandbox_folder_and_tmpdir_is_private(mode):
    code = """
        import os, tempfile
        tmp = tempfile.gettempdir()
        open(os.path.join(tmp, 'scratch'), 'w').write('x')
        print(os.environ['HOME'], tmp, os.listdir('.'), flush=True)
    """
    result = run_code(code)

    # the folder is shown as "."; kernel mode has a private /tmp of its own, the others a
    # private folder beside the job's (not in it: the folder holds only the job's files)
    home, tmp, listing = result.stdout.split(" ", 2)
    assert (home, listing) == (".", "[]\n"), result.stderr
    if mode == "kernel":
        assert tmp == "/tmp"
    else:
        assert tmp != tempfile.gettempdir() and Path(tmp).name.startswith("tmp")
        assert not Path(tmp).exists()  # removed with the run


def test_resource_limits_are_set_in_the_child():
    result = run_code(
        """
        import resource as r
        print(r.getrlimit(r.RLIMIT_AS)[0], r.getrlimit(r.RLIMIT_CORE)[0],
              r.getrlimit(r.RLIMIT_FSIZE)[0], r.getrlimit(r.RLIMIT_CPU)[0],
              r.getrlimit(r.RLIMIT_NPROC)[0] > 0)
        """,
        timeout_s=3,
        memory_mb=256,
    )

    assert result.stdout.split() == [
        str(256 * 1024 * 1024),
        "0",
        str(16 * 1024 * 1024),
        "4",
        "True",
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="privileges are dropped only when run as root")
def test_child_runs_as_a_throw_away_user_when_host_is_root(mode):
    code = "import os; print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())"

    first, second = run_code(code), run_code(code)

    uid, euid, gid, groups = first.stdout.split(maxsplit=3)
    assert uid == euid == gid and groups == "[]\n" and uid != "0"
    if mode == "kernel":  # its own user namespace maps it to nobody
        assert uid == "65534"
    else:  # each run gets an id of its own
        assert first.stdout != second.stdout


def test_file_size_limit_stops_huge_files():
    result = run_code("open('big.bin', 'wb').write(b'x' * (20 * 1024 * 1024))")

    assert result.returncode == 1
    assert "File too large" in result.stderr


def test_memory_limit_turns_huge_allocation_into_memory_error():
    result = run_code("b'x' * 4_000_000_000", memory_mb=256)

    assert result.returncode == 1
    assert "MemoryError" in result.stderr
    assert result.killed_reason == "memory"


def test_wall_timeout_kills_the_whole_process_group():
    token = uuid.uuid4().hex
    result = run_code(
        f"""
        import os, time  # {token}
        child = os.fork()
        if child == 0:
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        while True:
            pass
        """,
        timeout_s=1,
    )

    assert result.timed_out and result.killed_reason == "timeout"
    assert result.returncode == -9
    assert result.duration_s < 30  # killed at its 1 s timeout, not after the child's 60 s
    assert result.stdout.strip().isdigit() and not running_with(token)


def test_children_left_behind_are_killed_when_the_main_process_exits():
    token = uuid.uuid4().hex
    result = run_code(
        f"""
        import os, time  # {token}
        child = os.fork()
        if child == 0:
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        """,
        timeout_s=5,
    )

    assert result.returncode == 0 and not result.timed_out
    assert result.duration_s < 30  # the leftover child was killed, not waited for (60 s)
    assert result.stdout.strip().isdigit() and not running_with(token)


def test_long_output_is_truncated_keeping_head_and_tail():
    result = run_code("print('A' * 5000 + 'B' * 5000 + 'C' * 5000)", max_output=1000)

    assert "[truncated]" in result.stdout
    assert len(result.stdout) <= 1000 + len("\n[truncated]\n")
    assert result.stdout.startswith("A") and result.stdout.rstrip().endswith("C")


def test_output_flood_kills_the_run():
    result = run_code("import sys\nwhile True: sys.stdout.write('x' * 65536)", timeout_s=5)

    assert result.killed_reason == "output" and not result.timed_out
    assert len(result.stdout) <= 8000 + len("\n[truncated]\n")


WRITES_OUTSIDE = {
    "open for writing": "open({p!r}, 'w').write('x')",
    "os.open with O_CREAT": "import os; os.open({p!r}, os.O_WRONLY | os.O_CREAT)",
    "os.mkdir": "import os; os.mkdir({p!r})",
    "rename out of the folder": "import os; open('in', 'w').close(); os.rename('in', {p!r})",
    "symlink escape": "import os; os.symlink('/tmp', 'link'); open('link/' + {name!r}, 'w')",
    "sqlite database": "import sqlite3; sqlite3.connect({p!r}).execute('CREATE TABLE t (a)')",
    "dir_fd of an outside folder": (
        "import os; fd = os.open('/tmp', os.O_RDONLY); "
        "os.open({name!r}, os.O_WRONLY | os.O_CREAT, dir_fd=fd)"
    ),
}


@pytest.mark.parametrize("code", WRITES_OUTSIDE.values(), ids=WRITES_OUTSIDE.keys())
def test_writes_outside_the_folder_never_reach_the_host(code, mode):
    target = escape_path()

    result = run_code(code.format(p=str(target), name=target.name))

    assert not target.exists()
    if mode == "process":  # the audit hook refuses; kernel mode writes a private /tmp
        assert result.returncode == 1
        assert "PermissionError: sandbox:" in result.stderr


def test_cleanup_never_follows_symlinks_left_by_the_code(tmp_path):
    host_file = tmp_path / "host.txt"
    host_file.write_text("keep")
    host_file.chmod(0o600)
    code = f"import os; os.symlink({str(host_file)!r}, 'link'); os.chmod('.', 0o500)"

    result = run_code(code)

    assert result.returncode == 0, result.stderr
    assert host_file.stat().st_mode & 0o777 == 0o600
    assert host_file.read_text() == "keep"


def test_writes_inside_the_folder_are_allowed():
    result = run_code(
        """
        import os, shutil, tempfile
        os.makedirs('out/sub')
        open('out/sub/a.txt', 'w').write('a')
        os.rename('out/sub/a.txt', 'out/b.txt')
        with tempfile.NamedTemporaryFile() as handle:
            handle.write(b'scratch')
        with open(os.devnull, 'w') as null:
            null.write('ignored')
        shutil.rmtree('out/sub')
        print(sorted(os.listdir('out')))
        """
    )

    assert result.stdout == "['b.txt']\n", result.stderr


def test_network_connect_is_denied():
    result = run_code("import socket; socket.socket().connect(('127.0.0.1', 9))")

    assert result.returncode != 0
    assert "PermissionError: sandbox: network sockets" in result.stderr


def test_starting_programs_is_denied():
    result = run_code("import subprocess; subprocess.run(['true'])")

    assert "PermissionError: sandbox: starting programs (subprocess.Popen)" in result.stderr


def test_pytest_runs_under_the_audit_hook():
    files = {"test_ok.py": "def test_ok(tmp_path):\n    (tmp_path / 'f').write_text('x')\n"}
    argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ok.py"]

    result = run_python(files, argv, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})

    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_parallel_runs_from_threads_do_not_interfere():
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda n: run_code(f"print({n} * 2)"), range(4)))

    assert [r.stdout for r in results] == ["0\n", "2\n", "4\n", "6\n"]


def test_a_declared_readable_file_is_read_only_and_nothing_beside_it_is_readable():
    folder = Path(tempfile.mkdtemp(prefix="deepreflect-readable-"))
    folder.chmod(0o755)
    declared, beside = folder / "declared.txt", folder / "beside.txt"
    declared.write_text("DECLARED")
    beside.write_text("BESIDE")
    for path in (declared, beside):
        path.chmod(0o644)
    code = f"""
        declared, beside = {str(declared)!r}, {str(beside)!r}
        for path, mode in ((declared, "r"), (beside, "r"), (declared, "a")):
            try:
                with open(path, mode) as handle:
                    print(handle.read() if mode == "r" else handle.write("x"))
            except OSError as exc:
                print("refused", type(exc).__name__)
    """
    job = sandbox.Job(files={}, argv=["-c", textwrap.dedent(code)], readable=[str(declared)])
    try:
        result = sandbox.run_jobs([job])[0]
    finally:
        shutil.rmtree(folder)

    assert result.stdout.splitlines()[0] == "DECLARED", result.stderr
    assert "BESIDE" not in result.stdout
    assert result.stdout.splitlines()[2].startswith("refused")
