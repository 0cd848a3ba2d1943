"""Wall time of starting the CLI, beside an empty Python (issue 16: well under half a second).

    python bench/startup.py [--runs 9]

Each command runs ``--runs`` times in a fresh interpreter, as a user's shell runs it; the
table gives the median and the fastest wall time, and the median CPU time (user + system),
which a loaded machine inflates less. ``threads`` and ``show`` read a database that
one demo run wrote first. A benchmark, not a test: the figures depend on the machine and
its load (the CI machine's two cores are shared).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.5


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    return {**env, "PYTHONPATH": str(ROOT)}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``runs`` runs of ``argv``; a failing run stops it."""
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), _cpu()
        done = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=ROOT)
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu() - cpu)
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return walls, cpus


def _demo_thread(db: Path) -> str:
    cli = [sys.executable, "-m", "agent.cli"]
    demo = subprocess.run(
        [*cli, "demo", "--json", "--db", str(db)], capture_output=True, text=True, env=_env()
    )
    if demo.returncode != 0:
        sys.exit(f"the demo run failed: {demo.stderr.strip()}")
    import json

    return str(json.loads(demo.stdout)["thread_id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "threads.sqlite"
        thread_id = _demo_thread(db)
        cli = [py, "-m", "agent.cli"]
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "python -c 'import agent.cli'": [py, "-c", "import agent.cli"],
            "deepreflect --help": [*cli, "--help"],
            "deepreflect threads": [*cli, "threads", "--db", str(db)],
            "deepreflect show ID": [*cli, "show", thread_id, "--db", str(db)],
            "deepreflect show ID --json": [*cli, "show", thread_id, "--json", "--db", str(db)],
        }
        rows = [(name, timed(argv, args.runs)) for name, argv in commands.items()]
    base = statistics.median(rows[0][1][0])
    print(f"startup, median of {args.runs} runs (target for --help/threads/show: < {TARGET_S} s)")
    print(f"{'command':<30} {'median s':>9} {'fastest s':>10} {'over pass':>10} {'cpu s':>7}")
    for name, (walls, cpus) in rows:
        median = statistics.median(walls)
        print(
            f"{name:<30} {median:>9.3f} {min(walls):>10.3f} {median - base:>+10.3f} "
            f"{statistics.median(cpus):>7.3f}"
        )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
