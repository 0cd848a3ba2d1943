"""Does reflection help on a real small model? HumanEval with Qwen2.5-Coder served locally.

Issue 14 item 5 (seed 003's question, measured on a real model rather than scripted ones):
this script reproduces the measurement end to end, so the numbers in
docs/real-model-eval.md can be re-run on any machine:

1. assemble and verify the GGUF (``bench/local_model.py ensure``; reused when there);
2. serve it with llama.cpp's server (``xllamacpp``) on a free 127.0.0.1 port, one slot;
3. run ``deepreflect eval --dataset humaneval --model openai:<name> --evidence visible
   --rounds 2 --limit N --workers 1 --json`` against it (the docstring examples are the
   loop's evidence, the hidden HumanEval tests grade), and with ``--critic`` a second pass
   with the same model as the critic, for the critic's precision;
4. ask the plain model once per task (``bench/plain_model.py``: the same server and model,
   one message, greedy, its fenced code graded by the same hidden tests), the baseline a
   user has without deepreflect (issue 22);
5. stop the server and print the table: one column each for the plain model, deepreflect's
   first draft and deepreflect with reflection on, with pass rate, prompt and completion
   tokens, tokens and wall time per solved task; then the pass's details (published pass@1,
   fixes, regressions, rounds, stop reasons, critic precision).

    python bench/real_eval.py [--limit 40] [--size 1.5b] [--no-plain]
                              [--critic [--critic-limit N]] [--threads 1] [--out DIR]

The JSON reports (``eval.json``, ``eval-critic.json``) and the server's log are kept in
``--out`` (default: a new temporary directory), so failing drafts can be read afterwards.

One thread by default: on a 2-core machine with a core busy elsewhere, llama.cpp's two
threads wait on each other and generation collapses (measured here: 1.5B, 2 threads
~1-2 tokens/s, 1 thread ~20 tokens/s); pass ``--threads 2`` on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import local_model
import plain_model

ROOT = Path(__file__).resolve().parents[1]
LOCAL_MODEL = ROOT / "bench" / "local_model.py"
# Qwen2.5-Coder technical report, HumanEval pass@1 of the Instruct models (full precision)
PUBLISHED_PASS_AT_1 = {"0.5b": 0.616, "1.5b": 0.707}
SERVED_NAME = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}
STARTUP_TIMEOUT_S = 180.0
_TOKENS_PER_S = re.compile(
    r"(prompt eval|\beval) time =\s*([\d.]+) ms /\s*(\d+) tokens", re.IGNORECASE
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="the first N HumanEval tasks")
    parser.add_argument(
        "--no-plain", action="store_true", help="skip the plain-model column (the baseline)"
    )
    parser.add_argument("--size", choices=sorted(PUBLISHED_PASS_AT_1), default="1.5b")
    parser.add_argument(
        "--critic", action="store_true", help="a second pass with the same model as the critic"
    )
    parser.add_argument(
        "--critic-only", action="store_true", help="only the critic pass (implies --critic)"
    )
    parser.add_argument(
        "--critic-limit", type=int, default=None, help="tasks of the critic pass (default: --limit)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="revisions when reflection is on")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (see above)")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--out", type=Path, default=None, help="keep reports and logs here")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="print the tables of a run kept in DIR (plain.json, eval.json) without serving",
    )
    parser.add_argument(
        "--first", type=int, metavar="N", help="with --report: only the first N tasks of the run"
    )
    return parser.parse_args(argv)


def ensure_model(size: str) -> Path:
    """The verified GGUF's path (downloaded and joined the first time)."""
    cmd = [sys.executable, str(LOCAL_MODEL), "ensure", "--size", size]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"could not assemble the {size} model:\n{proc.stderr}")
    return Path(proc.stdout.strip().splitlines()[-1])


