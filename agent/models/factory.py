"""One model factory (``provider:name``), the role names, and the metered way every node
calls a model: usage counted per role, and every call tagged with structured metadata.

Every call carries ``config={"metadata": ...}``, the LangChain way:

- ``role``: ``planner``, ``reflection``, ``judge`` or the subagent's name, on every call;
- the planner's ``answer`` (the human's, "" if none) and ``reason`` (why it replans);
- a subagent's ``step_id``, ``expected_output`` (the artifact's path), ``instructions``,
  ``revision`` (0 for the first draft, then 1, 2, ...) and ``inputs`` (the paths it can
  read); the judge's calls carry the ``step_id``, ``expected_output`` and ``instructions``
  of the step whose artifact they review.

LangSmith traces show it, ``stream_mode="messages"`` hands it to chat UIs with each token
(parallel steps told apart), and scripted models answer from it. The planner's,
reflection's and the judge's JSON calls are tagged ``NOSTREAM_TAGS``, so chat UIs do not
render them as chat.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, ValidationError

from agent.errors import ConfigError, cut_off, describe, timed_out
from agent.models.providers import constrained_decoding, provider_model, structured_method_for
from agent.models.refusals import refusal_of
from agent.models.reply_schema import parse_structured
from agent.models.scenarios import scenario_model
from agent.models.scripted import is_model
from agent.models.structured_methods import StructuredMethods, learnt_event
from agent.prompts import render
from agent.vocabulary import StructuredOutput

__all__ = [
    "JUDGE",
    "NOSTREAM_TAGS",
    "Metered",
    "UsageCollector",
    "load_model",
    "merge_usage",
    "total_tokens",
    "usage_of",
    "with_metadata",
]

SchemaT = TypeVar("SchemaT", bound=BaseModel)

JUDGE = "judge"
"""The role that reviews artifacts (rubric checks, critiques); not the ``critic`` subagent."""
# LangGraph 1.x skips a call tagged "nostream" in stream_mode="messages"; older releases
# and LangSmith's chat views look for "langsmith:nostream".
NOSTREAM_TAGS = tuple(dict.fromkeys((TAG_NOSTREAM, "langsmith:nostream")))


# ---------------------------------------------------------------------------- factory


def model_key(model: BaseChatModel) -> str:
    """Which model (and server) a structured-output memory is about."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    where = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None) or ""
    return f"{type(model).__name__}:{name}@{where}"


def load_model(
    spec: str | BaseChatModel,
    role: str = "default",
    *,
    timeout: float | None = None,
    max_tokens: int | None = None,
) -> BaseChatModel:
    """Turn ``provider:name`` into a chat model; the one place models are constructed.

    ``timeout``: seconds a request may take (``Context.request_timeout_s``; None: 120);
    ``max_tokens``: the most tokens one answer may have (``Context.max_output_tokens``;
    None: the provider's default). A model object is used as it is."""
    if isinstance(spec, BaseChatModel):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        msg = f"model {spec!r} must look like provider:name, e.g. openai:gpt-4.1-mini"
        raise ConfigError(msg)
    provider, name = spec.split(":", 1)
    if provider == "scripted":
        return scenario_model(name, role)
    return provider_model(provider, name, timeout=timeout, max_tokens=max_tokens)


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


def with_metadata(runnable: Runnable, metadata: Mapping[str, Any]) -> Runnable:
    """``runnable`` with ``metadata`` added to every call. Unlike ``with_config`` on a bound
    runnable, which replaces its config, this keeps what it already carries (callbacks,
    its role, its tags): nested bindings merge their configs."""
    return RunnableBinding(bound=runnable, kwargs={}, config={"metadata": dict(metadata)})


