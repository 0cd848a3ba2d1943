"""Live progress for the terminal: one readable line per thing that happened in a node.

Everything printed here that a model, a user or a tool wrote (goals, ids, paths, evidence,
reasons, questions, answers) goes out as plain text through :func:`line`, never as rich
markup: ``[/bold]`` in a goal would otherwise raise ``MarkupError`` (and break every command
that prints that thread) and ``[link=...]`` would print a hyperlink the agent chose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.events import is_progress
from agent.graph.result import SUBAGENT_KIND, Result
from agent.vfs.quoting import screen_text, strip_invisible
from agent.vocabulary import WAITING, Decision, FileStatus, Status, StopReason

_STATUS_STYLE: dict[str, str] = {
    FileStatus.DONE: "green",
    FileStatus.FAILED: "red",
    FileStatus.ACTIVE: "yellow",
}
_RESULT_STYLE: dict[str, str] = {Status.SUCCESS: "green", Status.FAILED: "red"}
# C0 and C1 control characters but newline and tab, and the line and paragraph separators:
# shown as \xNN / \uNNNN, never sent to the terminal, where an escape sequence in model text
# could recolour, move or retitle it (a separator breaks a line some terminals do not show).
_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"
} | {0x2028: "\\u2028", 0x2029: "\\u2029"}
Styled = tuple[object, str]


def printable(value: object) -> str:
    """``value`` as text with every terminal control character made visible and no escape
    sequence or invisible (bidi) character."""
    return strip_invisible(str(value)).translate(_CONTROLS)


def line(*parts: object | Styled) -> Text:
    """A line of output: ``(text, style)`` pieces in our style, anything else as plain text."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple) and len(part) == 2 and isinstance(part[1], str):
            text.append(printable(part[0]), style=part[1])
        else:
            text.append(printable(part))
    return text


