"""A step's model answers (its subagent's and its judge's), replayed when the step runs
again after waiting for a human.

A step that stops for an approval (``agent.tools.execute.AwaitingHuman``) runs again from its
start once the human has decided. Its model answers so far are kept in the ``replay`` state
key and given back, in order, instead of asking the model again: the step reaches the same
call without spending a token twice, and its tool calls run again through the journal
(reused, not repeated). A replayed answer is used only while the conversation matches the
one it answered (the same number of messages); at the first difference the rest are dropped
and the model is asked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from agent.tools.approvals import step_fingerprint

__all__ = ["ModelReplay"]

Ask = Callable[..., Awaitable[AIMessage]]
SUBAGENT, JUDGE = "subagent", "judge"


class ModelReplay:
    """Answers to give back (from a record) and the answers of this run (for the next)."""

    def __init__(
        self, step: Mapping[str, Any], plan_version: int, record: Mapping[str, Any] | None
    ) -> None:
        self.fingerprint = step_fingerprint(step)
        self.plan_version = plan_version
        self.given = bool(record)
        same_step = bool(record) and (
            record.get("fingerprint") == self.fingerprint  # type: ignore[union-attr]
            and record.get("plan_version") == plan_version  # type: ignore[union-attr]
        )
        answers = (record or {}).get("answers") if same_step else None
        self.queue: list[dict[str, Any]] = [
            dict(a) for a in answers or [] if isinstance(a, Mapping)
        ]
        self.answers: list[dict[str, Any]] = []

    async def answer(
        self,
        messages: Sequence[BaseMessage],
        ask: Ask,
        tools: Sequence[Any],
        metadata: Mapping[str, Any],
    ) -> AIMessage:
        """The next recorded answer if it answered this conversation, else ``ask``'s."""
        answer = self.next_answer(len(messages), SUBAGENT)
        if answer is None:
            answer = await ask(list(messages), tools, metadata=metadata)
        self.keep(len(messages), SUBAGENT, answer)
        return answer

    def judged(self, judge: Any) -> ReplayedJudge:
        """``judge`` (what rubric checks call) answering from the record first too."""
        return ReplayedJudge(judge, self)

    def next_answer(self, count: int, role: str) -> AIMessage | None:
        if not self.queue:
            return None
        recorded = self.queue.pop(0)
        if recorded.get("messages") != count or recorded.get("role", SUBAGENT) != role:
            self.queue.clear()  # the conversation went another way: ask from here on
            return None
        try:
            return AIMessage.model_validate(recorded.get("answer"))
        except Exception:  # a damaged record: ask the model instead
            self.queue.clear()
            return None

    def keep(self, count: int, role: str, answer: Any) -> None:
        if isinstance(answer, AIMessage):
            self.answers.append({"messages": count, "role": role, "answer": answer.model_dump()})

    def record(self) -> dict[str, Any]:
        """What to keep for the next run of the step."""
        return {
            "fingerprint": self.fingerprint,
            "plan_version": self.plan_version,
            "answers": list(self.answers),
        }


class ReplayedJudge:
    """The judge of a step's rubric checks, answering from the step's record while it
    matches (the same order as the subagent's answers: one record per step)."""

    def __init__(self, judge: Any, replay: ModelReplay) -> None:
        self.judge = judge
        self.replay = replay

    def invoke(self, input: Sequence[BaseMessage], config: Any = None, **kwargs: Any) -> Any:
        answer = self.replay.next_answer(len(input), JUDGE)
        if answer is None:
            answer = self.judge.invoke(input, config, **kwargs)
        self.replay.keep(len(input), JUDGE, answer)
        return answer
