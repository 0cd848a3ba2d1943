"""How one subagent tool call runs: approved first if it must be, journaled if it acts on the
world, reused if it already ran, and never re-run blindly when its outcome is unknown.

:class:`ToolCaller` is what a step's worker calls for every tool call. The filesystem and
read-only tools just run. For any other tool (``agent.store.journal``):

1. with ``interrupt_on`` naming it, the call needs a decided approval bound to its exact
   arguments (``agent.tools.approvals``); without one the step stops with
   :class:`AwaitingHuman` and the thread asks;
2. its idempotency key is computed; a journaled result under that key is reused;
3. a journaled start without a result is an unknown outcome: a receipt lookup, if the
   tool has one, says whether it happened; an idempotent tool runs again with the same key;
   any other asks a human (:class:`AwaitingHuman` again, with the key);
4. otherwise ``started`` is journaled, the tool runs (given the key when it takes one),
   and its result is journaled; a timeout or dropped connection leaves the outcome unknown.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from agent.coroutines import maybe_await
from agent.store.effects import ToolPolicy, policy_of
from agent.store.journal import (
    IDEMPOTENCY_KEY_ARG,
    JournalStore,
    MemoryJournal,
    args_digest,
    call_key,
)
from agent.tools.approvals import (
    UNKNOWN_OUTCOME_DECISIONS,
    approval_id,
    unknown_outcome_id,
)
from agent.tools.custom import declares_injected, output_text
from agent.tools.filesystem import ToolOutcome, arguments_problem, run_tool_call
from agent.vfs.entries import Workspace
from agent.vocabulary import ApprovalStatus, CallStatus

__all__ = ["AwaitingHuman", "CallScope", "ToolCaller"]

UNKNOWN_CLASSES = ("transient",)
"""Error classes after which a call may or may not have happened (timeouts, dropped
connections, 5xx): its outcome is unknown."""


class AwaitingHuman(GraphBubbleUp):
    """A step must stop until a human decides ``requests`` (approvals, unknown outcomes).

    A ``GraphBubbleUp`` so the revise loop and the tool runner pass it through untouched;
    the worker turns it into the step's pending requests, never into an error."""

    def __init__(self, requests: list[dict[str, Any]]) -> None:
        super().__init__(requests)
        self.requests = requests


