"""What one subagent does for one plan step, as plain functions testable without a graph.

Draft through a bounded tool-calling loop over the VFS tools (``agent.tools.filesystem``), check the
artifact, turn a failed check into a grounded critique, revise (patch or rewrite) inside
``revise_loop``, and report the outcome as file entries and trajectory events.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from agent.checks import run_check
from agent.checks.critique import critique_from_check
from agent.controller.context_window import TRIM_PASSES, ContextWindowExceeded, trim_tool_results
from agent.controller.replay import ModelReplay
from agent.controller.revise import LoopConfig, LoopResult, arevise_loop
from agent.controller.stubs import unimplemented_functions
from agent.coroutines import run_sync
from agent.errors import ErrorClass, classify, describe, is_context_overflow
from agent.events import check_event, emit
from agent.models.factory import Metered, merge_usage, model_key, with_metadata
from agent.prompts import render
from agent.tools.binding import TOOL_CALLING
from agent.tools.execute import AwaitingHuman, CallScope, ToolCaller
from agent.tools.filesystem import (
    defuse,
    invalid_call_error,
    summarise_value,
    tool_name,
    vfs_tools,
)
from agent.tools.text_calls import fenced_file, tool_calls_from_text
from agent.vfs.entries import Workspace, evidence_line, file_entry, scratch_prefix
from agent.vocabulary import FileStatus

MAX_TOOL_TURNS = 12
_TIMING = re.compile(r"\d+\.\d+s")  # pytest durations differ between identical failures


@dataclass
class StepRun:
    """Everything one step produced, ready to become a state update."""

    files: dict[str, Any] = field(default_factory=dict)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    approvals: dict[str, Any] = field(default_factory=dict)
    """Requests the step stopped on (``agent.tools.approvals``), by id: empty unless it waits."""
    replay: dict[str, Any] = field(default_factory=dict)
    """The step's model answers to replay when it runs again after waiting (by step id;
    ``None`` clears them once it has finished)."""


def defect_signature(step_id: str, issues: Sequence[Mapping[str, Any]]) -> str | None:
    """Hash of a step's blocking evidence, stable across runs (timings removed)."""
    blocking = [i for i in issues if i.get("severity") == "blocking"]
    if not blocking:
        return None
    # a JSON list, not text joined with ":" and "|": evidence the artifact wrote may hold both
    parts = [[str(i.get("id")), _TIMING.sub("", str(i.get("evidence", "")))] for i in blocking]
    text = json.dumps([step_id, parts], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


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
        scope: CallScope | None = None,
        replay: Mapping[str, Any] | None = None,
        tool_calling: str = "auto",
        databases: Mapping[str, str] | None = None,
    ) -> None:
        self.step = step
        self.databases = dict(databases or {})  # declared by the user: what sql checks open
        self.step_id = str(step["step_id"])
        self.goal = goal
        self.round = round_no
        self.system_prompt = system_prompt
        self.model = model
        self.metadata: dict[str, Any] = {
            "step_id": self.step_id,
            "expected_output": step["expected_output"],
            "instructions": step["instructions"],
        }
        # the judge's calls name the step whose artifact they review, beside their own role
        self.judge: Any = with_metadata(judge, self.metadata) if judge is not None else None
        self.revision = 0
        self._rewrite_asked = False  # this draft was asked to rewrite unimplemented functions
        self.max_tool_turns = max_tool_turns
        self.loop_config = loop_config or LoopConfig()
        self.workspace = Workspace(
            inputs,
            writable=[step["expected_output"]],
            scratch=scratch_prefix(self.step_id),
        )
        self.tools = {t.name: t for t in vfs_tools(self.workspace) + list(extra_tools or [])}
        # files the step was given to read (not its own output or scratch): what it reads of
        # them counts as a source, what it reads back of its own writing never does
        own = scratch_prefix(self.step_id)
        self.input_paths = {
            p for p in inputs if p != step["expected_output"] and not p.startswith(own)
        }
        self.tool_outputs: list[str] = []
        """What the step's tools returned, for checks that trace claims to it (citations)."""
        self._draft_start: Any = None
        self.caller = ToolCaller(step, self.tools, self.workspace, scope)
        self.replay = ModelReplay(step, self.caller.scope.plan_version, replay)
        if self.judge is not None:
            self.judge = self.replay.judged(self.judge)
        self.tool_calling = tool_calling
        self.model_key = model_key(model.model)
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
        inputs = self._inputs()
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

    def call_metadata(self) -> dict[str, Any]:
        """What each model call of this draft carries besides its role, so traces, chat UIs
        (parallel steps' tokens) and scripted models can tell the calls apart: the step,
        its artifact, ``revision`` (0 for the first draft, then 1, 2, ...) and the files
        the step can read."""
        return {**self.metadata, "revision": self.revision, "inputs": self._inputs()}

    def _inputs(self) -> list[str]:
        """The files the step is told it can read (its scratch space is listed apart)."""
        return [p for p in self.workspace.ls() if not p.startswith("work/")]

    def generate(self, task: str, feedback: Mapping[str, Any] | None) -> tuple[str, int]:
        """``agenerate`` for sync callers (the evaluation harness)."""
        return run_sync(self.agenerate(task, feedback))

    async def agenerate(self, task: str, feedback: Mapping[str, Any] | None) -> tuple[str, int]:
        """One draft: a bounded tool-calling conversation; the artifact is what it wrote."""
        before = self.model.tokens
        self.revision = 0 if feedback is None else self.revision + 1
        messages = self._task_prompt(feedback)
        metadata = self.call_metadata()
        tools = list(self.tools.values())
        nudged = stubbed = self._rewrite_asked = False
        self.caller.new_draft()
        self._draft_start = self._artifact_write()
        for turn in range(self.max_tool_turns):
            bound = tools if TOOL_CALLING.binds(self.tool_calling, self.model_key) else []
            answer = await self._answer(messages, bound, metadata)
            answer, from_text = self._with_text_calls(answer, turn)
            if answer.tool_calls:
                TOOL_CALLING.record(self.model_key, native=not from_text)
            messages.append(answer)
            if not answer.tool_calls and not answer.invalid_tool_calls:
                if not stubbed and (reminder := self._unimplemented_reminder()):
                    messages.append(reminder)
                    stubbed = True
                    continue
                if nudged or self._wrote_this_draft():
                    break
                # seed 002: say exactly what is missing, once, rather than "not produced" later
                path = self.step["expected_output"]
                messages.append(
                    HumanMessage(render("subagent_no_tool_call", path=path, tool="write_file"))
                )
                self._event("no_tool_call", observation=f"reminded to write {path}")
                nudged = True
                continue
            for call in answer.tool_calls:
                try:
                    outcome, note = await self.caller.run(call)
                except AwaitingHuman as waiting:
                    names = ", ".join(f"{r['tool']} ({r['kind']})" for r in waiting.requests)
                    self._event("awaiting_human", observation=f"waits for a human on {names}")
                    raise
                observation, ok = outcome.text, outcome.ok
                if ok and self._is_source(call):
                    self.tool_outputs.append(observation)
                messages.append(
                    self._answer_call(call, observation, ok, from_text=from_text, note=note)
                )
                defuse(call)
            # Arguments that were not valid JSON: tell the model, which must answer every call
            # it made anyway (OpenAI refuses a conversation with an unanswered tool call).
            for bad in answer.invalid_tool_calls:
                messages.append(self._answer_call(bad, invalid_call_error(bad)))
        draft = self.workspace.contents().get(self.step["expected_output"], "")
        return draft, self.model.tokens - before

    async def _answer(
        self, messages: list[BaseMessage], tools: list[Any], metadata: dict[str, Any]
    ) -> AIMessage:
        """The model's next answer; a conversation over the model's context window is asked
        again with its oldest tool results trimmed, then fails the step (not the run)."""
        trimmed = 0
        while True:  # each pass trims at least one tool result, or raises
            try:
                return await self.replay.answer(messages, self.model.ainvoke, tools, metadata)
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                cut = 0
                for keep in TRIM_PASSES:
                    if cut := trim_tool_results(messages, keep=keep):
                        break
                if not cut:
                    self._event("context_window", observation=describe(exc), trimmed=trimmed)
                    raise ContextWindowExceeded(exc, trimmed) from exc
                trimmed += cut
                note = f"over the model's context window: {cut} tool result(s) trimmed"
                self._event("context_trimmed", observation=note, trimmed=cut)

    def _unimplemented_reminder(self) -> HumanMessage | None:
        """Once per draft: the artifact written in it left functions without a body."""
        if not self._wrote_this_draft():
            return None
        path = self.step["expected_output"]
        names = unimplemented_functions(path, self.workspace.contents().get(path, ""))
        if not names:
            return None
        shown = ", ".join(names[:10])
        self._event("unimplemented", observation=f"reminded to implement {shown}"[:200])
        text = render("subagent_unimplemented", path=path, names=shown, tool="write_file")
        self._rewrite_asked = True  # a fenced module in the answer is the artifact again
        return HumanMessage(text)

    def _artifact_write(self) -> Any:
        """The artifact's last write (its content, by identity), None if never written."""
        return self.workspace.written.get(self.step["expected_output"])

    def _wrote_this_draft(self) -> bool:
        """Whether the artifact was written during the current draft (a revision starts
        with the earlier draft's file, which does not count)."""
        current = self._artifact_write()
        return current is not None and current is not self._draft_start

    def _is_source(self, call: Mapping[str, Any]) -> bool:
        """Whether a successful call's result is evidence from outside the step: any tool but
        the write tools and ``ls``, and ``read_file`` only of the step's inputs (a failed
        call's error repeats the model's own arguments, and is never a source either)."""
        name = call.get("name")
        if name in ("ls", "write_file", "edit_file"):
            return False
        if name == "read_file":
            return (call.get("args") or {}).get("path") in self.input_paths
        return True

    def _with_text_calls(self, answer: AIMessage, turn: int) -> tuple[AIMessage, bool]:
        """``answer``, or, when it called no tool but wrote calls to this step's tools as
        text (small models do: a JSON object, ``<tool_call>`` tags), the same answer with
        those calls made real, so they run and are answered like any other."""
        if answer.tool_calls or answer.invalid_tool_calls:
            return answer, False
        text = answer.content if isinstance(answer.content, str) else answer.text
        prefix = f"text-{self.step_id}-{self.revision}-{turn}-"
        calls = tool_calls_from_text(text, list(self.tools), id_prefix=prefix)
        path = self.step["expected_output"]
        fence_counts = not self._wrote_this_draft() or self._rewrite_asked
        if not calls and "write_file" in self.tools and fence_counts:
            content = fenced_file(text, path)  # the artifact itself, in a code fence
            if content is not None:
                args = {"path": path, "content": content}
                calls = [tool_call(name="write_file", args=args, id=f"{prefix}fence")]
        if not calls:
            return answer, False
        return answer.model_copy(update={"tool_calls": calls}), True

    def _answer_call(
        self,
        call: Mapping[str, Any],
        observation: str,
        ok: bool = False,
        *,
        from_text: bool = False,
        note: Mapping[str, Any] | None = None,
    ) -> ToolMessage:
        """Record a tool call in the trajectory (a bounded summary of its arguments: the raw
        text of unparsed ones) and build the tool message that answers it."""
        name = tool_name(call)
        args = call.get("args")
        summary = summarise_value(args if args is not None else {})
        params = summary if isinstance(summary, dict) else {"arguments": summary}  # always a dict
        extra = {"parsed_from_text": True} if from_text else {}
        extra |= dict(note or {})  # idempotency key, reused, approval
        self._event(name, params=params, observation=observation[:200], ok=ok, **extra)
        call_id = call.get("id")
        return ToolMessage(
            observation,
            tool_call_id=call_id if isinstance(call_id, str) else "",
            name=name,
        )

    async def gather_evidence(self, draft: str) -> dict[str, Any]:
        """Run the step's check on what the workspace holds, off the event loop (checks run
        sandboxed processes and may call the judge synchronously)."""
        files = self.workspace.contents()
        path = self.step["expected_output"]
        spec = self.step.get("done_when")
        report = dict(
            await asyncio.to_thread(
                run_check,
                spec,
                files,
                path,
                judge=self.judge,
                task=self.goal,
                tool_outputs=tuple(self.tool_outputs),
                databases=self.databases,
            )
        )
        self._event(
            "check",
            check={k: report[k] for k in ("kind", "passed", "score")},
            observation=str(report.get("evidence", ""))[:300],
            revision=self.revision,
        )
        emit(check_event(self.step_id, self.revision, report))
        return report

    def critique(self, task: str, draft: str, evidence: Mapping[str, Any]) -> tuple[Any, int]:
        # The check is the grounded critic (seed 003); a rubric check already asked the judge.
        return critique_from_check(dict(evidence)), 0

    # -- the whole step -----------------------------------------------------------------
    def execute(self) -> StepRun:
        """``aexecute`` for sync callers."""
        return run_sync(self.aexecute())

    async def aexecute(self) -> StepRun:
        """Run the step to a stop reason; a fatal model error is recorded, not raised."""
        try:
            result = await arevise_loop(
                self.step["instructions"],
                self.agenerate,
                self.gather_evidence,
                self.critique,
                config=self.loop_config,
            )
        except AwaitingHuman as waiting:
            # stop here, keeping what a re-run needs: the requests and the answers so far
            self.run.approvals = {r["id"]: r for r in waiting.requests}
            self.run.replay = {self.step_id: self.replay.record()}
        except Exception as exc:
            error_class = classify(exc)
            if isinstance(exc, GraphBubbleUp) or error_class is ErrorClass.TRANSIENT:
                raise  # the node's RetryPolicy retries the whole step
            self._error_event(exc)
        else:
            if result.error is not None:  # the loop stopped on it but kept the best draft
                self._error_event(result.error)
            self._record(result)
            if self.replay.given:
                self.run.replay = {self.step_id: None}
        self.run.usage = merge_usage(self.run.usage, self.model.usage)
        return self.run

    def _record(self, result: LoopResult) -> None:
        """The step's files (artifact, scratch, critique) and its result event."""
        path = self.step["expected_output"]
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
        fallback = [{"id": "check", "severity": "blocking", "evidence": report.get("evidence", "")}]
        signature = None if passed else defect_signature(self.step_id, issues or fallback)
        for scratch_path, content in self.workspace.written.items():
            if scratch_path != path:
                self.run.files[scratch_path] = file_entry(
                    content, step=self.round, status=FileStatus.ACTIVE, step_id=self.step_id
                )
        if best or path in self.workspace.written:
            self.run.files[path] = file_entry(
                best,
                step=self.round,
                status=FileStatus.DONE if passed else FileStatus.FAILED,
                step_id=self.step_id,
                check=report,
                evidence_line=evidence_line(report, content=best),
                stop_reason=result.stop_reason,
                rounds=result.rounds,
                defect=signature,
            )
        self._critique_file(passed, result.stop_reason, issues, signature)
        self._event(
            "result",
            passed=passed,
            stop_reason=result.stop_reason,
            rounds=result.rounds,
            defect=signature,
            observation=str(report.get("evidence", ""))[:300],
        )

    def _critique_file(
        self, passed: bool, stop_reason: str, issues: list[dict[str, Any]], signature: str | None
    ) -> None:
        """A failed step leaves its open issues in ``work/<step_id>/critique.json`` (reflection
        sees it); a passing one removes an earlier critique."""
        critique_path = f"{scratch_prefix(self.step_id)}critique.json"
        if passed:
            if critique_path in self.workspace.ls():
                self.run.files[critique_path] = None
            return
        body = json.dumps(
            {"step_id": self.step_id, "stop_reason": stop_reason, "open_issues": issues}, indent=1
        )
        self.run.files[critique_path] = file_entry(
            body,
            step=self.round,
            status=FileStatus.ACTIVE,
            step_id=self.step_id,
            kind="critique",
            defect=signature,
        )
