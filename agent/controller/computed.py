"""Data artifacts computed by a program the model writes, not typed out by the model.

Asked for ``inventory.json`` with its items sorted by sku and a ``total_value`` summed from
the goal's stock list, the 1.5B typed the JSON itself: the keys were right, the items stayed
in the goal's order and the total was wrong; the file parsed, so no floor check could tell
(issue 22's false success). Asked instead for a program printing the file, it wrote
``items.sort(key=...)`` and ``sum(q * p ...)``: code gets orderings and arithmetic right
where a small model's own arithmetic does not. So a step writing a ``.json`` or ``.csv``
file when asked directly (:mod:`agent.controller.prompting`) is asked for that program; the
program runs in the sandbox (:mod:`agent.sandbox`) with the step's input files in its
folder; what it prints is the artifact, and the program is kept as the step's scratch file
(``work/<step>/<name>_<ext>.py``) so reflection, a human and export see how the values were
made. A program that fails is the draft's evidence: its error goes back as a blocking issue.
Where no sandbox can run code, the step is asked for the file itself, as before.
"""

from __future__ import annotations

import ast
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.sandbox import run_python
from agent.tools.text_calls import fenced_file
from agent.vfs.entries import scratch_prefix

__all__ = [
    "COMPUTED_SUFFIXES",
    "MAX_OUTPUT_CHARS",
    "PRELUDE",
    "ProgramRun",
    "Reply",
    "as_file",
    "is_computed",
    "program_in",
    "program_path",
    "read_reply",
    "run_program",
]

COMPUTED_SUFFIXES = frozenset({".json", ".csv"})
MAX_OUTPUT_CHARS = 200_000
"""What a program may print: more is refused (kept whole, not truncated into a broken file)."""
PRELUDE = "import csv, json, math, statistics"
"""Imported before the program: both programs the 1.5B wrote for inventory.json called
``json.dumps`` without importing ``json`` (the prompt tells the model they are imported)."""
PROGRAM_NAME = "deepreflect_compute.py"
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProgramRun:
    """What a program did: the file it printed, or why there is none."""

    ok: bool
    output: str = ""
    error: str = ""


def is_computed(path: str) -> bool:
    """Whether the artifact at ``path`` is data a program should print (module docstring)."""
    return _suffix(path) in COMPUTED_SUFFIXES


def _suffix(path: str) -> str:
    return posixpath.splitext(path)[1].lower()


def program_path(step_id: str, path: str) -> str:
    """Where the program printing ``path`` is kept: the step's scratch space."""
    return scratch_prefix(step_id) + posixpath.basename(path).replace(".", "_") + ".py"


def as_file(output: str, path: str) -> str:
    """What a program printed, as the file at ``path``: a ``.json`` file printed as a Python
    value (``print(settings)`` gives ``{'region': 'eu-north-1'}``, which the 1.5B did three
    times, told each time it was not JSON) becomes that value as JSON; anything else is kept
    as printed, for the check to judge."""
    if _suffix(path) != ".json":
        return output
    try:
        json.loads(output)
        return output
    except ValueError:
        pass
    try:
        value = ast.literal_eval(output.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return output
    if not isinstance(value, (dict, list)):
        return output
    try:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    except (TypeError, ValueError):  # a set, bytes, a non-string key: not JSON, kept as printed
        return output


def program_in(reply: str) -> str | None:
    """The program in a reply: its one ``python`` (or untagged) fence, else None."""
    return fenced_file(reply, PROGRAM_NAME)


def read_reply(text: str, calls: Sequence[Mapping[str, Any]], path: str) -> Reply | None:
    """What a reply asked for a program holds: the program, else the file itself (a fence of
    its language, or a ``write_file`` of ``path``: taken as it is), else None."""
    if (program := program_in(text)) is not None:
        return Reply(program=program)
    typed = fenced_file(text, path) or _written(calls, path)
    return Reply(file=typed) if typed is not None else None


@dataclass(frozen=True)
class Reply:
    """A reply asked for a program: the program to run, or the file the model typed."""

    program: str | None = None
    file: str | None = None


def _written(calls: Sequence[Mapping[str, Any]], path: str) -> str | None:
    """The content a reply's ``write_file`` call gives ``path``, if it makes one."""
    for call in calls:
        args = call.get("args") or {}
        if call.get("name") == "write_file" and args.get("path") == path:
            content = args.get("content")
            return content if isinstance(content, str) and content.strip() else None
    return None


def run_program(program: str, inputs: Mapping[str, str]) -> ProgramRun:
    """Run ``program`` in the sandbox with ``inputs`` in its folder; its output is the file.

    Raises:
        SandboxUnavailable: no isolation level can run code here (the caller falls back).
    """
    files = {p: text for p, text in inputs.items() if p != PROGRAM_NAME}
    files[PROGRAM_NAME] = program
    # the prelude runs first, in the program's namespace; its line numbers stay its own
    launcher = f"{PRELUDE}\nexec(compile(open({PROGRAM_NAME!r}).read(), {PROGRAM_NAME!r}, 'exec'))"
    try:
        result = run_python(
            files, ["-c", launcher], timeout_s=TIMEOUT_S, max_output=MAX_OUTPUT_CHARS + 1
        )
    except (OSError, ValueError) as exc:
        return ProgramRun(False, error=f"the program could not start: {exc}")
    if result.killed_reason or result.timed_out:
        reason = result.killed_reason or "timeout"
        return ProgramRun(False, error=f"the program was killed ({reason}){_tail(result.stderr)}")
    if result.returncode != 0:
        return ProgramRun(
            False, error=f"the program exited with {result.returncode}{_tail(result.stderr)}"
        )
    if len(result.stdout) > MAX_OUTPUT_CHARS:
        return ProgramRun(False, error=f"the program printed over {MAX_OUTPUT_CHARS} characters")
    if not result.stdout.strip():
        return ProgramRun(False, error="the program printed nothing")
    return ProgramRun(True, output=result.stdout)


def _tail(stderr: str, keep: int = 600) -> str:
    """The end of the error output, where a traceback names what failed."""
    text = stderr.strip().replace(PROGRAM_NAME, "the program")
    own = text.find('File "the program"')  # the sandbox's own frames come first: drop them
    text = text[own:] if own >= 0 else text
    return f": {text[-keep:]}" if text else ""