class Progress:
    """Prints node updates as they stream (plan, subagents, checks, decisions)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)

    def __call__(self, node: str, update: Mapping[str, Any]) -> None:
        handler = getattr(self, f"_{node}", None)
        if handler is not None:
            handler(update)

    def say(self, *parts: object | Styled) -> None:
        """Print one :func:`line`."""
        self.console.print(line(*parts))

    def _planner(self, update: Mapping[str, Any]) -> None:
        plan = update.get("plan")
        if plan:
            table = Table(title=line(f"plan v{plan['version']}"), title_justify="left", box=None)
            for column in ("step", "action", "after", "artifact", "done when"):
                table.add_column(column)
            for step in plan["steps"]:
                check = step["done_when"]
                kind = check.get("kind", "?") if isinstance(check, dict) else "rubric"
                cells = (
                    step["step_id"],
                    step["action"],
                    ",".join(map(str, step["depends_on"])) or "-",
                    step["expected_output"],
                    kind,
                )
                table.add_row(*(line(cell) for cell in cells))
            self.console.print(table)
        if update.get("dispatch"):
            together = " in parallel" if len(update["dispatch"]) > 1 else ""
            names = ", ".join(map(str, update["dispatch"]))
            self.say((f"round {update.get('step')}", "bold"), f": running {names}{together}")
        if update.get("status") == Status.FAILED:
            self.say(("rejected", "red"), f": {_reason(update)}")

    def _subagent(self, update: Mapping[str, Any]) -> None:
        for event in update.get("trajectory") or []:
            action, step_id = event.get("action"), event.get("step_id")
            if action == "check":
                ok = event["check"]["passed"]
                mark = ("pass", "green") if ok else ("fail", "red")
                why = "" if ok else f" — {_short(event.get('observation', ''))}"
                self.say(f"  {step_id} check {event['check']['kind']}: ", mark, why)
            elif action in ("write_file", "edit_file"):
                params = event.get("params") or {}
                self.say(f"  {step_id} {event['actor']} {action} {params.get('path')}")
                if action == "edit_file" and event.get("ok"):
                    # the patch itself: the trajectory keeps short passages, sizes of long ones
                    self.say(f"      - {_short(params.get('old', ''))}")
                    self.say(f"      + {_short(params.get('new', ''))}")
            elif action == "execute":
                params = event.get("params") or {}
                first = (str(event.get("observation") or "").splitlines() or [""])[0]
                self.say(
                    f"  {step_id} {event['actor']} execute {_short(params.get('command', ''))}"
                )
                self.say(f"      → {_short(first)}")
            elif action == "result":
                passed = bool(event.get("passed"))
                outcome = ("done", "green") if passed else ("failed", "red")
                fresh = event.get("fresh_drafts")
                drew = f" and {fresh} fresh draft(s)" if fresh else ""
                after = (
                    f" after {event.get('rounds')} revision(s){drew} ({event.get('stop_reason')})"
                )
                self.say(f"  {step_id} ", outcome, after)
            elif action == "error":
                self.say(f"  {step_id} ", ("error", "red"), f" {event.get('observation')}")

    def _reflection(self, update: Mapping[str, Any]) -> None:
        for entry in update.get("decisions") or []:
            who = "rule" if entry.get("by") == "rule" else "model"
            forced = " (forced)" if entry.get("forced") else ""
            self.say(
                ("reflection", "bold magenta"),
                f" → {entry.get('decision')}{forced} by {who}: {entry.get('reason', '')}  ",
                (f"depth {entry.get('depth')}", "dim"),
            )

    def _escalate(self, update: Mapping[str, Any]) -> None:
        """The escalate node reports only once answered (a pause writes nothing)."""
        if update.get("messages"):
            self.say(("answered", "yellow"), ": the planner takes the answer in")
        elif update.get("stop_reason") == StopReason.ACCEPTED_BY_HUMAN:
            self.say(("accepted", "green"), ": finishing with the artifacts as they are")
        elif update.get("stop_reason") == StopReason.STOPPED_BY_HUMAN:
            self.say(("stopped", "red"), " by the human")
        elif update.get("status") == Status.RUNNING:
            self.say(("continue", "yellow"), ": the turn goes on with fresh budgets")


def _short(text: str, limit: int = 140) -> str:
    return screen_text(text, limit, markdown=False)


def _reason(update: Mapping[str, Any]) -> str:
    decisions = update.get("decisions") or [{}]
    return decisions[-1].get("reason", "")


def print_result(console: Console, result: Result) -> None:
    """The closing lines: outcome, artifacts, and for a pause the question and how to answer."""
    status, thread_id = result["status"], result["thread_id"]
    style = _RESULT_STYLE.get(status, "yellow")
    console.print()
    console.print(
        line((status, f"bold {style}"), f" ({result['stop_reason']})  thread {thread_id}")
    )
    for path, info in result["artifacts"].items():
        colour = _STATUS_STYLE.get(info["status"], "white")
        console.print(
            line("  ", (f"{info['status']:>7}", colour), f" {path} ({info['bytes']} bytes)")
        )
    if result["final_answer"]:
        console.print()
        console.print(line(result["final_answer"]))
    elif status == Status.FAILED and result.get("message"):
        console.print()
        console.print(line(str(result["message"])))
    escalation = result.get("escalation")
    if escalation and status in WAITING:
        console.print()
        console.print(line(("question", "bold"), f": {escalation.get('question')}"))
        if escalation.get("kind") == "approval":
            _print_requests(console, escalation, thread_id)
        else:
            for option in escalation.get("suggested_responses") or []:
                label = option.get("label") if isinstance(option, Mapping) else option
                console.print(line(f"  - {label}"))
            console.print()
            console.print(line(f'answer with: deepreflect resume {thread_id} "<answer>"'))
            # a subagent's own graph takes the answer as it is: it knows no accept or stop
            if escalation.get("kind") != SUBAGENT_KIND:
                _print_accept_or_stop(console, result, thread_id)
    for issue in result["open_issues"][:5]:
        evidence = _short(issue.get("evidence", ""))
        console.print(line("  ", ("open", "red"), f" {issue.get('step_id')}: {evidence}"))


def _print_requests(console: Console, escalation: Mapping[str, Any], thread_id: str | None) -> None:
    """The tool calls a thread waits on, and how to decide them (``agent.tools.approvals``)."""
    import json

    for request in escalation.get("action_requests") or []:
        args = json.dumps(request.get("args"), ensure_ascii=False)
        shown = args if len(args) <= 300 else args[:299] + "…"
        console.print(line(f"  - {request.get('name')}({shown})  step {request.get('step_id')}"))
        if request.get("idempotency_key"):
            console.print(
                line(f"    outcome unknown; idempotency key {request['idempotency_key']}")
            )
    console.print()
    console.print(line(f"approve all: deepreflect resume {thread_id} approve  (or reject)"))
    console.print(
        line(
            f"or decide each: deepreflect resume {thread_id} "
            """'{"decisions": [{"type": "approve"}, {"type": "reject", "message": "why"}]}'"""
        )
    )


def history(values: Mapping[str, Any]) -> list[str]:
    """A thread's rounds as ``show`` prints them: each decision, and what the human said or
    did where the thread paused (an answer, accept, stop, a raised budget)."""
    answers = iter(_human_answers(values.get("messages") or []))
    out: list[str] = []
    for entry in values.get("decisions") or []:
        reason = entry.get("reason", "")
        if entry.get("stop_reason") == StopReason.STOPPED_BY_HUMAN:
            out.append("  human: stopped the run")
            continue
        if entry.get("by") == "human":
            out.append(f"  human: {reason or entry.get('decision')}")
            continue
        where = f"round {entry['round']}" if entry.get("round") is not None else "end"
        out.append(f"  {where}: {entry.get('decision')} by {entry.get('by')} — {reason}")
        if entry.get("decision") == Decision.ESCALATE:
            answer = next(answers, None)
            if answer is not None:
                out.append(f"  human answered: {answer}")
    if values.get("stop_reason") == StopReason.ACCEPTED_BY_HUMAN:
        out.append("  human: accepted the artifacts as they are")
    return out


def _human_answers(messages: list[Any]) -> list[str]:
    """The text of every user message that answered a question (the ones that follow an AI
    message), in order; the turn's first message is the goal, not an answer."""
    out, after_ai = [], False
    for message in messages:
        if is_progress(message):  # the run's own narration, not a question asked
            continue
        kind = message.get("type") if isinstance(message, Mapping) else getattr(message, "type", "")
        content = message.get("content") if isinstance(message, Mapping) else message.content
        if kind == "human" and after_ai:
            out.append(str(content)[:300])
        after_ai = kind == "ai"
    return out


def _print_accept_or_stop(console: Console, result: Result, thread_id: str | None) -> None:
    """The other answers to an escalation: accept what is written (if anything is), or stop."""
    if any(info["status"] != "missing" for info in result["artifacts"].values()):
        console.print(line(f"   or accept: deepreflect resume {thread_id} --accept  (or --stop)"))
    else:  # nothing was written: there is nothing to accept
        console.print(line(f"     or stop: deepreflect resume {thread_id} --stop"))
