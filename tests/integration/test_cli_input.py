"""Bad input to the CLI and the runner: a clear error, never a traceback, nothing lost.

Text that looks like rich markup, damaged or unreachable databases, read-only files, and
PostgreSQL passwords full of URL-special characters.
"""

from __future__ import annotations

import ctypes
import io
import os
import random
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from rich.console import Console

from agent.cli import main
from agent.graph.result import build_result
from agent.runs.progress import Progress, print_result
from agent.store.pg_url import pg_conninfo, redact, scrub, split_pg_url
from tests.fakes import ROOT

pytest_plugins = ["tests.postgres"]

HOSTILE = [
    "[/bold] x",
    "[/x]",
    "[link=https://example.com]y[/link]",
    "[bold red]boom[/] :warning: \\",
]


def row(thread_id: str, status: str, goal: str) -> str:
    """The regex of a ``deepreflect threads`` line: id, created, updated, status, goal."""
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    return rf"^{re.escape(thread_id)} +{when}  {when}  {status} +{re.escape(goal)}$"


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # tables fit on one line, so lines can be compared
    monkeypatch.delenv("DEEPREFLECT_DB", raising=False)


# ------------------------------------------------------------------------ rich markup


@pytest.mark.parametrize("text", HOSTILE)
def test_markup_in_a_goal_thread_id_and_answer_prints_literally_and_every_command_works(
    text, tmp_path, capsys
):
    db = str(tmp_path / "t.sqlite")
    assert main(["run", text, "--model", "scripted:escalation", "--thread", text, "--db", db]) == 3
    out = capsys.readouterr().out
    assert f"goal: {text}\n" in out and f"thread {text} in {db}" in out
    assert f'answer with: deepreflect resume {text} "<answer>"' in out

    assert main(["threads", "--db", db]) == 0
    assert re.search(row(text, "awaiting_input", text), capsys.readouterr().out, re.M)
    assert main(["show", text, "--db", db]) == 0
    assert f"goal: {text}\n" in capsys.readouterr().out
    assert main(["resume", text, "--db", db]) == 3  # no answer: the same question again
    capsys.readouterr()
    assert main(["resume", text, text, "--db", db]) == 0
    assert f"success (end)  thread {text}" in capsys.readouterr().out
    assert main(["resume", text, text, "--db", db]) == 2  # now it asks nothing
    assert f"thread {text} is not waiting for an answer" in capsys.readouterr().err


@pytest.mark.parametrize("text", HOSTILE)
def test_markup_in_an_error_message_prints_literally(text, tmp_path, capsys):
    assert main(["show", text, "--db", str(tmp_path / "t.sqlite")]) == 2
    assert f"error: thread {text!r} not found in " in capsys.readouterr().err


def _everything(text: str) -> list[tuple[str, dict]]:
    """Node updates with ``text`` in every field the progress printer shows."""
    plan = {
        "version": text,
        "steps": [
            {
                "step_id": text,
                "action": text,
                "depends_on": [text],
                "expected_output": text,
                "done_when": {"kind": text},
            }
        ],
    }
    events = [
        {"action": "check", "step_id": text, "check": {"kind": text, "passed": False}},
        {"action": "write_file", "step_id": text, "actor": text, "params": {"path": text}},
        {"action": "result", "step_id": text, "passed": True, "rounds": text, "stop_reason": text},
        {"action": "error", "step_id": text, "observation": text},
    ]
    events[0]["observation"] = text
    decision = {"decision": text, "by": text, "reason": text, "depth": text, "forced": True}
    return [
        ("planner", {"plan": plan, "dispatch": [text, text], "step": text}),
        ("planner", {"status": "failed", "decisions": [{"reason": text}]}),
        ("subagent", {"trajectory": events}),
        ("reflection", {"decisions": [decision]}),
        ("escalate", {"messages": [text]}),
    ]


