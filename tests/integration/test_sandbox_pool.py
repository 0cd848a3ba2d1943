"""The warm pool: each pair serves one check and dies with it, a job sees nothing of the one
before, the limits still apply, and nothing is left behind (every isolation level)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.checks import run_check
from agent.sandbox import host, pool
from tests.fakes import both_isolation_levels

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux /proc")

mode = both_isolation_levels()


@pytest.fixture
def used(monkeypatch):
    """Every pair a run took from the pool, with its pids and folder, as it was taken."""
    taken: list[tuple[pool.Pair, list[int], Path]] = []
    original = host._run_pooled

    def spy(pair, owner, jobs, timeout_s, memory_mb):
        taken.append((pair, [run.proc.pid for run in pair.runs], pair.base))
        return original(pair, owner, jobs, timeout_s, memory_mb)

    monkeypatch.setattr(host, "_run_pooled", spy)
    yield taken
    pool.shutdown()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def python_check(artifact: str, code: str, **spec) -> dict:
    files = {"mod.py": textwrap.dedent(artifact)}
    return run_check({"kind": "python", "code": textwrap.dedent(code), **spec}, files, "mod.py")


def warm(used) -> None:
    """Run checks until one is served by the pool (the first at a level starts it cold),
    then wait until a pair waits again: the refill runs in the background, and a check
    asked before it finished would start cold (seen on a loaded 2-core machine)."""
    for _ in range(20):
        before = len(used)
        python_check("X = 1\n", "assert X == 1\n")
        if len(used) > before:
            break
    else:
        pytest.fail("the pool never served a check")
    deadline = time.monotonic() + 60
    while not pool._current().pairs and time.monotonic() < deadline:
        time.sleep(0.05)


# a process and a thread that try to outlive the check, and files in every writable place
LINGER = """
    import os, threading, time
    for folder in (".", os.environ.get("TMPDIR", "/tmp"), "/dev/shm"):
        try:
            open(os.path.join(folder, "left_by_the_first_job"), "w").write("x")
        except OSError:
            pass
    try:
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
    except OSError:
        pass
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    X = 1
"""


def test_a_pooled_pair_serves_one_check_and_dies_with_it(used):
    warm(used)
    used.clear()
    for _ in range(3):
        python_check(LINGER, "assert X == 1\n")
    assert len(used) >= 2, "the pool did not serve the checks"
    pids = [pid for _, p, _ in used for pid in p]
    assert len(set(pids)) == len(pids), "an interpreter served two checks"
    assert len({base for _, _, base in used}) == len(used), "a folder served two checks"
    for pair, pair_pids, base in used:
        assert not any(alive(pid) for pid in pair_pids)
        assert not base.exists()
        assert pair not in pool._current().pairs


def test_a_job_sees_nothing_a_previous_job_left(used):
    warm(used)
    python_check(LINGER, "assert X == 1\n")
    seen = """
        import os
        FOLDER = sorted(os.listdir("."))
        TMP = sorted(os.listdir(os.environ.get("TMPDIR", "/tmp")))
        try:
            SHM = [n for n in os.listdir("/dev/shm") if "left_by" in n]
        except OSError:
            SHM = []  # not even readable here
    """
    code = """
        assert "left_by_the_first_job" not in FOLDER, FOLDER
        own = ["__deepreflect_bridge__", "__deepreflect_runner__.py"]
        assert FOLDER == [*own, "mod.py"], FOLDER
        assert "left_by_the_first_job" not in TMP, TMP
        assert SHM == [], SHM
    """
    before = len(used)
    report = python_check(seen, code)
    assert len(used) > before, "the second check was not served by the pool"
    assert report["passed"], report["evidence"]


def test_the_pooled_job_gets_its_own_limits_and_an_empty_stdin(used):
    warm(used)
    code = """
        import resource, sys
        assert resource.getrlimit(resource.RLIMIT_CPU) == (4, 5)
        assert resource.getrlimit(resource.RLIMIT_AS)[0] == 512 * 1024 * 1024
        assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 16 * 1024 * 1024
        assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
        assert sys.stdin.read() == ""
        assert ARTIFACT_CPU == (4, 5) and ARTIFACT_STDIN == ""
    """
    artifact = """
        import resource, sys
        ARTIFACT_CPU = resource.getrlimit(resource.RLIMIT_CPU)
        ARTIFACT_STDIN = sys.stdin.read()
    """
    before = len(used)
    report = python_check(artifact, code, timeout_s=3)
    assert len(used) > before
    assert report["passed"], report["evidence"]


@pytest.mark.parametrize(
    ("artifact", "code", "evidence"),
    [
        ("X = 1\n", "while True:\n    pass\n", "timed out"),
        ("import time\nX = 1\n", "time.sleep(30)\n", "timed out"),
        ("X = bytearray(2 * 1024 ** 3)\n", "assert True\n", ""),
        ("X = 1\n", "blob = bytearray(2 * 1024 ** 3)\n", ""),
    ],
    ids=["check-loops", "check-sleeps", "artifact-allocates", "check-allocates"],
)
def test_limits_still_apply_to_a_pooled_check(used, artifact, code, evidence):
    warm(used)
    before = len(used)
    report = python_check(artifact, code, timeout_s=1.5)
    assert len(used) > before
    assert not report["passed"]
    assert evidence in report["evidence"]


def test_pooled_checks_from_threads_each_get_their_own_pair(used):
    warm(used)
    used.clear()

    def check(i: int) -> dict:
        return python_check(f"X = {i}\n", f"assert X == {i}\n")

    with ThreadPoolExecutor(4) as executor:
        reports = list(executor.map(check, range(8)))
    assert all(r["passed"] for r in reports), [r["evidence"] for r in reports]
    pids = [pid for _, p, _ in used for pid in p]
    assert len(set(pids)) == len(pids)


def test_the_pool_is_off_with_its_variable(used, monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_SANDBOX_POOL", "0")
    pool.shutdown()
    for _ in range(3):
        assert python_check("X = 1\n", "assert X == 1\n")["passed"]
    assert used == [] and pool._current().pairs == []


def test_shutdown_leaves_no_process_and_no_folder(used):
    warm(used)
    current = pool._current()
    with current.lock:
        current.lock.wait_for(lambda: current.pairs, timeout=20)
        waiting = [(run.proc.pid, pair.base) for pair in current.pairs for run in pair.runs]
    assert waiting, "no pair was waiting"
    pool.shutdown()
    assert not any(alive(pid) for pid, _ in waiting)
    assert not any(base.exists() for _, base in waiting)


def test_interpreter_exit_leaves_no_process_and_no_folder(mode):
    program = textwrap.dedent(
        """
        import json, time
        from agent.checks import run_check
        from agent.sandbox import pool
        files = {"mod.py": "X = 1\\n"}
        for _ in range(3):
            assert run_check({"kind": "python", "code": "assert X == 1"}, files, "mod.py")["passed"]
        current = pool._current()
        with current.lock:
            current.lock.wait_for(lambda: current.pairs, timeout=20)
            print(json.dumps([[r.proc.pid, str(p.base)] for p in current.pairs for r in p.runs]))
        """
    )
    env = {**os.environ, "DEEPREFLECT_SANDBOX": mode}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    waiting = json.loads(done.stdout.strip().splitlines()[-1])
    assert waiting, "no pair was waiting at exit"
    assert not any(alive(pid) for pid, _ in waiting)
    assert not any(Path(base).exists() for _, base in waiting)


def test_a_folder_written_before_the_job_arrives_runs_nothing(used, mode):
    if mode == "kernel":
        pytest.skip("kernel mode: the folder is a tmpfs in the pair's own mount namespace")
    warm(used)
    current = pool._current()
    with current.lock:
        current.lock.wait_for(lambda: current.pairs, timeout=20)
        for pair in current.pairs:
            for run in pair.runs:
                (run.spec.folder / "mod.py").write_text("X = 2\n")  # planted beside the job
    before = len(used)
    report = python_check("X = 1\n", "assert X == 1\n")
    assert len(used) > before
    assert not report["passed"]
    assert "not empty" in report["evidence"]