@contextmanager
def served(size: str, threads: int, n_ctx: int, log_path: Path) -> Iterator[int]:
    """Serve the model (one slot) in a subprocess until the block exits; yields the port."""
    port = local_model.free_port()
    cmd = [sys.executable, str(LOCAL_MODEL), "serve", "--size", size, "--port", str(port)]
    cmd += ["--n-ctx", str(n_ctx), "--n-parallel", "1", "--threads", str(threads)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        started = time.monotonic()
        while not local_model.healthy(port):
            if process.poll() is not None or time.monotonic() - started > STARTUP_TIMEOUT_S:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise SystemExit(f"the server did not start on port {port}:\n{tail}")
            time.sleep(0.5)
        yield port
    finally:
        local_model.stop(process)


def eval_command(args: argparse.Namespace, critic: bool) -> list[str]:
    """The ``deepreflect eval`` command line of one pass."""
    exe = shutil.which("deepreflect") or str(Path(sys.executable).with_name("deepreflect"))
    model = f"openai:{SERVED_NAME[args.size]}"
    cmd = [
        exe,
        "eval",
        "--dataset",
        "humaneval",
        "--model",
        model,
        "--evidence",
        "visible",
    ]
    limit = args.critic_limit if critic and args.critic_limit else args.limit
    cmd += ["--rounds", str(args.rounds), "--limit", str(limit), "--workers", "1"]
    # one slot on a shared CPU: a request may wait behind a long one (120 s lost two problems)
    cmd += ["--request-timeout", "600"]
    if critic:
        cmd += ["--critic", model]
    return [*cmd, "--json"]


def run_eval(cmd: list[str], port: int, report_path: Path) -> dict[str, Any]:
    """Run one pass against the served model; its JSON report (also written to a file)."""
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "local-llama-server",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
    report_path.write_text(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit(f"deepreflect eval failed ({proc.returncode}); see {report_path}")
    return json.loads(proc.stdout)


def plain_pass(args: argparse.Namespace, port: int, report_path: Path) -> dict[str, Any]:
    """The plain model asked once per task, on the same server; its report kept as JSON."""
    from agent.eval.datasets import humaneval_tasks

    tasks = humaneval_tasks(limit=args.limit)
    model = plain_model.plain_model(f"http://127.0.0.1:{port}/v1", SERVED_NAME[args.size])
    print(f"$ plain model, {len(tasks)} tasks (bench/plain_model.py)", flush=True)
    report = plain_model.run_plain(model, tasks)
    report_path.write_text(json.dumps(report, indent=1))
    return report


def speeds(log_path: Path) -> dict[str, float | None]:
    """Tokens per second the server reported over the whole run: read (prompt) and written."""
    totals = {"prompt eval": [0.0, 0], "eval": [0.0, 0]}
    for kind, ms, tokens in _TOKENS_PER_S.findall(log_path.read_text(errors="replace")):
        key = "prompt eval" if kind.lower().startswith("prompt") else "eval"
        totals[key][0] += float(ms)
        totals[key][1] += int(tokens)
    return {
        "read_tokens_per_s": _per_s(*totals["prompt eval"]),
        "written_tokens_per_s": _per_s(*totals["eval"]),
    }


def _per_s(ms: float, tokens: int) -> float | None:
    return round(tokens / (ms / 1000), 1) if ms else None


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def rows(report: Mapping[str, Any], size: str) -> list[tuple[str, str]]:
    """The table's rows for one pass."""
    s = report["summary"]
    n = s["tasks"] - s["errors"]
    out = [
        ("tasks (errors)", f"{s['tasks']} ({s['errors']}: {s['error_classes'] or '-'})"),
        ("first-draft pass rate", _pct(s["first_correct"], n)),
        ("published pass@1", f"{100 * PUBLISHED_PASS_AT_1[size]:.1f}%"),
        ("final pass rate", _pct(s["final_correct"], n)),
        ("fixes / regressions", f"{s['fixes']} / {s['regressions']} (net {s['net_fixes']:+d})"),
        ("average rounds", str(s["avg_rounds"])),
        ("stop reasons", ", ".join(f"{k} {v}" for k, v in sorted(s["stop_reasons"].items()))),
        ("tokens off / on", f"{s['tokens']['off']} / {s['tokens']['on']}"),
        ("model calls off / on", f"{s['calls']['off']} / {s['calls']['on']}"),
        ("wall time", f"{report['wall_time_s']:.0f} s ({report['wall_time_s'] / 60:.1f} min)"),
    ]
    c = s.get("critic")
    if c:
        precision = "-" if c["precision"] is None else f"{100 * c['precision']:.1f}%"
        recall = "-" if c["recall"] is None else f"{100 * c['recall']:.1f}%"
        out.append(
            (
                "critic precision / recall",
                f"{precision} / {recall} ({c['confirmed']} of {c['flags']} flags confirmed, "
                f"{c['false_flags']} false, {c['missed']} missed, {c['malformed']} malformed)",
            )
        )
    return out


def _per_solved(total: float, solved: int, unit: str = "") -> str:
    return f"{total / solved:,.0f}{unit}" if solved else "-"


def columns(
    plain: Mapping[str, Any] | None, report: Mapping[str, Any] | None
) -> dict[str, dict[str, str]]:
    """Quality next to cost: the plain model, the first draft and reflection on, each with
    its pass count, prompt / completion tokens and wall time, in all and per solved task."""
    raw: dict[str, tuple[int, int, int, int, float]] = {}  # solved, n, input, output, wall
    if plain is not None:
        n = plain["tasks"] - plain["errors"]
        raw["plain model"] = (
            plain["correct"],
            n,
            plain["input_tokens"],
            plain["output_tokens"],
            plain["wall_s"],
        )
    if report is not None:
        s = report["summary"]
        n = s["tasks"] - s["errors"]
        for key, name, solved in (
            ("off", "first draft", "first_correct"),
            ("on", "reflection on", "final_correct"),
        ):
            io = s["io_tokens"][key]
            raw[name] = (s[solved], n, io["input"], io["output"], s["wall_s"][key])
    base = raw.get("plain model")
    base_per = (base[2] + base[3]) / base[0] if base and base[0] else None
    out: dict[str, dict[str, str]] = {}
    for name, (solved, n, prompt, completion, wall) in raw.items():
        per = (prompt + completion) / solved if solved else None
        ratio = (
            f" ({per / base_per:.1f}x plain)" if per and base_per and name != "plain model" else ""
        )
        out[name] = {
            "pass": _pct(solved, n),
            "tokens prompt / completion": f"{prompt:,} / {completion:,}",
            "tokens per solved task": _per_solved(prompt + completion, solved) + ratio,
            "wall": f"{wall:,.0f} s",
            "wall per solved task": _per_solved(wall, solved, " s"),
        }
    return out


def print_columns(table: Mapping[str, Mapping[str, str]]) -> None:
    """The side-by-side table as Markdown."""
    names = list(table)
    labels = list(dict.fromkeys(label for t in table.values() for label in t))
    print("\n| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label in labels:
        print(f"| {label} | " + " | ".join(table[n].get(label, "-") for n in names) + " |")


def print_table(passes: Mapping[str, Mapping[str, Any]], size: str) -> None:
    """One column per pass, as Markdown (pasted into docs/real-model-eval.md)."""
    names = list(passes)
    table = {name: dict(rows(report, size)) for name, report in passes.items()}
    labels = list(dict.fromkeys(label for t in table.values() for label in t))
    print("\n| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label in labels:
        print(f"| {label} | " + " | ".join(table[n].get(label, "-") for n in names) + " |")


def kept_run(folder: Path, first: int | None = None) -> tuple[dict | None, dict | None]:
    """The plain and deepreflect reports of a kept run, recomputed over its first ``first``
    tasks (the first 40 of a 164-problem run are the tuning slice)."""
    from agent.eval.reflection import reflection_summary

    plain = report = None
    if (folder / "plain.json").exists():
        records = json.loads((folder / "plain.json").read_text())["records"][:first]
        plain = plain_model.summary(records)
    if (folder / "eval.json").exists():
        report = json.loads((folder / "eval.json").read_text())
        tasks = report["tasks"][:first]
        with_critic = bool(report["summary"].get("critic"))
        report = {**report, "tasks": tasks,
                  "summary": reflection_summary(tasks, with_critic=with_critic)}  # fmt: skip
        if first is not None:  # the pass's wall time, over these tasks only
            report["wall_time_s"] = sum(t["wall_s"]["on"] for t in tasks if "wall_s" in t)
    return plain, report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.report is not None:
        plain, report = kept_run(args.report, args.first)
        print_columns(columns(plain, report))
        if report is not None:
            print_table({"check critique": report}, args.size)
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="deepreflect-real-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    path = ensure_model(args.size)
    print(f"model {path} (verified); reports and logs in {out}", flush=True)
    log_path = out / "server.log"
    passes: dict[str, dict[str, Any]] = {}
    plain: dict[str, Any] | None = None
    with served(args.size, args.threads, args.n_ctx, log_path) as port:
        if not args.no_plain and not args.critic_only:
            plain = plain_pass(args, port, out / "plain.json")
        if not args.critic_only:
            cmd = eval_command(args, False)
            passes["check critique"] = run_eval(cmd, port, out / "eval.json")
        if args.critic or args.critic_only:
            cmd = eval_command(args, True)
            passes["+ model critic"] = run_eval(cmd, port, out / "eval-critic.json")
    print_columns(columns(plain, passes.get("check critique")))
    print_table(passes, args.size)
    print(f"\nserver speed over the run: {speeds(log_path)}; {args.threads} thread(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
