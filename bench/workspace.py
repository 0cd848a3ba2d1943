"""Checkpoint bytes for a folder read in place (``--workdir``) against the same folder
copied into the thread (``--file``), one run each with the same scripted step.

    python bench/workspace.py [--files 200 1000] [--size 1000]

A folder of N Python files of ``size`` bytes; one coder step greps it for a marker, reads the
file that holds it and edits that file in place, checked by a ``contains`` check. Printed per
N: the folder's bytes, the bytes LangGraph wrote (checkpoints, metadata, pending writes) and
the SQLite file for each way in, and their ratio. ``--file`` refuses more than 200 files
(``agent.vfs.user_files.MAX_USER_FILES``); to measure the copy beyond it, this process
raises that cap, and the table says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from common import CONTEXT, END, approve, report, sqlite_sizes
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import ScriptedChatModel, build_graph, run
from agent.models.scripted import tool_call
from agent.vfs import host_disk, origin, user_files
from agent.vfs.host_disk import load_files

MARKER = "FIX_ME"
CAP = user_files.MAX_USER_FILES


def make_folder(n: int, size: int) -> tuple[Path, str]:
    """N modules in 10 packages, each ``size`` bytes; the one holding the marker."""
    root = Path(tempfile.mkdtemp(prefix="deepreflect-workspace-"))
    target = ""
    for i in range(n):
        path = root / f"pkg{i % 10}" / f"mod_{i:05}.py"
        path.parent.mkdir(exist_ok=True)
        head = f"# module {i}\nVALUE_{i} = {i}\n"
        if i == n // 2:
            head += f"answer = 41  # {MARKER}\n"
            target = path.relative_to(root).as_posix()
        path.write_text(head + "#" * max(0, size - len(head) - 1) + "\n")
    return root, target


def coder(target: str):
    """grep for the marker, read the file it names, edit it: the same calls either way."""
    calls = [
        tool_call("grep", pattern=MARKER),
        tool_call("read_file", path=target),
        tool_call("edit_file", path=target, old=f"41  # {MARKER}", new="42  # FIXED"),
    ]

    def respond(messages: list[Any], metadata: dict[str, Any]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        return calls[done] if done < len(calls) else "fixed"

    return respond


def one_run(root: Path, target: str, *, in_place: bool) -> dict[str, int]:
    """One run on a fresh SQLite file: its sizes."""
    plan = [
        {
            "step_id": "S1",
            "depends_on": [],
            "action": "coder",
            "instructions": "Fix the marked value.",
            "expected_output": target,
            "done_when": {"kind": "contains", "all": ["42  # FIXED"]},
        }
    ]
    models = {
        "planner": ScriptedChatModel([{"steps": plan}]),
        "reflection": ScriptedChatModel([END]),
        "judge": ScriptedChatModel(responder=approve),
        "default": ScriptedChatModel(responder=coder(target)),
    }
    path = Path(tempfile.mkdtemp()) / "threads.sqlite"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    graph = build_graph(models=models, checkpointer=saver, retry_policy=None)
    if in_place:
        ctx = dataclasses.replace(CONTEXT, workspace=str(root))
        result = run(graph, "fix the marked value", context=ctx, thread_id="bench")
    else:
        files = load_files(["."], cwd=root)  # as `--file .` run in the folder
        result = run(graph, "fix the marked value", context=CONTEXT, thread_id="bench", files=files)
    assert result["status"] == "success", result
    sizes = sqlite_sizes(conn, path)
    conn.close()
    return sizes


def raise_file_cap(n: int) -> None:
    """Let ``--file`` take ``n`` files in this process (the CLI refuses more than CAP)."""
    for module in (user_files, origin, host_disk):
        module.MAX_USER_FILES = max(n, CAP)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--size", type=int, default=1000)
    args = parser.parse_args()
    rows = []
    for n in sorted(args.files):
        root, target = make_folder(n, args.size)
        content = sum(p.stat().st_size for p in root.rglob("*.py"))
        in_place = one_run(root, target, in_place=True)
        raise_file_cap(n)
        copied = one_run(root, target, in_place=False)
        note = "" if n <= CAP else f"cap {CAP} raised"
        rows.append(
            [
                n,
                f"{content:,}",
                f"{in_place['blobs']:,}",
                f"{copied['blobs']:,}",
                f"{copied['blobs'] / in_place['blobs']:.1f}x",
                f"{in_place['file']:,}",
                f"{copied['file']:,}",
                note,
            ]
        )
    report(
        "Checkpoint bytes: a folder read in place (--workdir) vs copied in (--file)",
        rows,
        [
            "files",
            "folder B",
            "in place",
            "copied",
            "copied/in place",
            "db in place",
            "db copied",
            "--file",
        ],
    )


if __name__ == "__main__":
    main()