@dataclass
class CallScope:
    """Where a step's calls happen: what makes their keys and approvals theirs."""

    thread_id: str = ""
    turn: str = ""
    """The user turn (the id of the message that started it): a new request is a new turn."""
    plan_version: int = 0
    journal: JournalStore = field(default_factory=MemoryJournal)
    approvals: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The thread's approval records (``approvals`` state key), by id."""
    interrupt_on: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Tool name to its approval options (``agent.tools.approvals.interrupt_config``)."""


class ToolCaller:
    """Runs one step's tool calls under the rules in the module docstring."""

    def __init__(
        self,
        step: Mapping[str, Any],
        tools: Mapping[str, BaseTool],
        workspace: Workspace,
        scope: CallScope | None = None,
    ) -> None:
        self.step = step
        self.step_id = str(step.get("step_id", ""))
        self.tools = tools
        self.workspace = workspace
        self.scope = scope or CallScope()
        self.seen: Counter[str] = Counter()

    def new_draft(self) -> None:
        """Positions count from each draft's start, so a revision that repeats a call makes
        the same call (same key, same approval)."""
        self.seen = Counter()

    async def run(self, call: Mapping[str, Any]) -> tuple[ToolOutcome, dict[str, Any]]:
        """The call's outcome and what the trajectory should note about it (``key``,
        ``reused``, ``approval``); raises :class:`AwaitingHuman` when a human must decide."""
        name, args = call.get("name"), call.get("args")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None or not isinstance(args, Mapping) or arguments_problem(args):
            # unknown tool, or arguments refused before anything (hashing too) reads them
            return await run_tool_call(call, self.tools, self.workspace), {}
        policy = policy_of(tool)
        approve = tool.name in self.scope.interrupt_on
        if not (approve or policy.journaled):  # the filesystem and read-only tools
            return await self._invoke(tool, args, None), {}
        digest = args_digest(tool.name, args)
        occurrence = self.seen[digest]
        self.seen[digest] += 1
        note: dict[str, Any] = {}
        if approve:
            decision, aid = self._decision(tool.name, args, occurrence)
            note["approval"] = aid
            if decision["type"] == "reject":
                why = decision.get("message") or "no reason given"
                return ToolOutcome(f"rejected by a human: {why}", False, "rejected"), note
            if decision["type"] == "edit":
                args = decision["args"]
                note["edited"] = True
                digest = args_digest(tool.name, args)
        if not policy.journaled:
            return await self._invoke(tool, args, None), note
        key = call_key(self.scope.thread_id, self.scope.turn, self.step_id, occurrence, digest)
        note["key"] = key
        return await self._once(tool, policy, args, key, note), note

    def _decision(self, name: str, args: Mapping[str, Any], occurrence: int) -> tuple[dict, str]:
        """The decided approval of this exact call, or :class:`AwaitingHuman` asking for it."""
        version = self.scope.plan_version
        aid = approval_id(self.step, version, occurrence, name, dict(args))
        record = self.scope.approvals.get(aid) or {}
        if record.get("status") == ApprovalStatus.DECIDED and isinstance(
            record.get("decision"), Mapping
        ):
            return dict(record["decision"]), aid
        options = self.scope.interrupt_on[name]
        raise AwaitingHuman(
            [
                {
                    "id": aid,
                    "kind": "approval",
                    "status": ApprovalStatus.PENDING.value,
                    "tool": name,
                    "args": dict(args),
                    "step_id": self.step_id,
                    "plan_version": version,
                    "allowed_decisions": list(options.get("allowed_decisions") or ()),
                    "description": options.get("description"),
                    "asked_at": time.time(),
                }
            ]
        )

    async def _once(
        self,
        tool: BaseTool,
        policy: ToolPolicy,
        args: Mapping[str, Any],
        key: str,
        note: dict[str, Any],
    ) -> ToolOutcome:
        journal, thread = self.scope.journal, self.scope.thread_id
        entry = await journal.get(thread, key) or {}
        if entry.get("status") == CallStatus.DONE:
            note["reused"] = True
            return ToolOutcome(str(entry.get("text", "")), bool(entry.get("ok")))
        if entry.get("status") == CallStatus.STARTED:
            settled = await self._settle(tool, policy, args, key, str(entry.get("reason", "")))
            if settled is not None:
                note["settled"] = True
                return settled
        base = {
            "tool": tool.name,
            "step_id": self.step_id,
            "args_digest": args_digest(tool.name, args),
        }
        await journal.put(
            thread, key, {**base, "status": CallStatus.STARTED.value, "started_at": time.time()}
        )
        outcome = await self._invoke(tool, args, key)
        if outcome.error_class in UNKNOWN_CLASSES:
            reason = f"the call failed with {outcome.text[:200]}"
            await journal.put(
                thread, key, {**base, "status": CallStatus.STARTED.value, "reason": reason}
            )
            settled = await self._settle(tool, policy, args, key, reason, retried=True)
            return settled if settled is not None else outcome
        return await self._finished(tool, key, outcome)

    async def _settle(
        self,
        tool: BaseTool,
        policy: ToolPolicy,
        args: Mapping[str, Any],
        key: str,
        reason: str,
        *,
        retried: bool = False,
    ) -> ToolOutcome | None:
        """Settle an unknown outcome: the receipt, a human's decision, or a re-run of an
        idempotent tool. None: run the call (again) with the same key."""
        if policy.receipt is not None:
            found = await maybe_await(policy.receipt(key))
            if found is None:
                return None  # the receipt says it never happened: run it
            return await self._finished(tool, key, ToolOutcome(output_text(found), True), "receipt")
        if policy.idempotent:
            return None if not retried else await self._invoke_again(tool, args, key)
        uid = unknown_outcome_id(key)
        record = self.scope.approvals.get(uid) or {}
        decision = (
            record.get("decision") if record.get("status") == ApprovalStatus.DECIDED else None
        )
        if isinstance(decision, Mapping):
            if decision.get("type") == "approve":
                return None
            if decision.get("type") == "done":
                text = str(decision.get("message") or "a human confirmed the call happened")
                return await self._finished(tool, key, ToolOutcome(text, True), "human")
            why = decision.get("message") or "a human decided not to run it again"
            return ToolOutcome(f"not run again: {why}", False, "rejected")
        raise AwaitingHuman(
            [
                {
                    "id": uid,
                    "kind": "unknown_outcome",
                    "status": ApprovalStatus.PENDING.value,
                    "tool": tool.name,
                    "args": dict(args),
                    "call_key": key,
                    "reason": reason or "the step stopped after the call started",
                    "step_id": self.step_id,
                    "plan_version": self.scope.plan_version,
                    "allowed_decisions": list(UNKNOWN_OUTCOME_DECISIONS),
                    "asked_at": time.time(),
                }
            ]
        )

    async def _invoke_again(self, tool: BaseTool, args: Mapping[str, Any], key: str) -> ToolOutcome:
        """An idempotent tool's one re-run after an unknown outcome, with the same key; a
        second timeout leaves the outcome unknown."""
        outcome = await self._invoke(tool, args, key)
        if outcome.error_class in UNKNOWN_CLASSES:
            return outcome
        return await self._finished(tool, key, outcome)

    async def _finished(
        self, tool: BaseTool, key: str, outcome: ToolOutcome, via: str = "call"
    ) -> ToolOutcome:
        """Journal a call's settled outcome: ``done`` (reused from now on) or, for a definite
        error, ``failed`` (the call may be made again). ``via``: the call, its receipt or a
        human."""
        entry = {
            "tool": tool.name,
            "step_id": self.step_id,
            "status": (CallStatus.DONE if outcome.ok else CallStatus.FAILED).value,
            "text": outcome.text,
            "ok": outcome.ok,
            "via": via,
            "at": time.time(),
        }
        await self.scope.journal.put(self.scope.thread_id, key, entry)
        return outcome

    async def _invoke(
        self, tool: BaseTool, args: Mapping[str, Any], key: str | None
    ) -> ToolOutcome:
        injected = {IDEMPOTENCY_KEY_ARG: key} if key and takes_idempotency_key(tool) else None
        call = {"name": tool.name, "args": dict(args)}
        return await run_tool_call(call, self.tools, self.workspace, injected=injected)


def takes_idempotency_key(tool: BaseTool) -> bool:
    """Whether ``tool`` has an injected ``idempotency_key`` parameter (hidden from the model)."""
    return declares_injected(tool, IDEMPOTENCY_KEY_ARG)
