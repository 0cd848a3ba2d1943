"""One draft as a bounded tool-calling conversation: a model turn, its tool calls, their
results, until the model stops calling tools or the turns run out.

The artifact is what the conversation wrote. A draft that wrote nothing is told once which
tool and path to use; one whose module left functions without a body is told once to
implement them. An answer that is the artifact in a code fence ends the draft, and so does
one that repeats the previous turn's file-tool calls exactly: their results would be the same (on
the 1.5B, one ``write_file`` sent eight times in a row filled a draft's turns). Every call
is summarised into the trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent.controller.context_window import TRIM_PASSES, ContextWindowExceeded, trim_tool_results
from agent.controller.large_results import fit_result
from agent.controller.prompting import no_tool_call_reminder, unimplemented_reminder
from agent.controller.records import StepRecords
from agent.controller.replay import ModelReplay
from agent.controller.sources import CitationSources
from agent.controller.stubs import unimplemented_functions
from agent.controller.text_recovery import Recovered, recover_text_calls
from agent.errors import describe, is_context_overflow
from agent.limits import MAX_TOOL_TURNS, TOOL_RESULT_CHARS
from agent.models.factory import Metered, model_key
from agent.tools.binding import TOOL_CALLING
from agent.tools.custom import VFS_TOOL_NAMES
from agent.tools.execute import AwaitingHuman, ToolCaller
from agent.tools.filesystem import defuse, invalid_call_error, summarise_value, tool_name
from agent.vfs.entries import Workspace


class Draft:
    """One draft's bookkeeping: its revision, and whether it has written the artifact yet
    (a revision starts with the earlier draft's file, which does not count)."""

    def __init__(
        self, workspace: Workspace, path: str, revision: int, *, direct: bool = False
    ) -> None:
        self.workspace = workspace
        self.path = path
        self.revision = revision
        self.direct = direct
        """Asked directly: for the artifact in a fence, not for tool calls."""
        self.start = workspace.written.get(path)  # the artifact's last write, by identity
        self.rewrite_asked = False
        """Asked to implement functions left without a body: a fenced module in the answer
        is the artifact again."""

    def wrote(self) -> bool:
        """Whether the artifact was written during this draft."""
        current = self.workspace.written.get(self.path)
        return current is not None and current is not self.start

    def artifact(self) -> str:
        """What the artifact holds now ("" before anything wrote it)."""
        return self.workspace.contents().get(self.path, "")


class ToolLoop:
    """Drives a step's model through its tools for one draft at a time."""

    def __init__(
        self,
        *,
        model: Metered,
        replay: ModelReplay,
        caller: ToolCaller,
        records: StepRecords,
        sources: CitationSources,
        max_turns: int = MAX_TOOL_TURNS,
        tool_calling: str = "auto",
        result_chars: int = TOOL_RESULT_CHARS,
    ) -> None:
        self.model = model
        self.model_key = model_key(model.model)
        self.replay = replay
        self.caller = caller
        self.tools = caller.tools  # the step's tools, by name
        self.records = records
        self.sources = sources
        self.max_turns = max_turns
        self.tool_calling = tool_calling
        self.result_chars = result_chars
        self.large_results = 0  # results of this step moved to scratch files

    def binds(self) -> bool:
        """Whether the model's next call will be given the tools as schemas."""
        return TOOL_CALLING.binds(self.tool_calling, self.model_key)

    async def run(
        self, messages: list[BaseMessage], draft: Draft, metadata: dict[str, Any]
    ) -> None:
        """Converse until the model stops calling tools (after at most one reminder of each
        kind) or ``max_turns`` answers; ``messages`` grows with the conversation."""
        nudged = stubbed = False
        last_calls: str | None = None
        self.caller.new_draft()
        for turn in range(self.max_turns):
            binds = self.binds()
            withheld = binds and draft.direct  # asked directly: for a fence
            native = binds and not draft.direct
            bound = list(self.tools.values()) if native else []  # else described in text
            answer = await self._answer(messages, bound, metadata)
            answer, recovered = recover_text_calls(
                answer,
                self.tools,
                path=draft.path,
                id_prefix=f"text-{self.records.step_id}-{draft.revision}-{turn}-",
                fence_counts=not draft.wrote() or draft.rewrite_asked,
            )
            if answer.tool_calls and not withheld:  # else it tells nothing of tool calling
                TOOL_CALLING.record(self.model_key, native=not recovered)
            calls = calls_signature(answer.tool_calls)
            if calls is not None and calls == last_calls:
                names = ", ".join(tool_name(c) for c in answer.tool_calls)
                self.records.event("repeated_call", observation=f"{names} repeated: draft ends")
                break
            last_calls = calls
            messages.append(answer)
            if answer.tool_calls or answer.invalid_tool_calls:
                messages.extend(await self._results(answer, from_text=bool(recovered)))
                # the file in a fence *is* the answer: asking again for "one short line"
                # would be a whole call carrying the file, for nothing
                if recovered is not Recovered.FENCE:
                    continue
            if not stubbed and (reminder := self._unimplemented(draft)):
                messages.append(reminder)
                stubbed = True
            elif nudged or draft.wrote():
                break
            else:
                messages.append(no_tool_call_reminder(draft.path, direct=draft.direct))
                self.records.event("no_tool_call", observation=f"reminded to write {draft.path}")
                nudged = True

    async def call_first(self, call: dict[str, Any]) -> list[BaseMessage]:
        """Make ``call`` for the model before its first turn (``sources.search_first``): the
        call and its result, recorded like the model's own calls, for the conversation."""
        asked = AIMessage("", tool_calls=[{**call, "type": "tool_call"}])
        return [asked, *await self._results(asked, from_text=False)]

    async def ask(self, messages: list[BaseMessage], metadata: dict[str, Any]) -> AIMessage:
        """One answer, no tools: for a reply that is read as a whole (a program in a fence,
        :mod:`agent.controller.computed`); recorded for replay like every answer."""
        answer = await self._answer(messages, [], metadata)
        messages.append(answer)
        return answer

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
                    self.records.event("context_window", observation=describe(exc), trimmed=trimmed)
                    raise ContextWindowExceeded(exc, trimmed) from exc
                trimmed += cut
                note = f"over the model's context window: {cut} tool result(s) trimmed"
                self.records.event("context_trimmed", observation=note, trimmed=cut)

    async def _results(self, answer: AIMessage, *, from_text: bool) -> list[ToolMessage]:
        """Run the answer's calls in order; one tool message answers each."""
        results = []
        for call in answer.tool_calls:
            try:
                outcome, note = await self.caller.run(call)
            except AwaitingHuman as waiting:
                names = ", ".join(f"{r['tool']} ({r['kind']})" for r in waiting.requests)
                self.records.event("awaiting_human", observation=f"waits for a human on {names}")
                raise
            self.sources.offer(call, outcome.text, outcome.ok)
            text = self._fit(call, outcome.text, note)
            results.append(
                self._answer_call(call, text, outcome.ok, from_text=from_text, note=note)
            )
            defuse(call)
        # Arguments that were not valid JSON: tell the model, which must answer every call
        # it made anyway (OpenAI refuses a conversation with an unanswered tool call).
        for bad in answer.invalid_tool_calls:
            results.append(self._answer_call(bad, invalid_call_error(bad)))
        return results

    def _fit(self, call: Mapping[str, Any], text: str, note: dict[str, Any]) -> str:
        """The result as the conversation takes it: whole, or its head and the scratch file
        holding it (:mod:`agent.controller.large_results`), noted in the trajectory."""
        if len(text) <= self.result_chars:
            return text
        self.large_results += 1
        args = call.get("args")
        fitted = fit_result(
            text,
            tool=tool_name(call),
            args=args if isinstance(args, Mapping) else {},
            workspace=self.caller.workspace,
            number=self.large_results,
            limit=self.result_chars,
        )
        note["result_chars"] = len(text)
        if fitted.path:
            note["result_file"] = fitted.path
        return fitted.text

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
        self.records.event(name, params=params, observation=observation[:200], ok=ok, **extra)
        call_id = call.get("id")
        return ToolMessage(
            observation,
            tool_call_id=call_id if isinstance(call_id, str) else "",
            name=name,
        )

    def _unimplemented(self, draft: Draft) -> HumanMessage | None:
        """The reminder when the artifact written in this draft left functions without a
        body; None otherwise."""
        if not draft.wrote():
            return None
        names = unimplemented_functions(draft.path, draft.artifact())
        if not names:
            return None
        shown = ", ".join(names[:10])
        self.records.event("unimplemented", observation=f"reminded to implement {shown}"[:200])
        draft.rewrite_asked = True
        return unimplemented_reminder(draft.path, shown)


def calls_signature(calls: Sequence[Mapping[str, Any]]) -> str | None:
    """What a turn's file-tool calls do (names and arguments, not ids), to tell a repeat by;
    None for a turn without calls or with a call of another tool (sending one email twice
    may be meant: ``tests/integration/test_side_effects.py``)."""
    if not calls or any(tool_name(c) not in VFS_TOOL_NAMES for c in calls):
        return None
    done = [[tool_name(c), c.get("args")] for c in calls]
    return json.dumps(done, sort_keys=True, default=repr)
