"""One model factory (``provider:name``), the scripted model used by tests and the demo,
and the metered way every node calls a model."""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from agent.errors import ConfigError

_STEP_MARKER = re.compile(r"^step_id: (\S+)$", re.MULTILINE)
SchemaT = TypeVar("SchemaT", bound=BaseModel)


def tool_call(name: str, **args: Any) -> AIMessage:
    """A scripted answer that calls one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": _call_id()}])


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def _text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(m.text if isinstance(m.content, list) else str(m.content) for m in messages)


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


class ScriptedChatModel(BaseChatModel):
    """A deterministic chat model that replays scripted answers and records every prompt.

    ``responses`` is a list replayed in order; or a mapping from a step id to such a list,
    picked by the ``step_id: <id>`` line of the prompt so parallel subagents stay
    deterministic; or use ``responder`` to answer from the prompt itself (stateless, so a
    thread resumed in another process gets the same answers). An item may be a string, a
    dict (sent as JSON, or ``{"tool_calls": [...]}``), an ``AIMessage``, an exception to
    raise, or a callable of the messages returning one of those.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: Any = None
    responder: Any = None
    name: str | None = "scripted"
    calls: list[list[BaseMessage]] = []
    _positions: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, responses: Any = None, **kwargs: Any) -> None:
        if responses is not None and not isinstance(responses, Mapping):
            responses = list(responses)
        super().__init__(responses=responses, calls=[], **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _next(self, messages: list[BaseMessage]) -> Any:
        if self.responder is not None:
            return self.responder  # called outside the lock: responders may block
        script = self.responses
        key = ""
        if isinstance(script, Mapping):
            match = _STEP_MARKER.search(_text(messages))
            key = match.group(1) if match and match.group(1) in script else ""
            if key not in script:
                msg = f"ScriptedChatModel has no script for step {key or '<none>'}"
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
        with self._lock:
            self.calls.append(list(messages))
            item = self._next(list(messages))
        while callable(item) and not isinstance(item, BaseException | AIMessage):
            item = item(list(messages))
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
                parsed = schema.model_validate(data) if _is_model(schema) else data
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


def _is_model(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _strip_fences(text: str) -> str:
    text = text.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    return fenced.group(1) if fenced else text


# ---------------------------------------------------------------------------- factory

_OPENAI_CACHE: dict[tuple[str, str | None], BaseChatModel] = {}
_OPENAI_LOCK = threading.Lock()


def load_model(spec: str | BaseChatModel, role: str = "default") -> BaseChatModel:
    """Turn ``provider:name`` into a chat model; the one place models are constructed."""
    if isinstance(spec, BaseChatModel):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        msg = f"model {spec!r} must look like provider:name, e.g. openai:gpt-4.1-mini"
        raise ConfigError(msg)
    provider, name = spec.split(":", 1)
    if provider == "scripted":
        from agent.scenarios import scenario_model

        return scenario_model(name, role)
    if provider == "openai":
        return _openai(name)
    msg = f"unknown model provider {provider!r} in {spec!r}; supported: openai, scripted"
    raise ConfigError(msg)


def _openai(name: str) -> BaseChatModel:
    key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not key and not base_url:
        msg = (
            f"model openai:{name} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            "OpenAI-compatible server); to try deepreflect without a key run `deepreflect demo`"
        )
        raise ConfigError(msg)
    with _OPENAI_LOCK:
        cache_key = (name, base_url)
        if cache_key not in _OPENAI_CACHE:
            from langchain_openai import ChatOpenAI

            # Retries belong to the graph's RetryPolicy (one bounded place), not the client.
            _OPENAI_CACHE[cache_key] = ChatOpenAI(
                model=name,
                api_key=key or "not-needed",
                base_url=base_url,
                max_retries=0,
                timeout=120,
                stream_usage=True,  # meter streamed runs too (Studio streams messages)
            )
        return _OPENAI_CACHE[cache_key]


# ---------------------------------------------------------------------------- metering


def usage_of(message: BaseMessage | None) -> dict[str, int]:
    """Token usage reported by one answer, as a per-role increment."""
    meta = getattr(message, "usage_metadata", None) or {}
    return {
        "input_tokens": int(meta.get("input_tokens", 0)),
        "output_tokens": int(meta.get("output_tokens", 0)),
        "total_tokens": int(meta.get("total_tokens", 0)),
        "calls": 1,
    }


def merge_usage(
    current: Mapping[str, Mapping[str, int]] | None, update: Mapping[str, Mapping[str, int]] | None
) -> dict[str, dict[str, int]]:
    """Reducer of the ``usage`` key: sums per role, so parallel subagents add up."""
    merged = {role: dict(counts) for role, counts in (current or {}).items()}
    for role, counts in (update or {}).items():
        slot = merged.setdefault(role, {})
        for name, value in counts.items():
            slot[name] = slot.get(name, 0) + int(value)
    return merged


def total_tokens(usage: Mapping[str, Mapping[str, int]] | None) -> int:
    """All tokens spent, every role."""
    return sum(int(c.get("total_tokens", 0)) for c in (usage or {}).values())


class UsageCollector(BaseCallbackHandler):
    """Meters a model that other code invokes (the rubric judge inside a check)."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.usage: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                with self._lock:
                    self.usage = merge_usage(self.usage, {self.role: usage_of(message)})


class Metered:
    """Calls one role's model and keeps the usage it reported."""

    def __init__(self, model: BaseChatModel, role: str, structured_method: str) -> None:
        self.model = model
        self.role = role
        self.structured_method = structured_method
        self.usage: dict[str, dict[str, int]] = {}

    def observed(self) -> tuple[Runnable, UsageCollector]:
        """The model with a usage callback, for code that invokes it itself."""
        collector = UsageCollector(self.role)
        return self.model.with_config(callbacks=[collector]), collector

    def _count(self, message: BaseMessage | None) -> None:
        self.usage = merge_usage(self.usage, {self.role: usage_of(message)})

    @property
    def tokens(self) -> int:
        return total_tokens(self.usage)

    def invoke(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> AIMessage:
        runnable: Runnable = self.model.bind_tools(list(tools)) if tools else self.model
        answer = runnable.invoke(messages)
        self._count(answer)
        return answer

    def structured(
        self, messages: list[BaseMessage], schema: type[SchemaT]
    ) -> tuple[SchemaT | None, str]:
        """Ask for ``schema``; return the parsed answer or None with the raw text and error."""
        kwargs: dict[str, Any] = {"include_raw": True}
        target: Any = schema
        if not isinstance(self.model, ScriptedChatModel):
            kwargs["method"] = self.structured_method
            if self.structured_method == "json_schema":
                # With a pydantic class the openai client parses, and raises, inside invoke;
                # with its JSON schema a malformed answer reaches us for a retry, usage intact.
                target = schema.model_json_schema()
        # include_raw=True: the answer is always a {"raw", "parsed", "parsing_error"} dict
        result = cast(
            dict[str, Any], self.model.with_structured_output(target, **kwargs).invoke(messages)
        )
        raw = result.get("raw")
        self._count(raw)
        parsed = result.get("parsed")
        if isinstance(parsed, Mapping) and _is_model(schema):
            try:
                parsed = schema.model_validate(parsed)
            except ValidationError as exc:
                result["parsing_error"] = exc
                parsed = None
        raw_text = str(getattr(raw, "content", "") or "")
        if parsed is None:
            error = result.get("parsing_error") or "no structured answer"
            return None, f"{str(error)[:500]} (answer: {raw_text[:300]!r})"
        return parsed, raw_text
