"""What one subagent does for one plan step, composed from parts testable without a graph.

Each draft is a bounded tool-calling conversation over the VFS tools
(:mod:`agent.controller.tool_loop`, from the messages of :mod:`agent.controller.prompting`);
its check (:mod:`agent.controller.evidence`) becomes a grounded critique
(:mod:`agent.controller.critique`); ``revise_loop`` decides whether to patch, rewrite or
stop; and the outcome becomes file entries and trajectory events
(:mod:`agent.controller.records`). A data file is printed by a program the model writes
(:mod:`agent.controller.computed`), and a step citing sources gets its search made by code
before its first draft (:func:`agent.controller.sources.search_first`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from agent.checks.registry import missing_runner
from agent.controller.computed import as_file, is_computed, program_path, read_reply, run_program
from agent.controller.context_window import ContextWindowExceeded
from agent.controller.critique import critique_check, step_judge
from agent.controller.evidence import StepEvidence
from agent.controller.focus import focus_for, splice
from agent.controller.graph_steps import graph_draft
from agent.controller.prompting import (
    direct_inputs,
    direct_messages,
    feedback_evidence,
    focused_messages,
    readable_inputs,
    task_messages,
)
from agent.controller.records import StepRecords, StepRun
from agent.controller.replay import ModelReplay
from agent.controller.revise import LoopConfig, arevise_loop
from agent.controller.sources import CitationSources, search_first
from agent.controller.tool_loop import Draft, ToolLoop
from agent.errors import ErrorClass, classify
from agent.limits import MAX_TOOL_TURNS, REPEATED_TEMPERATURE, TOOL_RESULT_CHARS
from agent.models.factory import Metered, merge_usage, model_key
from agent.sandbox import SandboxUnavailable
from agent.store.memories import MAX_MEMORY_BYTES, MEMORY_PREFIX
from agent.tools.command import EXECUTE
from agent.tools.execute import AwaitingHuman, CallScope, ToolCaller
from agent.tools.filesystem import vfs_tools
from agent.tools.text_calls import fenced_file
from agent.vfs.entries import PathError, Workspace, scratch_prefix
from agent.vfs.folder import Folder
from agent.vocabulary import ToolCalling


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
        computed_data: bool = False,
        unchanged_fails: bool = False,
        as_asked: bool = False,
        as_given: str | None = None,
        tool_result_chars: int = TOOL_RESULT_CHARS,
        memory: bool = False,
        graph: Runnable | None = None,
        folder: Folder | None = None,
    ) -> None:
        self.step = step
        self.graph = graph  # the user's compiled graph running this step, if any
        self.step_id = str(step["step_id"])
        self.goal = goal
        self.system_prompt = system_prompt
        self.model = model
        self.loop_config = loop_config or LoopConfig()
        self.revision = 0  # of the current draft: 0 for the first, then 1, 2, ...
        self.metadata: dict[str, Any] = {
            "step_id": self.step_id,
            "expected_output": step["expected_output"],
            "instructions": step["instructions"],
        }
        # execute alone does not take a step off the direct prompt: it helps a step that
        # converses through its tools, and a direct answer needs none
        self.extra_tools = any(t.name != EXECUTE for t in extra_tools or [])
        self.computed = computed_data and is_computed(str(step["expected_output"]))
        """A data file a program prints, when asked directly (:mod:`agent.controller.computed`)."""
        self.as_asked = as_asked
        """The step is the whole goal: its first draft is asked as the goal is written
        (``agent.controller.prompting.direct_messages``)."""
        self.failure: str | None = None  # why the current draft printed no artifact
        self.workspace = Workspace(
            inputs,
            writable=[step["expected_output"]],
            scratch=scratch_prefix(self.step_id),
            shared=MEMORY_PREFIX if memory else None,
            shared_max_bytes=MAX_MEMORY_BYTES,
            folder=folder,
        )
        self.given = self.workspace.found(step["expected_output"])
        self.searched: list[BaseMessage] | None = None  # the search made before any draft
        tools = {t.name: t for t in vfs_tools(self.workspace) + list(extra_tools or [])}
        caller = ToolCaller(step, tools, self.workspace, scope)
        self.replay = ModelReplay(step, caller.scope.plan_version, replay)
        self.records = StepRecords(step, round_no)
        sources = self.sources = CitationSources(step, inputs)
        self.tool_loop = ToolLoop(
            model=model,
            replay=self.replay,
            caller=caller,
            records=self.records,
            sources=sources,
            max_turns=max_tool_turns,
            tool_calling=tool_calling,
            result_chars=tool_result_chars,
        )
        self.evidence = StepEvidence(
            step,
            self.workspace,
            self.records,
            goal=goal,
            judge=step_judge(judge, self.metadata, self.replay),
            sources=sources,
            databases=databases,
            found=self._as_given(inputs, as_given) if unchanged_fails else None,
        )

    def _as_given(self, inputs: Mapping[str, str], as_given: str | None) -> str | None:
        """The user's own text of the step's file: ``as_given`` (a user's file in the thread,
        as the user gave it), else the folder's when the thread has no copy. None for a file
        an earlier step wrote: leaving that as it was can be right (it already passes)."""
        if as_given is not None:
            return as_given
        if self.step["expected_output"] not in inputs and self.given:
            return self.given
        return None

    def call_metadata(self) -> dict[str, Any]:
        """What each model call of this draft carries besides its role, so traces, chat UIs
        (parallel steps' tokens) and scripted models can tell the calls apart: the step,
        its artifact, ``revision`` and the files the step can read."""
        inputs = readable_inputs(self.workspace)
        return {**self.metadata, "revision": self.revision, "inputs": inputs}

    def direct_inputs(self, *, revising: bool = False) -> dict[str, str] | None:
        """The files a direct prompt carries, or None when this step needs its tools (a
        revision, once they returned sources, does not: ``prompting.direct_inputs``)."""
        sourced = revising and bool(self.sources.outputs)
        return direct_inputs(
            self.step, self.workspace, extra_tools=self.extra_tools, sourced=sourced
        )

    async def agenerate(self, task: str, feedback: Mapping[str, Any] | None) -> tuple[str, int]:
        """One draft: a bounded tool-calling conversation; the artifact is what it wrote.
        A step that needs no tool but the file tools is asked directly (its inputs and
        draft in the prompt, the artifact in a fence: :mod:`agent.controller.prompting`),
        as a user asking the model plainly would, unless ``tool_calling`` is ``native``.
        A fresh draft (``Feedback.fresh``) is asked as the first one was, the failed draft
        not shown; it, and a revision asked again because it repeated a failed draft, sample
        at ``REPEATED_TEMPERATURE``: greedy, they would repeat it again."""
        sampled = bool(feedback and (feedback.get("repeated") or feedback.get("fresh")))
        with self.model.sampling(REPEATED_TEMPERATURE) if sampled else nullcontext():
            return await self._agenerate(feedback)

    async def _agenerate(self, feedback: Mapping[str, Any] | None) -> tuple[str, int]:
        before = self.model.tokens
        self.revision = 0 if feedback is None else self.revision + 1
        fresh = bool(feedback and feedback.get("fresh"))
        feedback = None if fresh else feedback  # asked as the first draft was
        if self.graph is not None:
            tokens = await graph_draft(
                self.graph, self.step, self.workspace, self.records, feedback
            )
            return self.workspace.contents().get(self.step["expected_output"], ""), tokens
        native = self.tool_loop.tool_calling == ToolCalling.NATIVE
        direct = None if native else self.direct_inputs(revising=feedback is not None)
        path = self.step["expected_output"]
        self.failure = None
        if direct is not None and self.computed:
            try:
                if await self._computed(direct, feedback):
                    return self.workspace.contents().get(path, ""), self.model.tokens - before
            except SandboxUnavailable as exc:  # nothing can run the program: ask for the file
                self.computed, self.failure = False, None
                self.records.event("compute", observation=f"no sandbox: {exc}"[:200], ok=False)
        if direct is not None and feedback is not None and await self._focused(feedback):
            return self.workspace.contents().get(path, ""), self.model.tokens - before
        if direct is not None:
            draft = Draft(self.workspace, path, self.revision, direct=True)
            messages = direct_messages(
                self.step,
                goal=self.goal,
                system_prompt=self.system_prompt,
                files=direct,
                draft=self.given if fresh else draft.artifact(),
                feedback=feedback,
                as_asked=self.as_asked,
            )
            try:
                await self.tool_loop.run(messages, draft, self.call_metadata())
                return draft.artifact(), self.model.tokens - before
            except ContextWindowExceeded:
                pass  # recorded; the files are read through the tools, whose results trim
        draft = Draft(self.workspace, path, self.revision)
        messages = (
            task_messages(
                self.step,
                goal=self.goal,
                system_prompt=self.system_prompt,
                inputs=readable_inputs(self.workspace),
                feedback=feedback,
                folder=self.workspace.folder is not None,
            )
            + await self._sources_first()
        )
        await self.tool_loop.run(messages, draft, self.call_metadata())
        return draft.artifact(), self.model.tokens - before

    async def _sources_first(self) -> list[BaseMessage]:
        """The search made by code before the first draft, in every draft's conversation
        (``sources.search_first``), or nothing when the step needs none."""
        if self.searched is None:
            call = search_first(self.step, self.tool_loop.tools, self.goal)
            self.searched = [] if call is None else await self.tool_loop.call_first(call)
        return list(self.searched)

    async def _computed(
        self, inputs: Mapping[str, str], feedback: Mapping[str, Any] | None
    ) -> bool:
        """One draft as a program that prints the artifact; it runs in the sandbox, and
        what it prints is written (its failure is this draft's evidence instead). A reply
        with the file itself (a fence of its language, a ``write_file`` of it) is taken as
        it is; False when the reply held neither: the draft is asked for the file."""
        path = str(self.step["expected_output"])
        kept = program_path(self.step_id, path)
        if self.given:  # the file as the step found it (the user's, to edit) is an input
            inputs = dict(inputs) | {path: self.given}
        messages = direct_messages(
            self.step,
            goal=self.goal,
            system_prompt=self.system_prompt,
            files=inputs,
            draft=self.workspace.contents().get(kept, ""),
            feedback=feedback,
            computed=True,
        )
        answer = await self.tool_loop.ask(messages, self.call_metadata())
        reply = read_reply(answer.text, answer.tool_calls, path)
        if reply is None:
            self.records.event("compute", observation="no program in the reply", ok=False)
            return False
        if (program := reply.program) is None:
            return self._keep(path, str(reply.file), f"{path} typed, not computed")
        try:
            self.workspace.write(kept, program)
        except PathError as exc:
            return self._failed(f"{kept} was refused: {exc}")
        run = await asyncio.to_thread(run_program, program, inputs)
        if not run.ok:
            return self._failed(f"{kept}: {run.error}")
        return self._keep(path, as_file(run.output, path), f"{kept} printed {path}")

    async def _focused(self, feedback: Mapping[str, Any]) -> bool:
        """A revision of the user's Python file asked for the functions its evidence names
        only, spliced back into the file by code (:mod:`agent.controller.focus`); False
        when the revision is asked for the whole file (no focus, or no usable reply)."""
        path = str(self.step["expected_output"])
        if self.computed or not self.given or not path.endswith(".py"):
            return False
        current = feedback.get("draft")
        current = current if isinstance(current, str) else self.workspace.contents().get(path, "")
        focus = focus_for(current, self.given, feedback_evidence(feedback))
        if focus is None:
            return False
        messages = focused_messages(
            self.step,
            goal=self.goal,
            system_prompt=self.system_prompt,
            focus=focus,
            feedback=feedback,
        )
        answer = await self.tool_loop.ask(messages, self.call_metadata())
        code = fenced_file(answer.text, path)
        spliced = splice(current, code) if code is not None else None
        if spliced is None:
            self.records.event("focus", observation="no function in the reply", ok=False)
            return False
        note = f"{', '.join(focus.names)} revised in {path}"
        return self._keep(path, spliced, note, event="focus")

    def _keep(self, path: str, content: str, note: str, *, event: str = "compute") -> bool:
        """Write the draft's artifact (a refused write is the draft's failure)."""
        try:
            self.workspace.write(path, content)
        except PathError as exc:
            return self._failed(f"{path} was refused: {exc}")
        self.records.event(event, observation=note[:200], ok=True)
        return True

    def _failed(self, why: str) -> bool:
        """This draft printed no artifact: ``why`` is its evidence."""
        self.failure = why
        self.records.event("compute", observation=why[:200], ok=False)
        return True

    async def gather_evidence(self, draft: str) -> dict[str, Any]:
        """The step's check on the current draft (what the workspace holds), or why the
        draft's program printed nothing."""
        return await self.evidence.gather(self.revision, self.failure)

    async def aexecute(self) -> StepRun:
        """Run the step to a stop reason; a fatal model error is recorded, not raised."""
        run = self.records.run
        try:
            if (missing := missing_runner(self.step.get("done_when"))) is not None:
                raise missing  # no draft can make a check runnable: spend nothing on one
            result = await arevise_loop(
                self.step["instructions"],
                self.agenerate,
                self.gather_evidence,
                critique_check,
                config=self.loop_config,
            )
        except AwaitingHuman as waiting:
            # stop here, keeping what a re-run needs: the requests and the answers so far
            run.approvals = {r["id"]: r for r in waiting.requests}
            run.replay = {self.step_id: self.replay.record()}
        except Exception as exc:
            error_class = classify(exc)
            if isinstance(exc, GraphBubbleUp) or error_class is ErrorClass.TRANSIENT:
                raise  # the node's RetryPolicy retries the whole step
            self.records.error(exc)
        else:
            if result.error is not None:  # the loop stopped on it but kept the best draft
                self.records.error(result.error)
            self.records.result(result, self.workspace, model=model_key(self.model.model))
            if self.replay.given:
                run.replay = {self.step_id: None}
        run.usage = merge_usage(run.usage, self.model.usage)
        return run
