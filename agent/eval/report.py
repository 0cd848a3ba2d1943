"""The readable report: an evaluation's tables and totals on the terminal.

Task ids, dataset and model names, mutant source and witnesses are data, not markup: every
piece goes out through :func:`agent.runs.progress.line`, so ``[/bold]`` in a task id is printed as
written and cannot break the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.runs.progress import line

_CHANGE_STYLE = {"fix": "green", "regression": "red", "right": "", "wrong": "dim"}
_NOT_CAUGHT_SHOWN = 30
_SEEDED_LEGEND = (
    "killed: the check failed (timeout: by its time limit); equiv: no input found on which "
    "it differs from the reference; survived: passes the check but differs on the witness "
    "input; unsure: the probe could not finish; rate: caught (killed, or flagged by the "
    "critic) / (mutants - equiv)"
)


def print_report(console: Console, report: Mapping[str, Any]) -> None:
    """Print an evaluation report as tables."""
    if report["mode"] == "seeded-errors":
        _print_seeded(console, report)
    else:
        _print_reflection(console, report)


@contextmanager
def eval_progress(console: Console) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback for ``evaluate``: a bar with the time left on a
    terminal, else a plain line about every 5% of the tasks (a log stays short)."""
    if console.is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (
            TextColumn("evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks, elapsed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("evaluating", total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        if done != total and done % max(1, total // 20):
            return
        elapsed = time.monotonic() - started
        left = elapsed / done * (total - done) if done else 0.0
        console.print(
            line(
                f"evaluating: {done}/{total} tasks, {_clock(elapsed)} elapsed, "
                f"about {_clock(left)} left"
            )
        )

    yield report


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _id_column(table: Table, ids: Sequence[str]) -> None:
    """The task column, never cut: ``HumanEval/163`` stays whole in 80 columns (the
    other columns give way)."""
    widest = max((len(i) for i in ids), default=4)
    table.add_column("task", no_wrap=True, min_width=widest)


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _wall_time(console: Console, report: Mapping[str, Any]) -> None:
    console.print(
        line((f"wall time {report['wall_time_s']} s, {report['workers']} workers", "dim"))
    )


# -- reflection off / on ------------------------------------------------------------------------


def _print_reflection(console: Console, report: Mapping[str, Any]) -> None:
    s = report["summary"]
    console.print(_reflection_tasks(report))
    console.print(_reflection_totals(report))
    console.print(
        line(
            "fixes (wrong→right) ",
            (str(s["fixes"]), "green"),
            ", regressions (right→wrong) ",
            (str(s["regressions"]), "red"),
            f", unchanged right {s['unchanged_right']}, unchanged wrong "
            f"{s['unchanged_wrong']}; net {s['net_fixes']:+d}",
        )
    )
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s["stop_reasons"].items()))
    console.print(line(f"average rounds {s['avg_rounds']}; stop reasons: {reasons or '-'}"))
    if s["critic"]:
        c = s["critic"]
        console.print(
            line(
                f"critic: {c['flags']} flags, {c['confirmed']} confirmed by the check, "
                f"{c['false_flags']} false; precision {_rate(c['precision'])}, recall "
                f"{_rate(c['recall'])}; {c['malformed']} malformed critiques"
            )
        )
    if s["errors"]:
        console.print(line((f"{s['errors']} task(s) failed", "red"), f": {s['error_classes']}"))
    _wall_time(console, report)


def _reflection_tasks(report: Mapping[str, Any]) -> Table:
    """One row per task: first and final correctness, the change, rounds, cost."""
    table = Table(title="tasks", title_justify="left")
    _id_column(table, [str(r["id"]) for r in report["tasks"]])
    for column in ("first", "final", "change", "rounds", "stop", "tokens", "calls"):
        table.add_column(column)
    if report.get("critic"):
        table.add_column("critic flags (false)")
    for r in report["tasks"]:
        if "error" in r:
            table.add_row(line(r["id"]), "", "", line(("error", "red"), f" {r['error_class']}"))
            continue
        row: list[str | Text] = [
            line(r["id"]),
            "✓" if r["first_correct"] else "✗",
            "✓" if r["final_correct"] else "✗",
            line((r["change"], _CHANGE_STYLE[r["change"]])),
            str(r["rounds"]),
            line(r["stop_reason"]),
            str(r["tokens"]["on"]),
            str(r["calls"]["on"]),
        ]
        if report.get("critic"):
            c = r["critic"] or {}
            row.append(f"{c.get('flags', 0)} ({c.get('false_flags', 0)})")
        table.add_row(*row)
    return table


