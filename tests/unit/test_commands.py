"""The execute tool's pure parts: a command line read without a shell, the files a command
wrote kept through the step's workspace, what the model reads, and which roles get it."""

from __future__ import annotations

import pytest

from agent.context import Context
from agent.controller.subagents import build_registry
from agent.graph.subagent import role_tools
from agent.sandbox.commands import CommandRefused, CommandResult, parse_command
from agent.tools import command
from agent.tools.command import EXECUTE, keep_files, result_text
from agent.vfs.entries import Workspace


def test_a_line_becomes_steps_with_their_operators_and_variables():
    line = "cd src && FLAG=1 pytest -q; python3 -c 'print(1); print(2)' || python app.py"
    assert parse_command(line) == [
        [";", ["cd", "src"], {}],
        ["&&", ["-m", "pytest", "-q"], {"FLAG": "1"}],
        [";", ["-c", "print(1); print(2)"], {}],
        ["||", ["app.py"], {}],
    ]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("", "empty"),
        ("ls -l", "'ls' cannot run"),
        ("bash -c 'pytest'", "'bash' cannot run"),
        ("pytest | tee out", "'|' is not supported"),
        ("python app.py > out.txt", "'>' is not supported"),
        ("pytest &", "'&' is not supported"),
        ("&& pytest", "no command before it"),
        ("pytest ||", "no command after it"),
        ("python", "no REPL"),
        ("python -X dev app.py", "not supported here"),
        ("X=1", "runs nothing"),
        ("python -c 'unclosed", "does not parse"),
        ("pytest " + "x" * 10_001, "the limit is"),
    ],
)
def test_a_line_the_sandbox_cannot_run_is_refused_saying_why(line, says):
    with pytest.raises(CommandRefused, match=says):
        parse_command(line)


def result(**fields) -> CommandResult:
    base = {
        "returncode": 0,
        "stdout": "1 passed\n",
        "stderr": "",
        "killed_reason": None,
        "isolation": "kernel",
        "duration_s": 1.0,
    }
    return CommandResult(**{**base, **fields})


def workspace() -> Workspace:
    return Workspace({"app.py": "x = 1\n"}, writable=["app.py"], scratch="work/S1/")


def test_files_come_back_only_within_the_step_scope_and_bounds():
    space = workspace()
    done = result(
        files={"app.py": "x = 2\n", "work/S1/log": "ok\n", "other.py": "", "work/../../x": ""},
        skipped={"data.bin": "binary (not UTF-8 text)"},
        deleted=["notes.md"],
    )
    kept, refused = keep_files(space, done)
    assert kept == ["app.py", "work/S1/log"]
    assert space.written == {"app.py": "x = 2\n", "work/S1/log": "ok\n"}
    assert set(refused) == {"other.py", "work/../../x", "data.bin", "notes.md"}
    assert refused["other.py"].startswith("this step may write only app.py, work/S1/*")
    assert "climbs out" in refused["work/../../x"]


def test_the_model_reads_the_exit_code_the_output_and_the_fate_of_each_file():
    text = result_text(result(stderr="warning\n"), ["app.py"], {"b.py": "outside"})
    assert text.splitlines() == [
        "exit code 0 [sandbox: kernel]",
        "--- stdout ---",
        "1 passed",
        "--- stderr ---",
        "warning",
        "files kept: app.py",
        "files not kept: b.py (outside)",
    ]


def test_a_killed_command_says_which_limit_and_that_nothing_came_back():
    killed = result(returncode=-9, killed_reason="timeout", stdout="", reported=False)
    text = result_text(killed, [], {})
    assert text.startswith("killed (timeout) after 1.0 s")
    assert "no file was kept" in text


@pytest.fixture
def sandbox_works(monkeypatch):
    monkeypatch.setattr(command, "isolation_level", lambda: "landlock")


def test_the_coder_gets_execute_by_default_and_other_roles_do_not(sandbox_works):
    registry = build_registry()
    context = Context(model="scripted:happy")
    assert [t.name for t in role_tools(registry["coder"], context)] == [EXECUTE]
    assert role_tools(registry["writer"], context) == []


def test_execute_roles_chooses_the_roles_and_a_roles_own_execute_wins(sandbox_works):
    own = command.execute_tool(timeout_s=5)
    registry = build_registry(tools={"writer": [own]})
    context = Context(model="scripted:happy", execute_roles="writer, researcher")
    assert role_tools(registry["coder"], context) == []
    assert [t.name for t in role_tools(registry["researcher"], context)] == [EXECUTE]
    assert role_tools(registry["writer"], context) == [own]


def test_without_a_kernel_sandbox_or_the_opt_in_no_role_gets_execute(monkeypatch):
    from agent.sandbox import SandboxUnavailable

    def unavailable():
        raise SandboxUnavailable("no kernel-enforced sandbox works on this machine")

    monkeypatch.setattr(command, "isolation_level", unavailable)
    assert role_tools(build_registry()["coder"], Context(model="scripted:happy")) == []


def test_an_execute_timeout_must_be_positive():
    problems = Context(model="scripted:happy", execute_timeout_s=0).validate()
    assert any(p.startswith("execute_timeout_s must be positive") for p in problems)


def call_execute(line: str) -> tuple[str, bool, str | None]:
    import asyncio

    from agent.tools.filesystem import run_tool_call

    call = {"name": EXECUTE, "args": {"command": line}, "id": "c1"}
    outcome = asyncio.run(run_tool_call(call, {EXECUTE: command.execute_tool()}, workspace()))
    return outcome.text, outcome.ok, outcome.error_class


def test_a_refused_line_is_an_invalid_input_tool_error():
    text, ok, error_class = call_execute("rm -rf /")
    assert (ok, error_class) == (False, "invalid_input")
    assert "'rm' cannot run" in text


def test_without_a_sandbox_a_call_is_denied_not_run(monkeypatch):
    from agent.sandbox import SandboxUnavailable, commands

    def unavailable(*args, **kwargs):
        raise SandboxUnavailable("generated code was not run: no kernel-enforced sandbox")

    monkeypatch.setattr(commands, "run_jobs", unavailable)
    text, ok, error_class = call_execute("pytest -q")
    assert (ok, error_class) == (False, "permission_denied")
    assert "no kernel-enforced sandbox" in text


def test_the_model_reads_which_folder_files_the_command_was_not_given(tmp_path):
    from agent.vfs.folder import MAX_FILE_BYTES, Folder

    (tmp_path / "logo.png").write_bytes(bytes(range(256)))
    (tmp_path / "big.csv").write_text("x" * (MAX_FILE_BYTES + 1))
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "held.bin").write_bytes(b"\x00\x01")
    space = Workspace({"held.bin": "now text\n"}, writable=["app.py"], folder=Folder.open(tmp_path))
    omitted: dict[str, str] = {}
    files = space.sandbox_files(omitted)
    assert set(files) == {"app.py", "held.bin"}  # the thread's text over the folder's binary
    assert set(omitted) == {"logo.png", "big.csv"}
    assert "binary" in omitted["logo.png"] and "bytes; the limit is" in omitted["big.csv"]
    text = result_text(result(), [], {}, omitted)
    line = text.splitlines()[-1]
    assert line.startswith("folder files the command was not given: ")
    assert "'big.csv' is" in line and "'logo.png' is a binary file" in line
    assert result_text(result(), [], {}, {}) == result_text(result(), [], {})