class Metered:
    """Calls one role's model, tags each call with the role's metadata, and keeps the usage
    it reported.

    ``metadata`` goes with every call, after ``{"role": role}``; ``invoke`` and
    ``structured`` add their own per call. Structured calls (the planner's, reflection's)
    and the judge's (``observed``) are tagged ``NOSTREAM_TAGS``.
    """

    def __init__(
        self,
        model: BaseChatModel,
        role: str,
        structured_method: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        methods: StructuredMethods | None = None,
    ) -> None:
        self.model = model
        self.role = role
        self.structured_method = structured_method
        self.methods = methods if methods is not None else StructuredMethods()
        """What ``auto`` knows of which structured-output method works: the thread's
        (:func:`agent.models.structured_methods.methods_from`), grown by this one's calls."""
        self.learnt: dict[str, Any] | None = None
        """What this one's structured calls taught, as a trajectory event to keep with the
        thread (:func:`agent.models.structured_methods.learnt_event`); None: nothing new."""
        self.metadata: dict[str, Any] = {"role": role, **(metadata or {})}
        self.usage: dict[str, dict[str, int]] = {}
        self.temperature: float | None = None
        """Set by :meth:`sampling` for the calls inside it; None: the model's own."""

    @contextmanager
    def sampling(self, temperature: float) -> Iterator[None]:
        """The calls inside sample at ``temperature`` when the model has that setting (every
        LangChain chat model that samples does): a greedy model asked again would answer
        exactly as before."""
        self.temperature = temperature
        try:
            yield
        finally:
            self.temperature = None

    def config(
        self, metadata: Mapping[str, Any] | None = None, *, nostream: bool = False
    ) -> RunnableConfig:
        """The config of one call: the role's metadata plus ``metadata``."""
        config = RunnableConfig(metadata={**self.metadata, **(metadata or {})})
        if nostream:
            config["tags"] = list(NOSTREAM_TAGS)
        return config

    def observed(self) -> tuple[Runnable, UsageCollector]:
        """The model with a usage callback and the role's config, for code that invokes it
        itself (the judge inside a rubric check)."""
        collector = UsageCollector(self.role)
        config = self.config(nostream=True)
        return self.model.with_config(config, callbacks=[collector]), collector

    def _count(self, message: BaseMessage | None) -> None:
        self.usage = merge_usage(self.usage, {self.role: usage_of(message)})

    def _count_completion(self, completion: Any) -> None:
        """Count a client's raw completion (one that never became a message)."""
        usage = getattr(completion, "usage", None)
        if usage is None:
            return
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        self._count(
            AIMessage(
                "",
                usage_metadata={
                    "input_tokens": tokens_in,
                    "output_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                },
            )
        )

    @property
    def tokens(self) -> int:
        return total_tokens(self.usage)

    def _bound(self, tools: Sequence[Any] | None) -> Runnable:
        model = self.model
        if self.temperature is not None and "temperature" in type(model).model_fields:
            model = model.model_copy(update={"temperature": self.temperature})
        return model.bind_tools(list(tools)) if tools else model

    def invoke(
        self,
        messages: list[BaseMessage],
        tools: Sequence[Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> AIMessage:
        """One call (with ``tools`` bound, if any); ``metadata`` is added to the role's."""
        answer = self._bound(tools).invoke(messages, config=self.config(metadata))
        self._count(answer)
        return answer

    async def ainvoke(
        self,
        messages: list[BaseMessage],
        tools: Sequence[Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> AIMessage:
        """``invoke`` for the graph's coroutine nodes."""
        answer = await self._bound(tools).ainvoke(messages, config=self.config(metadata))
        self._count(answer)
        return answer

    def _structured_runnable(self, schema: type[BaseModel], method: str) -> Runnable:
        kwargs: dict[str, Any] = {"include_raw": True}
        target: Any = schema
        method = structured_method_for(self.model, method)
        kwargs["method"] = method
        if method == StructuredOutput.JSON_SCHEMA:
            # With a pydantic class the openai client parses, and raises, inside invoke;
            # with its JSON schema a malformed answer reaches us for a retry, usage intact.
            target = schema.model_json_schema()
        return self.model.with_structured_output(target, **kwargs)

    async def astructured(
        self,
        messages: list[BaseMessage],
        schema: type[SchemaT],
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[SchemaT | None, str]:
        """Ask for ``schema``; return the parsed answer or None with the raw text and error.

        With ``structured_output="auto"`` the method is the one that worked for this model
        before (tool calling, then ``json_schema``, then JSON read from plain text), and a
        server that refuses a request shape is asked again the next way at once; a server
        that constrains decoding (``constrained_decoding``) is asked by ``json_schema`` first,
        and a ``json_schema`` request that times out is asked again the next way at once.
        Whatever the method, JSON the model wrote in its reply's text instead (small models
        do) counts."""
        config = self.config(metadata, nostream=True)
        if self.structured_method != StructuredOutput.AUTO:
            return await self._ask(self.structured_method, messages, schema, config)
        key = model_key(self.model)
        refused = "every structured-output method was refused"
        first = (StructuredOutput.JSON_SCHEMA,) if constrained_decoding(self.model) else ()
        order = self.methods.order(key, first)  # before any snapshot: ``first`` starts a model
        known = self.methods.snapshot(key)
        try:
            for method in order:
                try:
                    parsed, raw = await self._ask(method, messages, schema, config)
                except Exception as exc:
                    if method == StructuredOutput.JSON_SCHEMA and timed_out(exc):
                        # a schema too slow to decode by (a grammar on a small CPU): a miss,
                        # and the next way is asked at once (a raise would retry the node,
                        # which knows only what the thread recorded)
                        self.methods.record_failure(key, method, describe(exc))
                        refused = f"{method} timed out: {describe(exc)}"
                        continue
                    if refusal_of(str(exc)) is None:
                        raise
                    self.methods.record_failure(key, method, str(exc))
                    refused = f"{method} refused: {describe(exc)}"
                    continue
                if parsed is None:
                    self.methods.record_failure(key, method, raw)
                else:
                    self.methods.record_success(key, method)
                return parsed, raw  # a miss is the caller's to retry, with the error
            return None, refused
        finally:
            if (now := self.methods.snapshot(key)) != known:
                self.learnt = learnt_event(key, now)

    async def _ask(
        self, method: str, messages: list[BaseMessage], schema: type[SchemaT], config: Any
    ) -> tuple[SchemaT | None, str]:
        """One structured call by ``method``; ``text`` asks for plain JSON in the reply."""
        if method == StructuredOutput.TEXT:
            shown = json.dumps(schema.model_json_schema())
            asked = [*messages, HumanMessage(render("structured_text", schema=shown))]
            answer = await self.model.ainvoke(asked, config)
            self._count(answer)
            text = str(answer.content or "")
            parsed, error = parse_structured(text, schema)
            if parsed is None:
                return None, f"{error} (answer: {text[:300]!r})"
            return cast(SchemaT, parsed), text
        runnable = self._structured_runnable(schema, method)
        try:
            answer = await runnable.ainvoke(messages, config)
        except Exception as exc:
            if not cut_off(exc):
                raise
            # the client parsed, and raised, inside invoke: the answer is malformed output
            # the caller retries with this error, not a fault of the run
            self._count_completion(getattr(exc, "completion", None))
            return (
                None,
                f"the answer was cut off at the token limit before it ended: {describe(exc)}",
            )
        return self._parsed(answer, schema)

    def _parsed(self, answer: Any, schema: type[SchemaT]) -> tuple[SchemaT | None, str]:
        """Count the raw answer's usage and validate what was parsed from it."""
        # include_raw=True: the answer is always a {"raw", "parsed", "parsing_error"} dict
        result = cast(dict[str, Any], answer)
        raw = result.get("raw")
        self._count(raw)
        parsed = result.get("parsed")
        if isinstance(parsed, Mapping) and is_model(schema):
            try:
                parsed = schema.model_validate(parsed)
            except ValidationError as exc:
                result["parsing_error"] = exc
                parsed = None
        raw_text = str(getattr(raw, "content", "") or "")
        if parsed is None and not result.get("parsing_error") and raw_text.strip():
            # no structured answer at all (no tool call): the JSON may be in the reply's text
            from_text, _error = parse_structured(raw_text, schema)
            parsed = from_text
        if parsed is None:
            error = result.get("parsing_error") or "no structured answer"
            return None, f"{str(error)[:500]} (answer: {raw_text[:300]!r})"
        return parsed, raw_text
