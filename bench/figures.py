"""Run every benchmark and put what they print into docs/performance.md, so its figures are
never typed by hand.

    python bench/figures.py            # run them all, print the figures
    python bench/figures.py --write    # and replace docs/performance.md's figures section
    python bench/figures.py storage parallel --write   # only some (the others are kept)

The section of docs/performance.md between ``<!-- figures:begin -->`` and
``<!-- figures:end -->`` holds one block per benchmark: the command and its output, verbatim,
with the date it ran.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"  # the page whose figures section this rewrites
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
# name -> the arguments its figures come from
BENCHMARKS: dict[str, list[str]] = {
    "overhead": ["--steps", "30"],
    "storage": ["--postgres"],
    "parallel": [],
    "reflection_prompt": [],
    "reflection_calls": [],
    "sandbox": [],
    "startup": [],
    "workspace": [],
    "peers": [],  # needs the bench extra (deepagents); without it that column says so
}
_BLOCK = re.compile(r"<!-- figure:(?P<name>\w+) -->\n(?P<body>.*?)<!-- /figure -->\n", re.DOTALL)


def run_benchmark(name: str) -> str:
    """One benchmark's block: its command and what it printed (stderr too if it failed)."""
    command = [sys.executable, f"bench/{name}.py", *BENCHMARKS[name]]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    shown = " ".join(["python", *command[1:]])
    output = done.stdout.strip()
    if done.returncode != 0:
        output += f"\n(exit {done.returncode})\n{done.stderr.strip()[-2000:]}"
    today = datetime.date.today().isoformat()
    return f"<!-- figure:{name} -->\n```\n$ {shown}    # {today}\n{output}\n```\n<!-- /figure -->\n"


def section(blocks: dict[str, str]) -> str:
    """The figures section holding ``blocks`` in the order of BENCHMARKS."""
    body = "".join(blocks[name] for name in BENCHMARKS if name in blocks)
    return f"{BEGIN}\n{body}{END}"


def rewrite(page: str, fresh: dict[str, str]) -> str:
    """``page`` with the figures section rebuilt: fresh blocks replace their old ones."""
    start, stop = page.find(BEGIN), page.find(END)
    if start < 0 or stop < start:
        msg = f"{PAGE.relative_to(ROOT)} has no {BEGIN} ... {END} section"
        raise SystemExit(msg)
    old = {m["name"]: m.group(0) for m in _BLOCK.finditer(page[start:stop])}
    return page[:start] + section(old | fresh) + page[stop + len(END) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"some of: {', '.join(BENCHMARKS)}")
    parser.add_argument("--write", action="store_true", help=f"update {PAGE.relative_to(ROOT)}")
    args = parser.parse_args()
    if unknown := set(args.names) - set(BENCHMARKS):
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}")
    fresh = {}
    for name in args.names or list(BENCHMARKS):
        print(f"running bench/{name}.py ...", file=sys.stderr, flush=True)
        fresh[name] = run_benchmark(name)
        print(fresh[name])
    if args.write:
        PAGE.write_text(rewrite(PAGE.read_text(encoding="utf-8"), fresh), encoding="utf-8")
        print(f"updated {PAGE.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
