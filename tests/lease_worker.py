"""Resume a paused thread and stop mid-run, holding its lease, until told to go on.

    python -m tests.lease_worker DB THREAD_ID ANSWER

Used by tests/test_lease.py: after the first node update this process prints ``leased`` and
waits for a line on stdin, so a second writer certainly overlaps it (or the test kills it
there). Then it finishes the run and prints the Result as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agent import build_graph, open_checkpointer, resume


def main(db: str, thread_id: str, answer: str) -> None:
    waited = False

    def on_update(node: str, update: dict[str, Any]) -> None:
        nonlocal waited
        if not waited:
            waited = True
            print("leased", flush=True)
            sys.stdin.readline()

    with open_checkpointer(db) as saver:
        graph = build_graph(checkpointer=saver)
        result = resume(graph, thread_id, answer, on_update=on_update)
    print(json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
