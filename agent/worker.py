"""What one subagent does for one plan step, as plain functions testable without a graph.

Draft through a bounded tool-calling loop over the VFS tools, check the artifact, turn a
failed check into a grounded critique, revise (patch or rewrite) inside ``revise_loop``, and
report the outcome as file entries and trajectory events.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ConfigDict, Field

from agent.checks import run_check
from agent.controller import LoopConfig, revise_loop
from agent.critic import critique_from_check
from agent.errors import ErrorClass, classify, describe
from agent.models import Metered, merge_usage
from agent.prompts import render
from agent.vfs import PathError, Workspace, evidence_line, file_entry, scratch_prefix

MAX_TOOL_TURNS = 12
_TIMING = re.compile(r"\d+\.\d+s")  # pytest durations differ between identical failures

# Tool arguments come from the model. LangGraph serialises what a node returns with msgpack,
# which gives up at a few hundred levels of nesting and on integers beyond 64 bits, and a
# failed write would crash the thread at every resume; so arguments nested deeper than
# MAX_ARG_DEPTH (or holding more than MAX_ARG_VALUES values) are refused as a tool error,
# and the trajectory keeps only a summary bounded by the SUMMARY_* limits.
MAX_ARG_DEPTH = 32
MAX_ARG_VALUES = 100_000
SUMMARY_DEPTH = 3
SUMMARY_ITEMS = 10
SUMMARY_CHARS = 80
MAX_NAME_CHARS = 64
_INT64 = 2**63


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _PathArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Relative POSIX path, e.g. src/app.py")


class _WriteArgs(_PathArgs):
    content: str = Field(description="The whole new content of the file.")


class _EditArgs(_PathArgs):
    old: str = Field(description="The exact passage to replace; it must occur exactly once.")
    new: str = Field(description="The replacement text.")


def vfs_tools(workspace: Workspace) -> list[BaseTool]:
    """The four filesystem tools, bound to one subagent's workspace."""

    def ls() -> str:
        return "\n".join(workspace.ls()) or "(no files)"

    def read_file(path: str) -> str:
        return workspace.read(path)

    def write_file(path: str, content: str) -> str:
        written = workspace.write(path, content)
        return f"wrote {written} ({_utf8_size(content)} bytes)"

    def edit_file(path: str, old: str, new: str) -> str:
        edited = workspace.edit(path, old, new)
        return f"edited {edited}"

    specs: list[tuple[Callable[..., str], type[BaseModel], str]] = [
        (ls, _NoArgs, "List the files you can read."),
        (read_file, _PathArgs, "Read one file."),
        (write_file, _WriteArgs, "Create or replace a file you may write."),
        (edit_file, _EditArgs, "Replace one exact, unique passage of a file (a targeted patch)."),
    ]
    return [
        StructuredTool.from_function(func=fn, name=fn.__name__, description=doc, args_schema=args)
        for fn, args, doc in specs
    ]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _children(value: Any) -> Iterable[Any] | None:
    """The values inside a container (a dict's values, a list's items), None for a scalar."""
    if isinstance(value, Mapping):
        return value.values()
    if isinstance(value, list | tuple):
        return value
    return None


