"""Where a thread's stored bytes go: per table, per checkpoint part, per channel.

    python bench/storage_breakdown.py [--files 60] [--size 10000]
    python bench/storage_breakdown.py --db PATH --content BYTES   # a file already written

``bench/storage.py`` gives one figure per run; this says which part of it to cut. For a chain
of N steps writing one ``size``-byte file each (or an existing SQLite file), per content byte:
- the pages each table and index fills (SQLite's ``dbstat``, when it is compiled in), unused
  bytes apart: a 2.7 KB checkpoint row fills a 4 KB page alone;
- the parts of the checkpoint blobs (``channel_versions``, ``channel_values``,
  ``versions_seen``, ...) and their metadata;
- the pending writes per channel, their values and their key columns.
Blobs are measured as stored (msgpack); LangGraph's own objects are not revived.
"""

from __future__ import annotations

import argparse
import dataclasses
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import ormsgpack
from common import CONTEXT, END, chain, report, roles, sqlite_graph

from agent import run

_OPTIONS = ormsgpack.OPT_NON_STR_KEYS


class _Ext(bytes):
    """A msgpack extension (a LangGraph or LangChain object), kept as its stored bytes."""


def _ext(code: int, data: bytes) -> _Ext:
    return _Ext(data)


def _size(value: Any) -> int:
    """Bytes of ``value`` as msgpack; an extension counts as its stored bytes."""
    if isinstance(value, _Ext):
        return len(value)
    if isinstance(value, dict):
        return sum(_size(k) + _size(v) for k, v in value.items()) + 3
    if isinstance(value, list | tuple):
        return sum(_size(v) for v in value) + 3
    return len(ormsgpack.packb(value, option=_OPTIONS))


def _per(value: int, content: int) -> str:
    return f"{value:,} ({value / content:.3f})"


def tables(conn: sqlite3.Connection, content: int) -> None:
    """Pages per table and index, and what they hold unused."""
    try:
        rows = conn.execute(
            "SELECT name, COUNT(*), SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name "
            "ORDER BY 3 DESC"
        ).fetchall()
    except sqlite3.Error:
        print("\n(this SQLite has no dbstat: page figures left out)")
        return
    report(
        "Pages per table (B, per content byte)",
        [[name, pages, _per(size, content), f"{unused:,}"] for name, pages, size, unused in rows],
        ["table or index", "pages", "bytes", "unused B"],
    )


def checkpoints(conn: sqlite3.Connection, content: int) -> None:
    """The checkpoint blobs by part, the channel values by channel, and the metadata."""
    rows = conn.execute("SELECT checkpoint, metadata FROM checkpoints").fetchall()
    parts: Counter[str] = Counter()
    values: Counter[str] = Counter()
    versions = seen = 0
    for blob, _ in rows:
        stored = ormsgpack.unpackb(blob, ext_hook=_ext, option=_OPTIONS)
        for key, value in stored.items():
            parts[key] += _size(value)
        for channel, value in (stored.get("channel_values") or {}).items():
            values[channel] += _size(value)
        versions += len(stored.get("channel_versions") or {})
        seen += sum(len(s) for s in (stored.get("versions_seen") or {}).values())
    count = max(len(rows), 1)
    blobs = sum(len(blob) for blob, _ in rows)
    metadata = sum(len(meta or b"") for _, meta in rows)
    print(
        f"\n{len(rows)} checkpoints: blobs {_per(blobs, content)}, metadata "
        f"{_per(metadata, content)}; per checkpoint {versions / count:.1f} channel versions, "
        f"{seen / count:.1f} versions seen"
    )
    report(
        "Checkpoint blob parts",
        [[k, _per(v, content)] for k, v in parts.most_common()],
        ["part", "B"],
    )
    report(
        "Channel values in checkpoints",
        [[k, _per(v, content)] for k, v in values.most_common(10)],
        ["channel", "B"],
    )


def writes(conn: sqlite3.Connection, content: int) -> None:
    """Pending writes per channel: how many, their values, their key columns."""
    rows = conn.execute(
        "SELECT channel, COUNT(*), SUM(LENGTH(value)), SUM(LENGTH(thread_id) + "
        "LENGTH(checkpoint_ns) + LENGTH(checkpoint_id) + LENGTH(task_id) + LENGTH(task_path) + "
        "LENGTH(channel) + LENGTH(type)) FROM writes GROUP BY channel ORDER BY 3 DESC"
    ).fetchall()
    report(
        "Pending writes per channel",
        [[ch, n, _per(value or 0, content), f"{keys:,}"] for ch, n, value, keys in rows],
        ["channel", "writes", "value B", "key columns B"],
    )
    total = sum(value or 0 for _, _, value, _ in rows)
    print(f"writes: {sum(n for _, n, _, _ in rows)} rows, values {_per(total, content)}")


def breakdown(path: Path, content: int) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        size = path.stat().st_size
        print(f"{path}: {size:,} B, {size / content:.2f} per content byte ({content:,} B)")
        tables(conn, content)
        checkpoints(conn, content)
        writes(conn, content)
    finally:
        conn.close()


def written(files: int, size: int) -> Path:
    """A fresh SQLite file after a chain of ``files`` steps, its WAL checkpointed."""
    graph, conn = sqlite_graph(roles(chain(files), size, [END]))
    context = dataclasses.replace(CONTEXT, max_plan_steps=1000)
    result = run(graph, "write the parts", context=context, thread_id="bench")
    assert result["status"] == "success", result["stop_reason"]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = Path(conn.execute("PRAGMA database_list").fetchone()[2])
    conn.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--db", type=Path, help="an existing SQLite file to break down")
    parser.add_argument("--content", type=int, help="with --db: the content bytes it holds")
    args = parser.parse_args()
    if args.db is not None:
        breakdown(args.db, args.content or args.files * args.size)
    else:
        breakdown(written(args.files, args.size), args.files * args.size)


if __name__ == "__main__":
    main()
