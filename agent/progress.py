"""Live progress for the terminal: one readable line per thing that happened in a node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from agent.result import Result

_STATUS_STYLE = {"done": "green", "failed": "red", "active": "yellow"}


class Progress:
    """Prints node updates as they stream (plan, subagents, checks, decisions)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)

    def __call__(self, node: str, update: Mapping[str, Any]) -> None:
        handler = getattr(self, f"_{node}", None)
        if handler is not None:
            handler(update)

    def _planner(self, update: Mapping[str, Any]) -> None:
        plan = update.get("plan")
        if plan:
            table = Table(title=f"plan v{plan['version']}", title_justify="left", box=None)
            for column in ("step", "action", "after", "artifact", "done when"):
                table.add_column(column)
            for step in plan["steps"]:
                check = step["done_when"]
                kind = check.get("kind", "?") if isinstance(check, dict) else "rubric"
                table.add_row(
                    step["step_id"],
                    step["action"],
                    ",".join(step["depends_on"]) or "-",
                    step["expected_output"],
                    kind,
                )
            self.console.print(table)
        if update.get("dispatch"):
            together = " in parallel" if len(update["dispatch"]) > 1 else ""
            self.console.print(
                f"[bold]round {update.get('step')}[/]: running {', '.join(update['dispatch'])}"
                f"{together}"
            )
        if update.get("status") == "failed":
            self.console.print(f"[red]rejected[/]: {_reason(update)}")

    def _subagent(self, update: Mapping[str, Any]) -> None:
        for event in update.get("trajectory") or []:
            action = event.get("action")
            if action == "check":
                ok = event["check"]["passed"]
                mark = "[green]pass[/]" if ok else "[red]fail[/]"
                self.console.print(
                    f"  {event['step_id']} check {event['check']['kind']}: {mark}"
                    + ("" if ok else f" — {_short(event.get('observation', ''))}")
                )
            elif action in ("write_file", "edit_file"):
                path = (event.get("params") or {}).get("path")
                self.console.print(f"  {event['step_id']} {event['actor']} {action} {path}")
            elif action == "result":
                style = "green" if event.get("passed") else "red"
                self.console.print(
                    f"  {event['step_id']} [{style}]{'done' if event.get('passed') else 'failed'}"
                    f"[/] after {event.get('rounds')} revision(s) ({event.get('stop_reason')})"
                )
            elif action == "error":
                self.console.print(f"  {event['step_id']} [red]error[/] {event.get('observation')}")

    def _reflection(self, update: Mapping[str, Any]) -> None:
        for entry in update.get("decisions") or []:
            who = "rule" if entry.get("by") == "rule" else "model"
            forced = " (forced)" if entry.get("forced") else ""
            self.console.print(
                f"[bold magenta]reflection[/] → {entry['decision']}{forced} by {who}: "
                f"{entry.get('reason', '')}  [dim]depth {entry.get('depth')}[/]"
            )

    def _escalate(self, update: Mapping[str, Any]) -> None:
        self.console.print(f"[yellow]paused[/] ({update.get('stop_reason')})")


def _short(text: str, limit: int = 140) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(update: Mapping[str, Any]) -> str:
    decisions = update.get("decisions") or [{}]
    return decisions[-1].get("reason", "")


def print_result(console: Console, result: Result) -> None:
    """The closing lines: outcome, artifacts, and for a pause the question and how to answer."""
    status = result["status"]
    style = {"success": "green", "failed": "red"}.get(status, "yellow")
    console.print(
        f"\n[bold {style}]{status}[/] ({result['stop_reason']})  thread {result['thread_id']}"
    )
    for path, info in result["artifacts"].items():
        colour = _STATUS_STYLE.get(info["status"], "white")
        console.print(f"  [{colour}]{info['status']:>7}[/] {path} ({info['bytes']} bytes)")
    if result["final_answer"]:
        console.print(f"\n{result['final_answer']}")
    escalation = result.get("escalation")
    if escalation and status in ("awaiting_input", "budget_exhausted"):
        console.print(f"\n[bold]question[/]: {escalation['question']}")
        for option in escalation.get("suggested_responses") or []:
            console.print(f"  - {option}")
        console.print(f'\nanswer with: deepreflect resume {result["thread_id"]} "<answer>"')
    for issue in result["open_issues"][:5]:
        console.print(f"  [red]open[/] {issue.get('step_id')}: {_short(issue.get('evidence', ''))}")