def _printed(text: str, *, terminal: bool) -> str:
    sink = io.StringIO()
    console = Console(file=sink, width=400, force_terminal=terminal, highlight=False)
    progress = Progress(console)
    for node, update in _everything(text):
        progress(node, update)
    state = {
        "status": "awaiting_input",
        "stop_reason": text,
        "plan": {"version": 1, "steps": [{"step_id": text, "expected_output": text}]},
        "files": {text: {"status": text, "bytes": 3}},
        "escalation": {"question": text, "suggested_responses": [text]},
    }
    print_result(console, build_result(state, text))
    print_result(console, {**build_result(state, text), "status": "success", "final_answer": text})
    return sink.getvalue()


@pytest.mark.parametrize("text", HOSTILE)
def test_progress_prints_evidence_paths_reasons_and_questions_as_plain_text(text):
    out = _printed(text, terminal=False)
    for expected in (
        f"plan v{text}",
        f"round {text}: running {text}, {text} in parallel",
        f"rejected: {text}",
        f"  {text} check {text}: fail — {text}",
        f"  {text} {text} write_file {text}",
        f"  {text} done after {text} revision(s) ({text})",
        f"  {text} error {text}",
        f"reflection → {text} (forced) by model: {text}  depth {text}",
        "answered: the planner takes the answer in",
        f"{text:>7} {text} (3 bytes)",
        f"awaiting_input ({text})  thread {text}",
        f"question: {text}",
        f"  - {text}",
        f'answer with: deepreflect resume {text} "<answer>"',
    ):
        assert expected in out, expected
    assert "\n" + text + "\n" in out  # the final answer


def test_a_markup_link_never_becomes_a_terminal_hyperlink():
    out = _printed("[link=https://evil.example]click[/link]", terminal=True)
    assert "\x1b]8;" not in out  # OSC 8, the terminal's hyperlink sequence
    assert "[link=https://evil.example]click[/link]" in out


def test_terminal_control_codes_in_model_text_are_never_sent():
    out = _printed("\x1b]0;pwned\x07\x1b[2Jrest", terminal=False)
    assert "\x1b" not in out and "\x07" not in out
    assert "rest" in out  # the text around the codes is kept, the codes are dropped


# --------------------------------------------------------------- damaged databases


@pytest.fixture(scope="module")
def good_db(tmp_path_factory) -> Path:
    """A real threads file with one finished thread (``t``)."""
    db = tmp_path_factory.mktemp("good") / "threads.sqlite"
    assert (
        main(["run", "a goal", "--model", "scripted:happy", "--thread", "t", "--db", str(db)]) == 0
    )
    return db


def _damaged(kind: str, good: Path, tmp_path: Path) -> tuple[Path, str]:
    """A ``--db`` path with damage of ``kind``, and the words the error must use."""
    db = tmp_path / "threads.sqlite"
    if kind == "truncated":
        db.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return db, "it is truncated"
    if kind == "corrupt":  # the schema page overwritten: every statement fails
        data = bytearray(good.read_bytes())
        data[100:4000] = random.Random(1).randbytes(3900)
        db.write_bytes(bytes(data))
        return db, "it is damaged (truncated or corrupt)"
    if kind == "garbage":
        db.write_bytes(random.Random(2).randbytes(10_000))
        return db, "it is not a SQLite database"
    if kind == "directory":
        db.mkdir()
        return db, "is a directory, not a file"
    (tmp_path / "a-file").write_text("not a folder")
    return tmp_path / "a-file" / "sub" / "threads.sqlite", "cannot create the folder"


