"""The ``execute`` tool in the real sandbox, at both kernel-enforced levels: a subagent's
command runs on its step's files, keeps what it writes within the step's write scope, and a
hostile command (forks, loops, fills the disk, reads secrets, writes outside its scope) ends
with a clear result and loses nothing."""

from __future__ import annotations

import asyncio

from agent.tools.command import WALL_PER_CPU, execute_tool
from agent.tools.filesystem import ToolOutcome, run_tool_call
from agent.vfs.entries import Workspace
from tests.fakes import both_isolation_levels

mode = both_isolation_levels(("kernel", "landlock"))

APP = "def add(a, b):\n    return a + b\n"
TESTS = "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def workspace() -> Workspace:
    """A step that writes app.py, reads test_app.py, and keeps scratch files in work/S1/."""
    readable = {"app.py": APP, "test_app.py": TESTS, "notes.md": "# notes\n"}
    return Workspace(readable, writable=["app.py"], scratch="work/S1/")


def execute(space: Workspace, command: str, timeout_s: float = 60.0) -> ToolOutcome:
    tools = {"execute": execute_tool(timeout_s=timeout_s)}
    call = {"name": "execute", "args": {"command": command}, "id": "c1"}
    return asyncio.run(run_tool_call(call, tools, space))


def python(code: str) -> str:
    """A command line running ``code`` (single quotes kept out of it)."""
    assert "'" not in code
    return f"python -c '{code}'"


def test_a_command_runs_the_tests_and_its_scratch_file_is_kept(mode):
    space = workspace()
    line = "pytest -q test_app.py && " + python(
        'open("work/S1/log.txt", "w").write("tests ran\\n")'
    )
    outcome = execute(space, line)
    assert outcome.ok, outcome.text
    assert outcome.text.startswith(f"exit code 0 [sandbox: {mode}]")
    assert "1 passed" in outcome.text
    assert space.written == {"work/S1/log.txt": "tests ran\n"}


def test_a_failing_test_is_reported_with_its_assertion(mode):
    space = workspace()
    space.write("app.py", "def add(a, b):\n    return a - b\n")
    outcome = execute(space, "pytest -q test_app.py")
    assert outcome.text.startswith("exit code 1")
    assert "assert -1 == 5" in outcome.text


def test_files_written_outside_the_step_scope_are_named_not_kept(mode):
    space = workspace()
    code = (
        'open("app.py", "w").write("def add(a, b):\\n    return b + a\\n"); '
        'open("elsewhere.py", "w").write("x = 1\\n"); '
        'open("notes.md", "w").write("overwritten\\n")'
    )
    outcome = execute(space, python(code))
    assert outcome.ok, outcome.text
    assert space.written == {"app.py": "def add(a, b):\n    return b + a\n"}
    assert space.read("notes.md") == "# notes\n"  # the input the command overwrote is kept
    assert "elsewhere.py (this step may write only app.py, work/S1/*" in outcome.text
    assert "notes.md (this step may write only" in outcome.text


