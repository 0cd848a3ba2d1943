"""What trustworthy checks cost: a ``python`` and a ``pytest`` check per isolation level,
against a bare ``subprocess.run`` of the same code (no sandbox, no second process).

    python bench/sandbox.py [--repeat N] [--pause S]

Checks are served by the warm pool (``agent.sandbox.pool``), which refills between checks;
``--pause`` seconds between repetitions (both sides) give it the time, as a plan's steps do.
``DEEPREFLECT_SANDBOX_POOL=0`` measures cold starts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import report

from agent import sandbox
from agent.checks import run_check

ARTIFACT = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"
TESTS = (
    "from slugify import slugify\n\n"
    "def test_a():\n    assert slugify('A B') == 'a-b'\n\n"
    "def test_b():\n    assert slugify('x') == 'x'\n"
)
CODE = "assert slugify('A B') == 'a-b'\n"


def median_ms(action: Callable[[], object], repeat: int, pause: float) -> float:
    action()  # warm caches (and, for a check, start the pool)
    times = []
    for _ in range(repeat):
        time.sleep(pause)
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def bare(argv: list[str], files: dict[str, str]) -> Callable[[], object]:
    folder = Path(tempfile.mkdtemp())
    for name, text in files.items():
        (folder / name).write_text(text)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # as the check runs pytest
    return lambda: subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.5)
    args = parser.parse_args()
    repeat, pause = args.repeat, args.pause
    files = {"slugify.py": ARTIFACT, "test_slugify.py": TESTS}
    python_spec = {"kind": "python", "code": CODE}
    pytest_spec = {"kind": "pytest", "tests": ["test_slugify.py"]}
    bare_python = bare(["-c", ARTIFACT + CODE], files)
    bare_pytest = bare(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_slugify.py"], files)
    rows = []
    levels = ["process"] + (["kernel"] if sandbox.isolation.bwrap_path() else [])
    levels += ["landlock"] if sandbox.isolation.landlock_probe().startswith("abi") else []
    for level in levels:
        os.environ["DEEPREFLECT_SANDBOX"] = level
        for kind, spec, baseline in (
            ("python", python_spec, bare_python),
            ("pytest", pytest_spec, bare_pytest),
        ):
            ours = median_ms(lambda s=spec: run_check(s, files, "slugify.py"), repeat, pause)
            theirs = median_ms(baseline, repeat, pause)
            rows.append(
                (level, kind, f"{ours:.0f} ms", f"{theirs:.0f} ms", f"{ours / theirs:.1f}x")
            )
    header = ("isolation", "check", "deepreflect", "bare subprocess.run", "ratio")
    report(f"check cost, median of {repeat}", rows, header)


if __name__ == "__main__":
    main()
