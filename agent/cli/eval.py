"""``deepreflect eval``: reflection measured, off against on, or against seeded errors."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from agent.cli.output import print_json
from agent.limits import FRESH_DRAFTS


def add_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="measure reflection: off vs on, or seeded errors")
    ev.add_argument(
        "--dataset", default="humaneval", metavar="NAME|PATH", help="humaneval or a JSONL file"
    )
    ev.add_argument(
        "--model",
        metavar="PROVIDER:NAME",
        help="generator (and seeded-errors critic), provider:name",
    )
    ev.add_argument(
        "--critic",
        "--judge-model",
        dest="critic",
        metavar="PROVIDER:NAME",
        help="model critic (the judge) merged with the check's critique",
    )
    ev.add_argument(
        "--rounds", type=int, default=2, metavar="N", help="revisions when reflection is on"
    )
    ev.add_argument(
        "--fresh-drafts",
        type=int,
        default=FRESH_DRAFTS,
        metavar="N",
        help=f"drafts asked anew once revising stops helping (default {FRESH_DRAFTS})",
    )
    ev.add_argument(
        "--evidence",
        choices=["check", "visible"],
        default="check",
        help="where a revision's evidence comes from: the task's check, or only its "
        "visible examples",
    )
    ev.add_argument("--seeded-errors", action="store_true", help="plant errors in references")
    ev.add_argument("--limit", type=int, metavar="N", help="only the first N tasks")
    ev.add_argument("--workers", type=int, metavar="N", help="tasks at once")
    ev.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the mutation sites")
    ev.add_argument(
        "--timeout", type=float, default=3.0, metavar="S", help="seeded-errors check timeout"
    )
    ev.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="sampling temperature of the models (default 0: greedy, as published pass@1 is "
        "measured; a local server's own default is often 0.8)",
    )
    ev.add_argument(
        "--request-timeout",
        type=float,
        metavar="S",
        help="seconds one model request may take (default 120; a loaded CPU server needs more)",
    )
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    ev.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace, console: Console) -> int:
    from agent.eval import evaluate, print_report
    from agent.eval.report import eval_progress

    options = {k: getattr(args, k) for k in ("dataset", "model", "critic", "rounds", "limit")}
    options.update(evidence=args.evidence, workers=args.workers, seed=args.seed)
    options.update(fresh_drafts=args.fresh_drafts)
    # progress goes to stderr, so that --json output stays clean
    with eval_progress(Console(stderr=True, highlight=False)) as progress:
        report = evaluate(
            **options,
            seeded_errors=args.seeded_errors,
            timeout_s=args.timeout,
            temperature=args.temperature,
            request_timeout_s=args.request_timeout,
            progress=progress,
        )
    if args.json:
        print_json(report)
    else:
        print_report(console, report)
    return 0