DAMAGE = ["truncated", "corrupt", "garbage", "directory", "uncreatable"]
COMMANDS = {
    "threads": ["threads"],
    "show": ["show", "t"],
    "resume": ["resume", "t", "an answer"],
    "run": ["run", "a goal", "--model", "scripted:happy", "--thread", "t"],
    "demo": ["demo", "--scenario", "happy"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_database_is_a_usage_error_naming_the_file_and_not_a_dead_run(
    kind, command, good_db, tmp_path, capsys
):
    db, words = _damaged(kind, good_db, tmp_path)
    if kind == "uncreatable" and command in ("threads", "show"):
        words = "there is no threads database at"  # a reader creates nothing, so tries nothing
        assert main([*COMMANDS[command], "--db", str(db)]) == (0 if command == "threads" else 2)
        assert not db.parent.exists()
        return
    assert main([*COMMANDS[command], "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert str(db) in err and words in err
    assert "run stopped" not in err and "continues it" not in err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_damage_found_only_while_listing_is_a_usage_error_too(good_db, tmp_path, capsys):
    db = tmp_path / "threads.sqlite"
    data = bytearray(good_db.read_bytes())
    middle = len(data) // 2
    data[middle:] = random.Random(3).randbytes(len(data) - middle)  # same size: header intact
    db.write_bytes(bytes(data))
    assert main(["threads", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"the threads database {db} is unusable: it is damaged" in err
    assert "continues it" not in err


def test_threads_lists_the_newest_first_on_either_backend(threads_db, capsys):
    for thread_id in ("first", "second", "third"):
        run = ["run", "a goal", "--model", "scripted:happy", "--thread", thread_id]
        assert main([*run, "--json", "--db", threads_db]) == 0
    capsys.readouterr()
    assert main(["threads", "--db", threads_db]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["thread", "created", "updated", "status", "goal"]
    assert [line.split()[0] for line in rows] == ["third", "second", "first"]


def _undecodable(good: Path, tmp_path: Path) -> Path:
    """A copy of ``good`` plus a thread ``bad`` whose checkpoints cannot be decoded."""
    db = tmp_path / "threads.sqlite"
    shutil.copy(good, db)
    assert main(["run", "b", "--model", "scripted:happy", "--thread", "bad", "--db", str(db)]) == 0
    with sqlite3.connect(str(db)) as conn:
        conn.execute("UPDATE checkpoints SET checkpoint = x'c1ffee' WHERE thread_id = 'bad'")
    return db


def test_a_thread_that_cannot_be_decoded_is_listed_as_unreadable_beside_the_others(
    good_db, tmp_path, capsys
):
    db = _undecodable(good_db, tmp_path)
    capsys.readouterr()
    assert main(["threads", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^bad .* unreadable +ValueError", out, re.M)
    assert re.search(row("t", "success", "a goal"), out, re.M)


@pytest.mark.parametrize("command", [["show", "bad"], ["resume", "bad"], ["resume", "bad", "x"]])
def test_show_or_resume_of_a_thread_that_cannot_be_decoded_is_a_usage_error(
    command, good_db, tmp_path, capsys
):
    db = _undecodable(good_db, tmp_path)
    capsys.readouterr()
    assert main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"error: thread 'bad' in {db} cannot be read: ValueError" in err
    assert "continues it" not in err


# ------------------------------------------------------------- read-only databases


def _obey_file_permissions() -> None:
    """In the child, as root: give up overriding file permissions, as other users must."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _unprivileged_cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    """The CLI in a process that file permissions bind (root ignores them otherwise)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "400", "PYTHONPATH": ROOT},
        cwd=ROOT,
        timeout=120,
        preexec_fn=_obey_file_permissions if os.geteuid() == 0 else None,
    )


@pytest.fixture
def read_only(good_db, tmp_path):
    """Make a copy of the good database read-only (``"file"``, or file and ``"folder"``)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "threads.sqlite"
    shutil.copy(good_db, db)
    made: list[Path] = []

    def make(what: str) -> Path:
        db.chmod(0o444)
        made.append(db)
        if what == "folder":
            folder.chmod(0o555)
            made.append(folder)
        return db

    if os.geteuid() == 0:
        try:
            _unprivileged_cli("threads", db=tmp_path / "probe.sqlite")
        except subprocess.SubprocessError as exc:  # prctl refused in the child
            pytest.skip(f"cannot drop root's file-permission override here: {exc}")
    yield make
    for path in made:
        path.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_database_can_still_be_listed_and_shown_but_not_written(
    what, read_only, good_db
):
    db = read_only(what)
    listed = _unprivileged_cli("threads", db=db)
    assert listed.returncode == 0, listed.stderr
    assert re.search(row("t", "success", "a goal"), listed.stdout, re.M)
    shown = _unprivileged_cli("show", "t", "--json", db=db)
    assert shown.returncode == 0, shown.stderr
    assert '"status": "success"' in shown.stdout
    written = _unprivileged_cli("run", "more", "--model", "scripted:happy", "--thread", "t", db=db)
    assert written.returncode == 2
    assert f"the threads database {db} is read-only" in written.stderr
    assert "threads and show can still read it" in written.stderr
    assert db.read_bytes() == good_db.read_bytes()  # nothing was written


# ------------------------------------------------------------- PostgreSQL passwords

PASSWORDS = ["50%off", "s%25cret", "Zq9@Xw7/Kp%3", "pa ss#wo?rd", "sec:ret@x"]


def _secrets(password: str) -> list[str]:
    """The password in each form an error could show, and its pieces between special chars."""
    pieces = [p for p in re.split(r"[%@/:?# ]", password) if len(p) >= 3]
    return [password, unquote(password), quote(password, safe=""), *pieces]


@pytest.mark.parametrize("password", PASSWORDS)
def test_an_unreachable_server_never_shows_a_password_with_special_characters(password, capsys):
    pytest.importorskip("psycopg")
    url = f"postgresql://bob:{password}@127.0.0.1:1/deepreflect"
    assert main(["threads", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "cannot use PostgreSQL at postgresql://bob:***@127.0.0.1:1/deepreflect: " in err
    assert "127.0.0.1" in err.split(": ", 2)[-1]  # psycopg's own words: the host it tried
    for secret in _secrets(password):
        assert secret not in err, secret


def test_a_password_in_the_query_string_is_hidden_too(capsys):
    pytest.importorskip("psycopg")
    url = "postgresql://bob@127.0.0.1:1/deepreflect?password=50%off&sslmode=disable"
    assert main(["threads", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "postgresql://bob@127.0.0.1:1/deepreflect?password=***&sslmode=disable" in err
    assert "50%off" not in err and "50%25off" not in err


@pytest.mark.parametrize("password", PASSWORDS)
def test_psycopg_echoing_the_url_or_the_password_never_reaches_the_message(
    password, capsys, monkeypatch
):
    pytest.importorskip("langgraph.checkpoint.postgres")
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    url = f"postgresql://bob:{password}@db.example:5432/deepreflect"

    def refuse(conninfo: str):
        msg = f'bad dsn "{url}" (as sent: "{conninfo}", password={unquote(password)})'
        raise psycopg.OperationalError(msg)

    monkeypatch.setattr(PostgresSaver, "from_conn_string", refuse)
    assert main(["resume", "t", "x", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "postgresql://bob:***@db.example:5432/deepreflect" in err
    for secret in _secrets(password):
        assert secret not in err, secret


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_with_special_characters_reaches_the_server_intact(password):
    pytest.importorskip("psycopg")
    from psycopg.conninfo import conninfo_to_dict

    url = f"postgresql://bob:{password}@db.example:5432/deepreflect?sslmode=disable"
    sent = conninfo_to_dict(pg_conninfo(url))
    assert sent["password"] == unquote(password)
    assert (sent["user"], sent["host"], sent["port"], sent["dbname"]) == (
        "bob",
        "db.example",
        "5432",
        "deepreflect",
    )
    assert redact(url) == "postgresql://bob:***@db.example:5432/deepreflect?sslmode=disable"
    assert scrub(f"x {password} y {unquote(password)}", url) == "x *** y ***"


def test_a_well_formed_url_is_split_where_rfc_3986_says():
    url = "postgresql://bob:pw@h1,h2:5433/db?application_name=me@laptop"
    assert split_pg_url(url) == (
        "postgresql://",
        "bob:pw",
        "h1,h2:5433/db?application_name=me@laptop",
    )
    assert pg_conninfo(url) == url
    assert split_pg_url("postgresql://h:5432/db") == ("postgresql://", None, "h:5432/db")


def test_a_run_on_postgres_prints_where_its_thread_lives_without_the_password(postgres_url, capsys):
    pytest.importorskip("langgraph.checkpoint.postgres")
    from tests.postgres import fresh_database

    # the test server trusts local connections, so any password is accepted and ignored
    url = fresh_database(postgres_url).replace("postgres@", "postgres:s3cr%et@", 1)
    assert main(["demo", "--scenario", "happy", "--db", url]) == 0
    out = capsys.readouterr().out
    assert f" in {url.replace(':s3cr%et@', ':***@')}" in out
    assert "s3cr" not in out