def _reflection_totals(report: Mapping[str, Any]) -> Table:
    """Reflection off against on: correctness, tokens and model calls."""
    s = report["summary"]
    n = s["tasks"] - s["errors"]
    title = (
        f"reflection on {report['dataset']}: model {report['model']}, critic "
        f"{report.get('critic') or 'check only'}, evidence {report['evidence']}, "
        f"max_revisions {report['max_revisions']}"
    )
    totals = Table(title=line(title), title_justify="left")
    for column in ("", "reflection off (first draft)", f"on (≤{report['max_revisions']} rounds)"):
        totals.add_column(column)
    totals.add_row("correct", _pct(s["first_correct"], n), _pct(s["final_correct"], n))
    totals.add_row("tokens", str(s["tokens"]["off"]), str(s["tokens"]["on"]))
    totals.add_row("model calls", str(s["calls"]["off"]), str(s["calls"]["on"]))
    return totals


# -- seeded errors ------------------------------------------------------------------------------


def _print_seeded(console: Console, report: Mapping[str, Any]) -> None:
    s = report["summary"]
    console.print(_seeded_operators(report))
    console.print(line((_SEEDED_LEGEND, "dim")))
    console.print(
        line(
            f"references: {s['references']}, flagged {s['references_flagged']} "
            f"(false-flag rate {_rate(s['false_flag_rate'])}); catch rate "
            f"{_rate(s['catch_rate'])} of {s['mutants'] - s['equivalent']} non-equivalent "
            f"mutants ({s['equivalent']} equivalent reported apart; raw check kill rate "
            f"{_rate(s['raw_check_catch_rate'])} of all {s['mutants']})"
        )
    )
    if s.get("critic"):
        c = s["critic"]
        console.print(
            line(
                f"critic: flagged {c['mutants_flagged']} mutants ({c['caught_only_by_critic']} "
                f"the check missed), {c['references_flagged']} references, "
                f"{c['equivalent_flagged']} equivalent mutants; {c['malformed']} malformed; "
                f"{c['tokens']} tokens, {c['calls']} calls"
            )
        )
    if s["not_caught"]:
        console.print(_not_caught(s["not_caught"]))
    if s["errors"] or s["skipped"]:
        console.print(line((f"{s['errors']} error(s), {s['skipped']} skipped problem(s)", "red")))
    _wall_time(console, report)


def _seeded_operators(report: Mapping[str, Any]) -> Table:
    """One row per mutation operator and one for all of them."""
    s = report["summary"]
    title = (
        f"seeded errors in {report['dataset']} references (seed {report['seed']}, "
        f"check timeout {report['timeout_s']} s, critic {report.get('critic') or 'none'})"
    )
    table = Table(
        title=line(title),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    # short headers keep the table whole in 80 columns; timeouts are among the killed, and
    # "caught" (killed or flagged by the critic) differs from "killed" only with a critic
    keys = ["mutants", "killed", "timeouts", "equivalent", "survived", "inconclusive"]
    headers = ["mutants", "killed", "timeout", "equiv", "survived", "unsure"]
    if s.get("critic"):
        keys.append("caught")
        headers.append("caught")
    table.add_column("operator", no_wrap=True)
    for header in [*headers, "rate"]:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))

    def row(name: Text, c: Mapping[str, Any]) -> list[str | Text]:
        return [name, *(str(c[k]) for k in keys), _rate(c["catch_rate"])]

    for op, counts in s["by_operator"].items():
        table.add_row(*row(line(op), counts))
    table.add_row(*row(line(("all", "bold")), s), end_section=True)
    return table


def _not_caught(entries: list[Mapping[str, Any]]) -> Table:
    """The mutants no check or critic caught, with the input that tells them apart."""
    missed = Table(title="not caught", title_justify="left")
    _id_column(missed, [str(e["id"]) for e in entries[:_NOT_CAUGHT_SHOWN]])
    for column in ("operator", "line", "change", "status", "witness"):
        missed.add_column(column)
    for e in entries[:_NOT_CAUGHT_SHOWN]:
        change = f"{e['before']} → {e['after']}"
        cells = (e["id"], e["operator"], e["line"], change, e["status"], e.get("witness") or "")
        missed.add_row(*(line(cell) for cell in cells))
    return missed