def test_the_command_never_sees_the_hosts_secrets(mode, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("DEEPREFLECT_TEST_SECRET", "hunter2")
    space = workspace()
    code = 'import os; print(sorted(os.environ)); print(os.environ.get("OPENAI_API_KEY"))'
    outcome = execute(space, python(code))
    assert outcome.text.startswith("exit code 0"), outcome.text
    assert "sk-host-secret" not in outcome.text and "hunter2" not in outcome.text
    assert "OPENAI_API_KEY" not in outcome.text and "None" in outcome.text


def test_a_fork_bomb_ends_and_loses_nothing(mode):
    space = workspace()
    outcome = execute(space, python("import os\nwhile True: os.fork()"), timeout_s=20)
    assert not outcome.text.startswith("exit code 0"), outcome.text
    assert space.written == {} and space.read("app.py") == APP


def test_an_endless_loop_is_killed_when_it_has_used_its_cpu_time(mode):
    space = workspace()
    outcome = execute(space, python("while True: pass"), timeout_s=2)
    assert outcome.text.startswith("killed (cpu)"), outcome.text
    assert "used up its CPU time" in outcome.text and "no file was kept" in outcome.text
    assert space.written == {}


def test_loops_in_forked_processes_are_stopped_by_their_cpu_time_summed(mode):
    space = workspace()
    code = "import os\nfor _ in range(3): os.fork()\nwhile True: pass"  # eight loops
    outcome = execute(space, python(code), timeout_s=4)
    assert outcome.text.startswith("killed (cpu)"), outcome.text
    # each loop alone would stay under its RLIMIT_CPU (5 s) until the 20 s wall backstop
    # killed them ("timeout"); the run's CPU summed reaches 4 s well before
    assert float(outcome.text.split(" after ")[1].split(" s")[0]) < 4 * WALL_PER_CPU


def test_a_command_slower_than_its_cpu_time_finishes_when_it_computes_little(mode):
    """A loaded machine, played by sleeping: wall time past the CPU limit, CPU time under."""
    space = workspace()
    outcome = execute(space, python("import time; time.sleep(3); print(42)"), timeout_s=1)
    assert outcome.text.startswith("exit code 0"), outcome.text
    assert "42" in outcome.text


def test_a_command_that_waits_forever_is_stopped_by_the_wall_clock_backstop(mode):
    space = workspace()
    outcome = execute(space, python("import time; time.sleep(600)"), timeout_s=1)
    assert outcome.text.startswith("killed (timeout)"), outcome.text
    seconds = float(outcome.text.split(" after ")[1].split(" s")[0])
    assert WALL_PER_CPU <= seconds < WALL_PER_CPU + 10


def test_filling_the_disk_is_stopped_and_loses_nothing(mode):
    space = workspace()
    code = 'for i in range(200): open(f"work/S1/f{i}", "wb").write(bytes(10**7))'
    outcome = execute(space, python(code), timeout_s=30)
    assert not outcome.text.startswith("exit code 0"), outcome.text
    assert space.written == {} and space.read("app.py") == APP


def test_the_network_is_out_of_reach(mode):
    space = workspace()
    code = 'import socket; socket.create_connection(("1.1.1.1", 53), timeout=2)'
    outcome = execute(space, python(code))
    assert outcome.text.startswith("exit code 1"), outcome.text
    assert "Error" in outcome.text


SLOW_S = 300.0


def test_a_command_sees_the_workspace_folder_with_the_threads_writes_over_it(mode, tmp_path):
    """The folder's tests run against the step's version of app.py; the command's write
    lands in the thread, never in the folder; the folder's ignored secret is not there."""
    from agent.vfs.folder import Folder

    (tmp_path / "app.py").write_text(APP.replace("a + b", "a - b"))
    (tmp_path / "test_app.py").write_text(TESTS)
    (tmp_path / ".gitignore").write_text("secret.env\n")
    (tmp_path / "secret.env").write_text("TOKEN=hunter2\n")
    space = Workspace({}, writable=["app.py"], scratch="work/S1/", folder=Folder.open(tmp_path))
    # a failing pytest formats its report slowly on a loaded machine: a wide bound, no timing
    failing = execute(space, "pytest -q test_app.py", SLOW_S)  # the folder's own bug
    assert "1 failed" in failing.text
    space.write("app.py", APP)  # the step's fix, in the thread only
    passing = execute(space, "pytest -q test_app.py", SLOW_S)
    assert "1 passed" in passing.text, passing.text
    probe = python('import os; print(os.path.exists("secret.env"))')
    assert "False" in execute(space, probe).text
    execute(space, python('open("app.py", "a").write("# by the command\\n")'))
    assert space.written["app.py"].endswith("# by the command\n")
    assert (tmp_path / "app.py").read_text() == APP.replace("a + b", "a - b")