def arguments_problem(args: Mapping[str, Any]) -> str | None:
    """Why tool arguments are refused before anything uses them: nested deeper than
    MAX_ARG_DEPTH or holding more than MAX_ARG_VALUES values. Iterative, so arguments nested
    thousands deep cannot exhaust Python's recursion limit here either."""
    stack: list[tuple[Any, int]] = [(args, 1)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_ARG_VALUES:
            return f"they hold more than {MAX_ARG_VALUES} values"
        children = _children(value)
        if children is None:
            continue
        if depth > MAX_ARG_DEPTH:
            return f"they are nested more than {MAX_ARG_DEPTH} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def summarise_value(value: Any, depth: int = 0) -> Any:
    """A bounded, JSON-safe summary of a tool argument for the trajectory: short strings and
    small numbers as they are, long strings as their size, containers cut at SUMMARY_DEPTH
    levels and SUMMARY_ITEMS items, anything else by its type name; never whole contents."""
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else f"<{value.bit_length()}-bit integer>"
    if isinstance(value, str):
        return value if len(value) <= SUMMARY_CHARS else f"<{_utf8_size(value)} bytes>"
    if isinstance(value, Mapping | list | tuple):
        if depth >= SUMMARY_DEPTH:
            kind = "object" if isinstance(value, Mapping) else "list"
            return f"<{kind} of {len(value)} items>"
        more = len(value) - SUMMARY_ITEMS
        if isinstance(value, Mapping):
            summary = {
                _clip(str(key), SUMMARY_CHARS): summarise_value(item, depth + 1)
                for key, item in islice(value.items(), SUMMARY_ITEMS)
            }
            return summary | ({"…": f"<{more} more keys>"} if more > 0 else {})
        items = [summarise_value(item, depth + 1) for item in islice(value, SUMMARY_ITEMS)]
        return items + ([f"<{more} more items>"] if more > 0 else [])
    return f"<{type(value).__name__}>"


def tool_name(call: Mapping[str, Any]) -> str:
    """The name a tool call gives, bounded, for messages and the trajectory ("?" if none)."""
    name = call.get("name")
    return _clip(name if isinstance(name, str) else repr(name), MAX_NAME_CHARS) if name else "?"


def execute_tool_call(call: Mapping[str, Any], tools: Mapping[str, BaseTool]) -> tuple[str, bool]:
    """Run one tool call; errors come back as text for the model, never as an exception."""
    name = call.get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        shown = _clip(repr(name), MAX_NAME_CHARS + 2)
        return f"invalid_input: unknown tool {shown}; available: {', '.join(tools)}", False
    args = call.get("args")
    if not isinstance(args, Mapping):
        return f"invalid_input: arguments of {name} must be an object", False
    if problem := arguments_problem(args):
        return f"invalid_input: the arguments of {name} are refused: {problem}", False
    try:
        schema = tool.args_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema.model_validate(dict(args))  # langchain skips this for tools without args
        return str(tool.invoke(dict(args))), True
    except PathError as exc:
        text = str(exc)
        prefix = "" if text.startswith("permission_denied") else "invalid_input: "
        return prefix + text, False
    except GraphBubbleUp:
        raise  # LangGraph's control flow (a tool that calls interrupt()), not a tool error
    except Exception as exc:  # a tool error goes back to the model with its class
        return f"{classify(exc).value}: {describe(exc)}", False


def _defuse(call: ToolCall) -> None:
    """Replace refused arguments by their summary in the conversation the model sees next:
    the provider's client serialises them again (json.dumps), and arguments too deep for
    us are too deep for it."""
    args = call.get("args")
    if isinstance(args, Mapping) and arguments_problem(args):
        call["args"] = summarise_value(args)


def invalid_call_error(call: Mapping[str, Any]) -> str:
    """The tool error for a call whose arguments did not parse (``invalid_tool_calls``):
    the parser's reason, never the arguments themselves, which may be huge."""
    raw = call.get("args")
    reason = _clip(" ".join(str(call.get("error") or "they could not be parsed").split()), 200)
    if isinstance(raw, str):
        try:
            json.loads(raw)
        except json.JSONDecodeError as exc:
            reason = str(exc)
        except RecursionError:
            reason = "they are nested too deeply"
    return (
        f"invalid_input: the arguments of {tool_name(call)} are not valid JSON: {reason}; "
        "call the tool again with one JSON object"
    )


@dataclass
class StepRun:
    """Everything one step produced, ready to become a state update."""

    files: dict[str, Any] = field(default_factory=dict)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)


