"""SQLite bytes per run as files grow: ``files`` as a DeltaChannel against a plain dict channel.

    python bench/storage.py [--steps 30] [--size 10000]

A plain reducer channel re-serialises the whole filesystem into every checkpoint, so its
storage grows with steps x files; the DeltaChannel stores each file once, in the write that
produced it.
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any

from common import CONTEXT, END, chain, report, roles, sqlite_graph, stored_bytes

from agent import run
from agent.state import State
from agent.vfs import merge_files


def _plain_files(current: dict, update: dict) -> dict:
    return merge_files(current or {}, [update])


class PlainFilesState(State):
    """The baseline: the same state with ``files`` as an ordinary reducer channel."""

    files: Annotated[dict[str, Any], _plain_files]


def measure(steps: int, size: int, state_schema: type) -> int:
    graph, conn = sqlite_graph(roles(chain(steps), size, [END]), state_schema=state_schema)
    result = run(graph, "write the parts", context=CONTEXT, thread_id="bench")
    assert result["status"] == "success", result
    return stored_bytes(conn)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    rows = []
    for steps in sorted({args.steps // 3, args.steps * 2 // 3, args.steps}):
        delta = measure(steps, args.size, State)
        plain = measure(steps, args.size, PlainFilesState)
        content = steps * args.size
        rows.append(
            [
                steps,
                f"{content:,}",
                f"{delta:,}",
                f"{plain:,}",
                f"{delta / content:.1f}x",
                f"{plain / delta:.1f}x",
            ]
        )
    report(
        f"SQLite bytes per run, {args.size:,}-byte files",
        rows,
        ["files", "content B", "deepreflect B", "plain dict B", "ours/content", "plain/ours"],
    )


if __name__ == "__main__":
    main()
