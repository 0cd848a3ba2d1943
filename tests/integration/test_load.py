"""Several processes, several threads each, one database: nothing lost, nothing mixed up.

A small, bounded run of ``bench/load.py`` (2 processes x 3 threads, each thread a 3-step plan
whose artifacts carry its thread id) on SQLite and on PostgreSQL, then the race of two
processes opening a new SQLite database.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading

from agent.runs.runner import open_checkpointer

pytest_plugins = ["tests.postgres"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_two_processes_with_three_threads_each_lose_and_mix_up_nothing(threads_db):
    db = threads_db
    # The database exists before the workers start: the race of a first open is the next test.
    with open_checkpointer(db):
        pass
    proc = subprocess.run(
        [sys.executable, "bench/load.py", "--processes", "2", "--threads", "3", "--json"]
        + ["--db", str(db), "--timeout", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["errors"] == 0, summary["error_kinds"]
    assert summary["crashed_processes"] == []
    assert (summary["threads"], summary["succeeded"]) == (6, 6)
    assert (summary["lost"], summary["mixed"], summary["failed"]) == (0, 0, 0), summary["verify"]
    assert summary["verify"]["threads_in_db"] == 6
    assert summary["ok"] is True and proc.returncode == 0


def test_opening_a_new_database_waits_for_another_process_creating_it(tmp_path):
    db = tmp_path / "threads.sqlite"
    other = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process is in the middle of its first open
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    try:
        with open_checkpointer(str(db)) as saver:
            assert saver.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        release.join()
        other.close()
