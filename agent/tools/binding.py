"""Whether a subagent's model is given its tools as tool schemas, or asked in text.

``Context.tool_calling``: ``native`` binds the tools on every call (what capable models
want); ``text`` binds none, so the model reads about its tools in its prompt and answers
with calls written as text or with the file in a code fence (``agent.tools.text_calls``);
``auto`` (the default) binds them until a model has answered ``TEXT_AFTER`` times with text
calls and never once natively, then stops for that model for the rest of the process.

Why: a small local model given tool schemas often answers in text anyway, and the schemas
themselves cost it. Measured on Qwen2.5-Coder-1.5B (llama.cpp, first 10 HumanEval tasks,
greedy): 10 of 10 replies held a function body without tools bound, 5 of 10 with them (the
others echoed the signature and docstring and stopped).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agent.vocabulary import ToolCalling

__all__ = ["TEXT_AFTER", "TOOL_CALLING", "ToolCallingMemory"]

TEXT_AFTER = 2
"""Text-only answers (and no native call) after which ``auto`` stops binding the tools."""


@dataclass
class _Seen:
    native: int = 0
    text: int = 0


class ToolCallingMemory:
    """What each model did with its tools, learnt as calls go; thread-safe, one per process."""

    def __init__(self, text_after: int = TEXT_AFTER) -> None:
        self.text_after = max(1, text_after)
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()

    def binds(self, mode: str, model_key: str) -> bool:
        """Whether to bind the tools on the next call of ``model_key`` under ``mode``."""
        if mode == ToolCalling.NATIVE:
            return True
        if mode == ToolCalling.TEXT:
            return False
        with self._lock:
            seen = self._seen.get(model_key) or _Seen()
        return seen.native > 0 or seen.text < self.text_after

    def record(self, model_key: str, *, native: bool) -> None:
        """One answer that called a tool: natively, or in text (parsed from the reply)."""
        with self._lock:
            seen = self._seen.setdefault(model_key, _Seen())
            if native:
                seen.native += 1
            else:
                seen.text += 1


TOOL_CALLING = ToolCallingMemory()
"""What ``auto`` has learnt, per model, for the whole process."""
