"""Reading hostile text stays linear: each reader of untrusted text (an artifact's
citations, the goal's literals) timed on a hostile input and on the same input four times
as long, side by side. A linear reader takes about 4× as long on the longer one; a
quadratic one 16× (and minutes at these sizes).

    python bench/hostile_text.py [--size 50000]

A benchmark, not a test: the tests assert what these readers return on the same inputs
(tests/unit/test_citations.py, tests/unit/test_criteria.py); the times depend on the machine
and its load.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.checks.citations import citations  # noqa: E402
from agent.plan.criteria import json_keys, literal_criteria  # noqa: E402

HOSTILE: dict[str, Callable[[int], str]] = {
    "slashes after https:": lambda n: "https:" + "/" * n,
    "closing parens": lambda n: "https://a.com/" + ")" * n,
    "user-info @": lambda n: "https://" + "a@" * (n // 2),
    "open IPv6 bracket": lambda n: "https://[" + ":" * n,
    "open tags": lambda n: "<a " * (n // 3),
    "entities": lambda n: "&#" * (n // 2),
    "long host labels": lambda n: ("a" * 50 + ".") * (n // 51) + "com/x",
    "open brackets": lambda n: "[" * (n // 5),
    "chained examples": lambda n: "f(1) == " * (n // 8),
    "nested braces": lambda n: '{"k": ' * (n // 6),
}
READERS: dict[str, Callable[[str], object]] = {
    "citations": citations,
    "literal_criteria": lambda text: literal_criteria(text, ["a.py", "b.json", "c.sql"]),
    "json_keys": json_keys,
}


def timed(read: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    read(text)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=50_000, help="characters of the short input")
    args = parser.parse_args()
    print(f"| reader | input | {args.size:,} chars s | {4 * args.size:,} chars s | ratio |")
    print("| --- | --- | --- | --- | --- |")
    worst = 0.0
    for reader, read in READERS.items():
        for name, make in HOSTILE.items():
            short, long = timed(read, make(args.size)), timed(read, make(4 * args.size))
            ratio = long / short if short > 1e-4 else float("nan")
            if short >= 0.01:  # shorter times are the timer's and the load's noise
                worst = max(worst, ratio)
            print(f"| {reader} | {name} | {short:.3f} | {long:.3f} | {ratio:.1f} |")
    print(f"\nworst ratio of inputs read in 10 ms or more: {worst:.1f} (linear ~4, quadratic ~16)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
