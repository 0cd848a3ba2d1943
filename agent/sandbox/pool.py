"""Warm sandboxes for code checks: pairs of interpreters started ahead, each used once.

A check's run is two linked jobs (the check's and the artifact's); starting two sandboxed
interpreters is most of its cost. The pool starts such pairs in the background, exactly as a
cold start would (:func:`agent.sandbox.launch.start`: the same bubblewrap command or the same
direct command, the same fresh folders, throw-away uids, Landlock and seccomp rules), except
that each interpreter, once confined, waits for its job on stdin instead of running one. The
job's files, argv, environment and limits then arrive as data (:func:`launch.deliver`); the
folder is empty until then. A pair serves one run and is killed with it, never reused; the
pool refills behind it, at most :data:`SIZE` pairs, for the level in use only; it is shut down
(every process killed, every folder removed) at interpreter exit. ``DEEPREFLECT_SANDBOX_POOL=0``
turns it off. Runs of another shape (one job, host files to read, a forced level) start cold.
"""

from __future__ import annotations

import atexit
import os
import socket
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.sandbox.isolation import IsolationLevel
from agent.sandbox.job import Job
from agent.sandbox.launch import Started, prepare, remove_tree, start
from agent.sandbox.processes import kill_all, reap, remove_left

__all__ = ["Pair", "enabled", "fits", "shutdown", "take"]

ENV = "DEEPREFLECT_SANDBOX_POOL"
SIZE = 2
"""Pairs kept warm (four interpreters)."""
_SHAPE = (Job(files={}, argv=[], report=True), Job(files={}, argv=[], main=False))


@dataclass
class Pair:
    """Two started, confined, waiting interpreters linked by a socket pair, and their folder."""

    level: IsolationLevel
    base: Path
    runs: list[Started]

    def discard(self) -> None:
        """Kill both interpreters and every process they have, remove their folders."""
        for run in self.runs:
            kill_all(run.proc.pid, run.spec.uid)
            if run.spec.uid is not None and self.level != "kernel":
                remove_left(run.spec.uid)
            reap(run.proc)
            run.close()
        remove_tree(self.base)


def enabled() -> bool:
    """The pool is on unless ``DEEPREFLECT_SANDBOX_POOL=0`` (or ``false``/``no``/``off``)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def fits(jobs: Sequence[Job], link: bool) -> bool:
    """A run the pool serves: a check's two linked jobs, the check's first, no host files."""
    if not link or len(jobs) != 2:
        return False
    check, artifact = jobs
    shape = check.main and check.report and not artifact.main and not artifact.report
    return shape and not check.readable and not artifact.readable


def start_pair(level: IsolationLevel) -> Pair:
    """Start a waiting pair as a cold run would start its jobs (see the module's note)."""
    base = Path(tempfile.mkdtemp(prefix="deepreflect-sandbox-")).resolve()
    os.chmod(base, 0o711)
    pair = Pair(level, base, [])
    links = socket.socketpair()
    try:
        for i, shape in enumerate(_SHAPE):
            spec = prepare(base, i, shape, level)
            pair.runs.append(start(spec, level, 1.0, 1, [links[i].fileno()], pooled=True))
    except BaseException:
        pair.discard()
        raise
    finally:
        for end in links:
            end.close()
    return pair


class _Pool:
    """The waiting pairs of one level, and the thread that refills them."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.pairs: list[Pair] = []
        self.level: IsolationLevel | None = None
        self.active = 0
        self.closed = False
        self.owner = os.getpid()
        self.filler: threading.Thread | None = None

    def take(self, level: IsolationLevel) -> Pair | None:
        """A waiting pair of ``level`` (removed from the pool), or None; asks for a refill."""
        stale: list[Pair] = []
        with self.lock:
            if self.closed:
                return None
            if self.level != level:
                stale, self.pairs, self.level = self.pairs, [], level
            pair = self.pairs.pop(0) if self.pairs else None
            if pair is not None:
                self.active += 1
            self._ensure_filler()
            self.lock.notify_all()
        for old in stale:
            old.discard()
        return pair

    def done(self) -> None:
        """A pooled run is over: the filler may use the CPU again."""
        with self.lock:
            self.active -= 1
            self.lock.notify_all()

    def _ensure_filler(self) -> None:
        if self.filler is None or not self.filler.is_alive():
            self.filler = threading.Thread(target=self._fill, name="sandbox-pool", daemon=True)
            self.filler.start()

    def _fill(self) -> None:
        """Keep ``SIZE`` pairs of the level in use; start one while no pooled run is busy
        (or none is left), so a refill does not slow the check it would serve."""
        failures = 0
        while True:
            with self.lock:
                while not self.closed and not self._wanted():
                    self.lock.wait()
                if self.closed or self.level is None:
                    return
                level = self.level
            try:
                pair = start_pair(level)
            except Exception:  # cold starts still work; stop trying after a few failures
                failures += 1
                if failures >= 3:
                    return
                continue
            with self.lock:
                keep = not self.closed and self.level == level and len(self.pairs) < SIZE
                if keep:
                    self.pairs.append(pair)
            if not keep:
                pair.discard()

    def _wanted(self) -> bool:
        if self.level is None or len(self.pairs) >= SIZE:
            return False
        return self.active == 0 or not self.pairs

    def shutdown(self) -> None:
        """Kill every waiting pair and remove its folders; no pair is started after this."""
        with self.lock:
            self.closed = True
            pairs, self.pairs = self.pairs, []
            self.lock.notify_all()
            filler = self.filler
        if filler is not None and filler is not threading.current_thread():
            filler.join(timeout=10)
        with self.lock:  # a pair the filler finished meanwhile
            pairs += self.pairs
            self.pairs = []
        for pair in pairs:
            pair.discard()


_pool = _Pool()
_pool_lock = threading.Lock()


def _current() -> _Pool:
    """This process's pool (a forked child starts its own, never touching its parent's)."""
    global _pool
    with _pool_lock:
        if _pool.owner != os.getpid():
            _pool = _Pool()
        return _pool


def take(level: IsolationLevel) -> tuple[Pair, _Pool] | None:
    """A waiting pair for one run at ``level``, or None (the run starts cold)."""
    pool = _current()
    pair = pool.take(level)
    return None if pair is None else (pair, pool)


def shutdown() -> None:
    """Kill the waiting pairs and remove their folders (at exit, and for tests)."""
    pool = _current()
    pool.shutdown()
    with _pool_lock:
        global _pool
        if _pool is pool:
            _pool = _Pool()


atexit.register(lambda: _current().shutdown() if _pool.owner == os.getpid() else None)
