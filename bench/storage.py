"""Bytes stored per content byte as a run writes more files, and how they grow.

    python bench/storage.py [--files 10 30 60] [--size 10000] [--postgres]

A chain of N steps, each writing one ``size``-byte file, through ``agent.run`` on SQLite
(the CLI's threads file, sync durability). Figures per content byte (N x size):
- ``db file``: the main database file after ``PRAGMA wal_checkpoint(TRUNCATE)`` (everything
  SQLite keeps, page overhead included); the WAL size before that checkpoint is printed too;
- ``stock saver``: the same ``db file`` with a plain ``SqliteSaver`` (string channel
  versions), as a user passing their own to ``build_graph`` stores;
- ``blobs``: the bytes LangGraph wrote (checkpoint and metadata blobs, pending writes);
- the same ``blobs`` for a plain-dict ``files`` channel (the baseline that rewrites the whole
  filesystem into every checkpoint).
Growth from the smallest to the largest N, divided by the N ratio, is 1.0 for linear storage.
With ``--postgres`` (and the ``postgres`` extra, ``initdb`` on the machine) the same run on a
throw-away PostgreSQL server, as its database size grows.
Targets (issue 13): at most 2.0 bytes per content byte at 60 files, growth 30 -> 60 at
most 2.1x.
"""

from __future__ import annotations

import argparse
import dataclasses
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

from common import CONTEXT, END, chain, report, roles, sqlite_sizes
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import build_graph, run
from agent.state import State
from agent.store.sqlite_files import sqlite_saver
from agent.vfs.entries import merge_files

ROOT = Path(__file__).resolve().parent.parent
CTX = dataclasses.replace(CONTEXT, max_plan_steps=1000)


def _plain_files(current: dict, update: dict) -> dict:
    return merge_files(current or {}, [update])


class PlainFilesState(State):
    """The baseline: the same state with ``files`` as an ordinary reducer channel."""

    files: Annotated[dict[str, Any], _plain_files]


def sqlite_run(
    n: int, size: int, state_schema: type = State, *, stock: bool = False
) -> dict[str, int]:
    """One run of n files on a fresh SQLite file: its sizes. The file is opened as the CLI
    opens its threads file (``agent.store.sqlite_files``: integer channel versions), or
    with ``stock`` as a plain ``SqliteSaver`` a user may pass to ``build_graph``."""
    path = Path(tempfile.mkdtemp()) / "threads.sqlite"
    if stock:
        saver = SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))
        saver.setup()
    else:
        saver = sqlite_saver(path, write=True)
    conn = saver.conn
    graph = build_graph(
        models=roles(chain(n), size, [END]),
        checkpointer=saver,
        retry_policy=None,
        state_schema=state_schema,
    )
    result = run(graph, "write the parts", context=CTX, thread_id="bench")
    assert result["status"] == "success", result["stop_reason"]
    sizes = sqlite_sizes(conn, path)
    conn.close()
    return sizes


def postgres_run(n: int, size: int, url: str) -> int:
    """Bytes the PostgreSQL database grew by over one run of n files."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(url, autocommit=True) as conn:

        def db_size() -> int:
            conn.execute("CHECKPOINT")
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            return int(row[0]) if row else 0

        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        before = db_size()
        graph = build_graph(
            models=roles(chain(n), size, [END]), checkpointer=saver, retry_policy=None
        )
        result = run(graph, "write the parts", context=CTX, thread_id=f"bench-{n}")
        assert result["status"] == "success", result["stop_reason"]
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = 'public' AND c.relkind = 'r'"
        ).fetchone()
        tables = int(row[0]) if row else 0
        return max(tables, db_size() - before)


def _ratio(value: int, content: int) -> str:
    return f"{value / content:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[10, 30, 60])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    counts = sorted(args.files)
    rows, per_file = [], {}
    for n in counts:
        ours = sqlite_run(n, args.size)
        stock = sqlite_run(n, args.size, stock=True)
        plain = sqlite_run(n, args.size, PlainFilesState, stock=True)
        content = n * args.size
        per_file[n] = ours
        rows.append(
            [
                n,
                f"{content:,}",
                f"{ours['file']:,}",
                _ratio(ours["file"], content),
                _ratio(stock["file"], content),
                f"{ours['wal']:,}",
                _ratio(ours["blobs"], content),
                _ratio(plain["blobs"], content),
            ]
        )
    report(
        f"SQLite bytes per content byte, {args.size:,}-byte files",
        rows,
        [
            "files",
            "content B",
            "db file B",
            "file/content",
            "stock saver",
            "WAL B",
            "blobs/content",
            "plain",
        ],
    )
    small, large = counts[0], counts[-1]
    for key in ("file", "blobs"):
        growth = per_file[large][key] / per_file[small][key]
        print(
            f"{key}: {small} -> {large} files grows {growth:.2f}x for {large / small:.1f}x "
            f"the files ({growth / (large / small):.2f} of linear)"
        )
    if args.postgres:
        sys.path.insert(0, str(ROOT))
        from tests.postgres import LocalPostgres, find_bindir, fresh_database

        bindir = find_bindir()
        if bindir is None:
            print("\nPostgreSQL: no initdb/pg_ctl on this machine (apt-get install postgresql)")
            return
        server = LocalPostgres(bindir)
        try:
            url = server.start()
            pg_rows = []
            for n in counts:
                grew = postgres_run(n, args.size, fresh_database(url))
                pg_rows.append([n, f"{grew:,}", _ratio(grew, n * args.size)])
        finally:
            server.stop()
        report("PostgreSQL bytes per content byte", pg_rows, ["files", "tables B", "per content"])


if __name__ == "__main__":
    main()
