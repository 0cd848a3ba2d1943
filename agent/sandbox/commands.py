"""Run a command line (``pytest -q``, ``python -m app && python check.py``) in the sandbox on
a set of files, and get back what it printed and the files it wrote.

The sandbox starts no program, the shell included (the kernel rules grant ``EXECUTE``
nowhere, which is what keeps a kernel exploit's toolbox out), so a line is read here, not by
a shell: ``python``/``python3`` with their arguments, ``pytest``, ``cd DIR``, ``NAME=value``
prefixes, joined by ``&&``, ``||`` or ``;``. Each command then runs as a child of one
sandboxed interpreter (:mod:`agent.sandbox.command_runner`), under the run's limits. Quoting
follows the shell's (``shlex``); nothing is expanded (no ``$VAR``, no globs); pipes,
redirections and background jobs are refused with a message saying what runs.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.sandbox.host import run_jobs
from agent.sandbox.isolation import IsolationLevel
from agent.sandbox.job import Job
from agent.sandbox.programs import program

__all__ = ["CommandRefused", "CommandResult", "parse_command", "run_command"]

OPERATORS = ("&&", "||", ";")
MAX_COMMAND_CHARS = 10_000
MAX_STEPS = 20
RETURNED_FILES = 200
RETURNED_FILE_BYTES = 1_000_000
RETURNED_BYTES = 5_000_000
_PYTHON = re.compile(r"python(3(\.\d+)?)?")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_PUNCTUATION = "&|;<>()"
_RUNS = "python, python3, pytest and cd, joined by &&, || or ;"


class CommandRefused(ValueError):
    """A command line that cannot run in the sandbox; the message says what can."""


@dataclass(frozen=True)
class CommandResult:
    """What a command line did in the sandbox."""

    returncode: int | None
    """The last command's exit code (negative: a signal); None if it could not be reaped."""
    stdout: str
    stderr: str
    killed_reason: str | None
    """A limit that ended the run (``timeout``, ``memory``, ``disk``, ``output``, ``cpu``,
    ``killed``); then no file comes back."""
    isolation: IsolationLevel
    duration_s: float
    files: dict[str, str] = field(default_factory=dict)
    """New and changed files, as text."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Files that did not come back, with the reason (binary, too large, a symlink)."""
    deleted: list[str] = field(default_factory=list)
    """Given files the commands removed."""
    reported: bool = True
    """The runner reported the files; False when the run was killed or broke its report
    (then none came back)."""


def parse_command(line: str) -> list[list[Any]]:
    """The steps of a command line as the runner takes them: ``[operator, argv, env]``.

    Raises:
        CommandRefused: empty, too long, a program other than python or pytest, a pipe or
            redirection, or an operator with nothing on one side.
    """
    if not isinstance(line, str) or not line.strip():
        raise CommandRefused("the command is empty")
    if len(line) > MAX_COMMAND_CHARS:
        msg = f"the command is {len(line)} characters long; the limit is {MAX_COMMAND_CHARS}"
        raise CommandRefused(msg)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise CommandRefused(f"the command does not parse: {exc}") from exc
    steps: list[list[Any]] = []
    words: list[str] = []
    operator = ";"
    for token in tokens:
        if token in OPERATORS:
            if not words:
                raise CommandRefused(f"{token!r} has no command before it")
            steps.append([operator, *_command(words)])
            words, operator = [], token
        elif set(token) <= set(_PUNCTUATION):
            msg = f"{token!r} is not supported: the sandbox runs {_RUNS}, with no shell"
            raise CommandRefused(msg)
        else:
            words.append(token)
    if words:
        steps.append([operator, *_command(words)])
    elif operator != ";":
        raise CommandRefused(f"{operator!r} has no command after it")
    if len(steps) > MAX_STEPS:
        raise CommandRefused(f"the command has {len(steps)} parts; the limit is {MAX_STEPS}")
    return steps


def _command(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """One simple command: its interpreter arguments and its ``NAME=value`` prefixes."""
    env: dict[str, str] = {}
    while words and _ASSIGNMENT.fullmatch(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if not words:
        raise CommandRefused("a command sets variables but runs nothing")
    name, rest = words[0], words[1:]
    if name == "cd":
        if len(rest) > 1:
            raise CommandRefused("cd takes one folder")
        return ["cd", *rest], env
    if name in ("pytest", "py.test"):
        return ["-m", "pytest", *rest], env
    if _PYTHON.fullmatch(name):
        while rest and rest[0] in ("-u", "-B", "-E", "-s", "-S", "-I", "-O", "-OO", "-q"):
            rest = rest[1:]  # the sandbox's interpreter has its own flags already
        if not rest:
            raise CommandRefused("python needs a script, -m module or -c code (no REPL here)")
        if rest[0] in ("-m", "-c") and len(rest) < 2:
            raise CommandRefused(f"python {rest[0]} needs an argument")
        if rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            raise CommandRefused(f"python option {rest[0]!r} is not supported here")
        return rest, env
    msg = f"{name!r} cannot run: the sandbox runs {_RUNS} (it starts no other program)"
    raise CommandRefused(msg)


def run_command(
    files: Mapping[str, str],
    line: str,
    *,
    timeout_s: float = 60.0,
    memory_mb: int = 1024,
    max_output: int = 4000,
    folders: Sequence[str] = (),
    wall_s: float | None = None,
) -> CommandResult:
    """Run ``line`` on ``files`` in the sandbox; ``folders`` (relative) exist before it runs,
    empty if no file is in them (a step's scratch folder). ``timeout_s`` and ``wall_s`` are
    the run's time limits (:func:`agent.sandbox.run_jobs`).

    Raises:
        CommandRefused: the line cannot run here (:func:`parse_command`).
        SandboxUnavailable: no kernel-enforced sandbox and no opt-in to ``process``.
        ValueError: a file path would land outside the sandbox folder.
    """
    steps = parse_command(line)
    given = {p: _sha256(text) for p, text in files.items()}
    config = {
        "steps": steps,
        "given": given,
        "folders": list(folders),
        "limits": {
            "files": RETURNED_FILES,
            "file_bytes": RETURNED_FILE_BYTES,
            "total_bytes": RETURNED_BYTES,
        },
    }
    argv = ["-c", program("command_runner.py"), json.dumps(config)]
    job = Job(files=files, argv=argv, max_output=max_output, report=True)
    result = run_jobs([job], timeout_s=timeout_s, memory_mb=memory_mb, wall_s=wall_s)[0]
    report = _report(result.report) if result.killed_reason is None else {}
    return CommandResult(
        returncode=result.returncode,
        stdout=result.stdout,
        stderr=result.stderr,
        killed_reason=result.killed_reason,
        reported=bool(report),
        isolation=result.isolation,
        duration_s=result.duration_s,
        files=_texts(report.get("files")),
        skipped=_texts(report.get("skipped")),
        deleted=[p for p in report.get("deleted") or [] if isinstance(p, str)],
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _report(text: str) -> dict[str, Any]:
    """The runner's report; {} when there is none or it does not parse (then no file comes
    back: the report is the only way they do)."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _texts(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
