"""Tool calls a model wrote as text, made real so they run like any other.

Small models often answer with a call written out (a JSON object, ``<tool_call>`` tags)
instead of making it, or with the artifact itself in a code fence. The parsing is
:mod:`agent.tools.text_calls`; this module decides when an answer's text counts as calls.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import tool_call

from agent.tools.text_calls import fenced_file, tool_calls_from_text


class Recovered(StrEnum):
    """What an answer's text was made into (falsy when nothing was)."""

    NOTHING = ""
    CALLS = "calls"
    """Tool calls written out as text."""
    FENCE = "fence"
    """The artifact itself in a code fence: a ``write_file`` of it, and the draft's answer."""


def recover_text_calls(
    answer: AIMessage,
    tool_names: Collection[str],
    *,
    path: str,
    id_prefix: str,
    fence_counts: bool,
) -> tuple[AIMessage, Recovered]:
    """``answer``, or, when it called no tool but wrote calls to ``tool_names`` as text, the
    same answer with those calls made real; and what its text was made into.

    Without written calls, a fenced file counts as writing the artifact ``path`` when
    ``fence_counts`` (the draft has not written it yet, or was asked to rewrite it).
    """
    if answer.tool_calls or answer.invalid_tool_calls:
        return answer, Recovered.NOTHING
    text = answer.content if isinstance(answer.content, str) else answer.text
    calls = tool_calls_from_text(text, list(tool_names), id_prefix=id_prefix)
    if calls:
        return answer.model_copy(update={"tool_calls": calls}), Recovered.CALLS
    if "write_file" in tool_names and fence_counts:
        content = fenced_file(text, path)  # the artifact itself, in a code fence
        if content is not None:
            args = {"path": path, "content": content}
            calls = [tool_call(name="write_file", args=args, id=f"{id_prefix}fence")]
            return answer.model_copy(update={"tool_calls": calls}), Recovered.FENCE
    return answer, Recovered.NOTHING
