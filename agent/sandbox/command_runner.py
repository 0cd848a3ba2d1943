"""The program of an ``execute`` run: a command line's commands, one forked child each, then
the files they left, reported on ``DEEPREFLECT_REPORT_FD``.

The host parsed the line (:mod:`agent.sandbox.commands`) into steps ``[operator, argv, env]``:
``argv`` is what follows the interpreter (``-m pytest -q``, ``-c code``, a script) or
``["cd", folder]``; the operator (``;``, ``&&``, ``||``) says whether the step runs after the
one before. The sandbox starts no program (the kernel rules grant ``EXECUTE`` nowhere), so
each command runs as ``python <argv>`` would, in a child forked from this confined process: it
inherits the kernel rules, the audit hook and the limits. Only this process writes the
report (a child closes the descriptor first): the exit status of each step, then every file
of the folder that is new or changed, as text, bounded in number and size; a binary, too
large or symlinked file is named with the reason it did not come back, and so is an input
file the commands deleted. Standard library only: this file runs inside the sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import sys
import traceback
from typing import Any

SKIPPED_FOLDERS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def run_in_child(argv: list[str], env: dict[str, str], report_fd: int) -> int:
    """Fork, run ``python <argv>`` in the child, return its exit status (negative: signal)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as exc:
        sys.stderr.write(f"execute: could not start the command: {exc}\n")
        return 126
    if pid == 0:
        os.close(report_fd)
        os.environ.update(env)
        os._exit(_run(argv))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _run(argv: list[str]) -> int:
    """``python <argv>`` in this (child) process; its exit code."""
    code: Any = 0
    try:
        if argv[:1] == ["-m"] and len(argv) > 1:
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[:1] == ["-c"] and len(argv) > 1:
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = os.getcwd()
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    return code & 0xFF


def run_steps(steps: list[list[Any]], root: str, report_fd: int) -> list[list[Any]]:
    """Each step whose operator lets it run; ``[argv, status]`` of each step that ran."""
    statuses: list[list[Any]] = []
    status = 0
    for operator, argv, env in steps:
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            continue
        if argv[:1] == ["cd"]:
            status = _cd(argv[1] if len(argv) > 1 else ".", root)
        else:
            status = run_in_child(argv, env, report_fd)
        statuses.append([argv[:3], status])
    return statuses


def _cd(folder: str, root: str) -> int:
    target = os.path.realpath(folder)
    if not (target == root or target.startswith(root.rstrip("/") + "/")):
        sys.stderr.write(f"cd: {folder}: outside the thread's files\n")
        return 1
    try:
        os.chdir(target)
    except OSError as exc:
        sys.stderr.write(f"cd: {folder}: {exc.strerror}\n")
        return 1
    return 0


def changed_files(root: str, given: dict[str, str], limits: dict[str, int]) -> dict[str, Any]:
    """The folder's new and changed files as text (within ``limits``), and why others are
    not among them."""
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    seen: set[str] = set()
    total = 0
    for parent, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(names):
            full = os.path.join(parent, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            seen.add(rel)
            why = _unread(full, rel, given, files, total, limits)
            if why is None:
                with open(full, "rb") as handle:
                    data = handle.read()
                if given.get(rel) == hashlib.sha256(data).hexdigest():
                    continue
                try:
                    files[rel] = data.decode("utf-8")
                    total += len(data)
                    continue
                except UnicodeDecodeError:
                    why = "binary (not UTF-8 text)"
            if why:
                skipped[rel] = why
    deleted = sorted(p for p in given if p not in seen)
    return {"files": files, "skipped": skipped, "deleted": deleted}


def _unread(
    full: str, rel: str, given: dict[str, str], files: dict[str, str], total: int, limits: dict
) -> str | None:
    """Why a file is not read back, or None to read it."""
    try:
        info = os.lstat(full)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if os.path.islink(full):
        return "a symlink"
    if not os.path.isfile(full):
        return "not a regular file"
    if info.st_size > limits["file_bytes"]:
        return f"{info.st_size} bytes; the limit is {limits['file_bytes']}"
    if rel not in given and len(files) >= limits["files"]:
        return f"more than {limits['files']} files were written"
    if total + info.st_size > limits["total_bytes"]:
        return f"the files written exceed {limits['total_bytes']} bytes in all"
    return None


def main() -> None:
    config = json.loads(sys.argv[1])
    report_fd = int(os.environ.pop("DEEPREFLECT_REPORT_FD"))
    root = os.path.realpath(os.getcwd())
    for folder in config.get("folders", []):
        target = os.path.realpath(folder)
        if target.startswith(root + "/"):
            os.makedirs(target, exist_ok=True)
    statuses = run_steps(config["steps"], root, report_fd)
    report = {"statuses": statuses, **changed_files(root, config["given"], config["limits"])}
    with os.fdopen(report_fd, "w", encoding="utf-8") as out:
        json.dump(report, out)
    sys.stdout.flush()
    sys.stderr.flush()
    last = statuses[-1][1] if statuses else 0
    os._exit(last & 0xFF if last >= 0 else 128 - last)


if __name__ == "__main__":
    main()