def defect_signature(step_id: str, issues: Sequence[Mapping[str, Any]]) -> str | None:
    """Hash of a step's blocking evidence, stable across runs (timings removed)."""
    blocking = [i for i in issues if i.get("severity") == "blocking"]
    if not blocking:
        return None
    parts = [f"{i.get('id')}:{_TIMING.sub('', str(i.get('evidence', '')))}" for i in blocking]
    text = "|".join(parts)
    return hashlib.sha256(f"{step_id}|{text}".encode()).hexdigest()[:16]


class StepWorker:
    """Runs one plan step: the revise loop around a tool-calling generator."""

    def __init__(
        self,
        *,
        step: Mapping[str, Any],
        goal: str,
        inputs: Mapping[str, str],
        round_no: int,
        system_prompt: str,
        model: Metered,
        judge: Runnable | None,
        extra_tools: list[BaseTool] | None = None,
        loop_config: LoopConfig | None = None,
        max_tool_turns: int = MAX_TOOL_TURNS,
    ) -> None:
        self.step = step
        self.step_id = str(step["step_id"])
        self.goal = goal
        self.round = round_no
        self.system_prompt = system_prompt
        self.model = model
        self.judge = judge
        self.max_tool_turns = max_tool_turns
        self.loop_config = loop_config or LoopConfig()
        self.workspace = Workspace(
            inputs,
            writable=[step["expected_output"]],
            scratch=scratch_prefix(self.step_id),
        )
        self.tools = {t.name: t for t in vfs_tools(self.workspace) + list(extra_tools or [])}
        self.run = StepRun()

    # -- trajectory ---------------------------------------------------------------------
    def _event(self, action: str, **data: Any) -> None:
        self.run.trajectory.append(
            {
                "round": self.round,
                "step_id": self.step_id,
                "actor": self.step["action"],
                "action": action,
                **data,
            }
        )

    def _error_event(self, exc: BaseException) -> None:
        """An error with its class: reflection fails the run on permission, policy or input
        errors (``rule_fatal_error``) and otherwise treats the step as failed."""
        self._event("error", error_class=classify(exc).value, observation=describe(exc))

    # -- the three callables revise_loop drives ------------------------------------------
    def _task_prompt(self, feedback: Mapping[str, Any] | None) -> list[BaseMessage]:
        step = self.step
        inputs = [p for p in self.workspace.ls() if not p.startswith("work/")]
        values = {
            "goal": self.goal,
            "step_id": self.step_id,
            "instructions": step["instructions"],
            "expected_output": step["expected_output"],
            "done_when": json.dumps(step.get("done_when")),
            "scratch": scratch_prefix(self.step_id),
            "inputs": "\n".join(f"- {p}" for p in inputs) or "(none)",
        }
        if feedback is None:
            human = render("subagent_task", **values)
        else:
            issues = json.dumps(feedback.get("issues", []), indent=1)
            human = render("subagent_revision", **values, mode=feedback.get("mode"), issues=issues)
        return [SystemMessage(self.system_prompt), HumanMessage(human)]

    def generate(self, task: str, feedback: Mapping[str, Any] | None) -> tuple[str, int]:
        before = self.model.tokens
        messages = self._task_prompt(feedback)
        tools = list(self.tools.values())
        for _ in range(self.max_tool_turns):
            answer: AIMessage = self.model.invoke(messages, tools)
            messages.append(answer)
            if not answer.tool_calls and not answer.invalid_tool_calls:
                break
            for call in answer.tool_calls:
                observation, ok = execute_tool_call(call, self.tools)
                messages.append(self._answer_call(call, observation, ok))
                _defuse(call)
            # Arguments that were not valid JSON: tell the model, which must answer every call
            # it made anyway (OpenAI refuses a conversation with an unanswered tool call).
            for bad in answer.invalid_tool_calls:
                messages.append(self._answer_call(bad, invalid_call_error(bad)))
        draft = self.workspace.contents().get(self.step["expected_output"], "")
        return draft, self.model.tokens - before

    def _answer_call(
        self, call: Mapping[str, Any], observation: str, ok: bool = False
    ) -> ToolMessage:
        """Record a tool call in the trajectory (a bounded summary of its arguments: the raw
        text of unparsed ones) and build the tool message that answers it."""
        name = tool_name(call)
        args = call.get("args")
        summary = summarise_value(args if args is not None else {})
        params = summary if isinstance(summary, dict) else {"arguments": summary}  # always a dict
        self._event(name, params=params, observation=observation[:200], ok=ok)
        call_id = call.get("id")
        return ToolMessage(
            observation,
            tool_call_id=call_id if isinstance(call_id, str) else "",
            name=name,
        )

    def gather_evidence(self, draft: str) -> dict[str, Any]:
        files = self.workspace.contents()
        path = self.step["expected_output"]
        report = dict(
            run_check(self.step.get("done_when"), files, path, judge=self.judge, task=self.goal)
        )
        self._event(
            "check",
            check={k: report[k] for k in ("kind", "passed", "score")},
            observation=str(report.get("evidence", ""))[:300],
        )
        return report

    def critique(self, task: str, draft: str, evidence: Mapping[str, Any]) -> tuple[Any, int]:
        # The check is the grounded critic (seed 003); a rubric check already asked the judge.
        return critique_from_check(dict(evidence)), 0

    # -- the whole step -----------------------------------------------------------------
    def execute(self) -> StepRun:
        """Run the step to a stop reason; a fatal model error is recorded, not raised."""
        path = self.step["expected_output"]
        try:
            result = revise_loop(
                self.step["instructions"],
                self.generate,
                self.gather_evidence,
                self.critique,
                config=self.loop_config,
            )
        except Exception as exc:
            error_class = classify(exc)
            if isinstance(exc, GraphBubbleUp) or error_class is ErrorClass.TRANSIENT:
                raise  # the node's RetryPolicy retries the whole step
            self._error_event(exc)
            self.run.usage = merge_usage(self.run.usage, self.model.usage)
            return self.run
        if result.error is not None:  # the loop stopped on it but kept the best draft
            self._error_event(result.error)
        best = result.best or ""
        if self.workspace.contents().get(path, None) != best and best:
            self.workspace.write(path, best)
        report = dict(result.evidence or {}) or {
            "kind": "none",
            "passed": False,
            "score": 0.0,
            "evidence": f"{path} was not produced",
        }
        passed = bool(result.converged and report.get("passed"))
        issues = list(result.issues or [])
        signature = (
            None
            if passed
            else defect_signature(
                self.step_id,
                issues
                or [
                    {"id": "check", "severity": "blocking", "evidence": report.get("evidence", "")}
                ],
            )
        )
        for scratch_path, content in self.workspace.written.items():
            if scratch_path != path:
                self.run.files[scratch_path] = file_entry(
                    content, step=self.round, status="active", step_id=self.step_id
                )
        if best or path in self.workspace.written:
            self.run.files[path] = file_entry(
                best,
                step=self.round,
                status="done" if passed else "failed",
                step_id=self.step_id,
                check=report,
                evidence_line=evidence_line(report, content=best),
                stop_reason=result.stop_reason,
                rounds=result.rounds,
                defect=signature,
            )
        critique_path = f"{scratch_prefix(self.step_id)}critique.json"
        if passed:
            if critique_path in self.workspace.ls():
                self.run.files[critique_path] = None
        else:
            body = json.dumps(
                {"step_id": self.step_id, "stop_reason": result.stop_reason, "open_issues": issues},
                indent=1,
            )
            self.run.files[critique_path] = file_entry(
                body,
                step=self.round,
                status="active",
                step_id=self.step_id,
                kind="critique",
                defect=signature,
            )
        self._event(
            "result",
            passed=passed,
            stop_reason=result.stop_reason,
            rounds=result.rounds,
            defect=signature,
            observation=str(report.get("evidence", ""))[:300],
        )
        self.run.usage = merge_usage(self.run.usage, self.model.usage)
        return self.run
