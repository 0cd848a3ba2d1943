"""A step's conversation that outgrew the model's context window: trimmed, then refused.

A subagent's conversation grows with every tool result (a file read, a search, a check's
output); on a small local model (llama.cpp's default context is 4,096 tokens) it soon does
not fit, and the server answers HTTP 400. That request fails only its step: the step asks
again with its oldest tool results replaced by a short note, then with every one of them
replaced, and when even that does not fit the step fails with :class:`ContextWindowExceeded`
(``deterministic_validation``: reflection sees a failed step, not a failed run).
"""

from __future__ import annotations

from collections.abc import MutableSequence

from langchain_core.messages import BaseMessage, ToolMessage

from agent.errors import AgentError, ErrorClass, describe

__all__ = ["TRIM_PASSES", "ContextWindowExceeded", "trim_note", "trim_tool_results"]

TRIM_PASSES = (1, 0)
"""Tool results left whole on each retry: the newest one, then none."""
_NOTE = "[trimmed: {chars} chars]"


class ContextWindowExceeded(AgentError):
    """The step's conversation does not fit the model's context window, even trimmed."""

    def __init__(self, cause: BaseException, trimmed: int) -> None:
        message = (
            "the step's conversation does not fit the model's context window "
            f"({trimmed} tool result(s) trimmed; the server said: {describe(cause, 200)}); "
            "use a model with a larger context, or a step that reads less"
        )
        super().__init__(ErrorClass.DETERMINISTIC_VALIDATION, message)


def trim_note(chars: int) -> str:
    """What stands in for a trimmed tool result."""
    return _NOTE.format(chars=chars)


def _trimmed(message: BaseMessage) -> bool:
    content = message.content
    return isinstance(content, str) and content.startswith("[trimmed: ")


def trim_tool_results(messages: MutableSequence[BaseMessage], *, keep: int) -> int:
    """Replace, in place, the content of every tool result but the ``keep`` newest with a
    ``[trimmed: N chars]`` note, oldest first; returns how many were replaced. The tool
    messages themselves stay (every tool call must be answered), and so does every other
    message: the task, the model's own calls, a reminder."""
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage) and not _trimmed(m)]
    cut = results[: max(0, len(results) - keep)]
    for i in cut:
        old = messages[i]
        chars = len(old.content) if isinstance(old.content, str) else len(str(old.content))
        messages[i] = old.model_copy(update={"content": trim_note(chars)})
    return len(cut)
