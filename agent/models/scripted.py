"""The scripted chat model: deterministic answers for the demo and the tests, no key needed.

It finds its place from the metadata every call carries (``role``, ``step_id``,
``revision``, ``expected_output``: see ``agent.models.factory.Metered``), never from the wording
of a prompt, so rewording a file in ``prompts/`` changes nothing it answers. This module
imports nothing from ``agent``: the model factory and the scenarios both build on it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

__all__ = ["Responder", "ScriptedChatModel", "prompt_json", "tool_call"]

Responder = Callable[[list[BaseMessage]], Any] | Callable[[list[BaseMessage], dict[str, Any]], Any]
"""Answers one call: from the messages, or from the messages and the call's metadata."""


def tool_call(name: str, **args: Any) -> AIMessage:
    """A scripted answer that calls one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": _call_id()}])


def prompt_json(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The largest JSON object inside the human messages ({} if none): how a scripted role
    reads the data it is given (reflection's situation) whatever words surround it."""
    decoder = json.JSONDecoder()
    best: tuple[int, dict[str, Any]] = (0, {})
    for text in (_content(m) for m in messages if isinstance(m, HumanMessage)):
        for start in (i for i, char in enumerate(text) if char == "{"):
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, dict) and end - start > best[0]:
                best = (end - start, value)
    return best[1]


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def _content(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content)


def _text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(_content(m) for m in messages)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _to_message(item: Any) -> AIMessage:
    if isinstance(item, AIMessage):
        message = item.model_copy(deep=True)
    elif isinstance(item, Mapping) and set(item) == {"tool_calls"}:
        calls = [
            {"name": c["name"], "args": dict(c.get("args", {})), "id": c.get("id") or _call_id()}
            for c in item["tool_calls"]
        ]
        message = AIMessage(content="", tool_calls=calls)
    elif isinstance(item, Mapping | list):
        message = AIMessage(content=json.dumps(item))
    else:
        message = AIMessage(content=str(item))
    for call in message.tool_calls:
        call["id"] = call.get("id") or _call_id()
    return message


def _answer(item: Any, messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
    """Call a scripted callable until it yields an answer; a callable that takes two
    arguments also gets the call's metadata (the one-argument form keeps working)."""
    while callable(item) and not isinstance(item, BaseException | AIMessage):
        item = item(messages, metadata) if _takes_metadata(item) else item(messages)
    return item


def _takes_metadata(fn: Callable[..., Any]) -> bool:
    """Whether a responder takes ``(messages, metadata)`` rather than ``(messages)``;
    remembered per responder (asked on every call, and ``inspect.signature`` is slow)."""
    try:
        return _TAKES_METADATA[fn]
    except (KeyError, TypeError):  # not seen yet, or not weak-referenceable
        pass
    takes = _signature_takes_metadata(fn)
    try:
        _TAKES_METADATA[fn] = takes
    except TypeError:
        pass
    return takes


_TAKES_METADATA: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _signature_takes_metadata(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn).bind([], {})
    except TypeError:
        return False
    except ValueError:  # no signature to inspect (some builtins): the one-argument form
        return False
    return True


class ScriptedChatModel(BaseChatModel):
    """A deterministic chat model that replays scripted answers and records every prompt.

    ``responses`` is a list replayed in order; or a mapping from a step id to such a list,
    picked by the call's ``step_id`` metadata (the ``""`` list for any other call) so
    parallel subagents stay deterministic; or use ``responder`` to answer from the call
    itself (stateless, so a thread resumed in another process gets the same answers). An
    item may be a string, a dict (sent as JSON, or ``{"tool_calls": [...]}``), an
    ``AIMessage``, an exception to raise, or a ``Responder``: a callable of the messages,
    or of the messages and the call's metadata, returning one of those. ``calls`` holds
    every prompt received and ``call_metadata`` the metadata each came with.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: Any = None
    responder: Any = None
    latency_s: float = 0.0
    """Seconds each call waits before answering, like a remote model (benchmarks); async
    calls wait without holding a thread."""
    name: str | None = "scripted"
    calls: list[list[BaseMessage]] = []
    call_metadata: list[dict[str, Any]] = []
    _positions: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, responses: Any = None, **kwargs: Any) -> None:
        if responses is not None and not isinstance(responses, Mapping):
            responses = list(responses)
        super().__init__(responses=responses, calls=[], call_metadata=[], **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _next(self, metadata: Mapping[str, Any]) -> Any:
        if self.responder is not None:
            return self.responder  # called outside the lock: responders may block
        script = self.responses
        key = ""
        if isinstance(script, Mapping):
            step_id = metadata.get("step_id")
            key = step_id if isinstance(step_id, str) and step_id in script else ""
            if key not in script:
                msg = f"ScriptedChatModel has no script for step {step_id or '<none>'}"
                raise RuntimeError(msg)
            script = script[key]
        position = self._positions.get(key, 0)
        if script is None or position >= len(script):
            msg = f"ScriptedChatModel ran out of responses after {position} call(s)" + (
                f" for step {key}" if key else ""
            )
            raise RuntimeError(msg)
        self._positions[key] = position + 1
        return script[position]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        metadata = dict(run_manager.metadata) if run_manager is not None else {}
        return self._respond(messages, metadata)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        metadata = dict(run_manager.metadata) if run_manager is not None else {}
        # responders may block (tests hold a step on an event): off the loop
        return await asyncio.to_thread(self._respond, messages, metadata)

    def _respond(self, messages: list[BaseMessage], metadata: dict[str, Any]) -> ChatResult:
        with self._lock:
            self.calls.append(list(messages))
            self.call_metadata.append(dict(metadata))
            item = self._next(metadata)
        item = _answer(item, list(messages), metadata)
        if isinstance(item, BaseException):
            raise item
        message = _to_message(item)
        out_text = str(message.content) + json.dumps([c["args"] for c in message.tool_calls])
        prompt_tokens = _estimate_tokens(_text(messages))
        completion_tokens = _estimate_tokens(out_text)
        message.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        """Tool calls come from the script, so binding only has to keep the model callable."""
        return self

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable:
        """Parse the scripted answer (JSON text or the first tool call) into ``schema``."""

        def parse(raw: AIMessage) -> dict[str, Any]:
            try:
                if raw.tool_calls:
                    data: Any = raw.tool_calls[0]["args"]
                else:
                    data = json.loads(_strip_fences(str(raw.content)))
                parsed = schema.model_validate(data) if is_model(schema) else data
                return {"raw": raw, "parsed": parsed, "parsing_error": None}
            except (ValueError, ValidationError, TypeError) as exc:
                return {"raw": raw, "parsed": None, "parsing_error": exc}

        def run(result: dict[str, Any]) -> Any:
            if include_raw:
                return result
            if result["parsing_error"] is not None:
                raise result["parsing_error"]
            return result["parsed"]

        return self | RunnableLambda(parse) | RunnableLambda(run)


def is_model(schema: Any) -> bool:
    """Whether ``schema`` is a pydantic model class (rather than a JSON schema dict)."""
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _strip_fences(text: str) -> str:
    text = text.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    return fenced.group(1) if fenced else text
