"""A fake Anthropic Messages API on localhost that answers with the scripted scenarios.

It speaks ``POST /v1/messages`` as Anthropic does: a top-level ``system``, content blocks
(``text``, ``tool_use`` and ``tool_result``), ``tools`` with an ``input_schema``, a forced
``tool_choice`` for ``with_structured_output(method="function_calling")``, a JSON-schema
``output_format``/``output_config`` for ``method="json_schema"``, ``usage`` in every answer,
and, when the request says ``"stream": true``, server-sent events (``message_start``,
``content_block_start``/``content_block_delta`` with ``text_delta`` or ``input_json_delta``,
``content_block_stop``, ``message_delta`` with the usage, ``message_stop``). Every answer is
decided by the project's scenarios, so a run through ``langchain-anthropic`` and
``ANTHROPIC_BASE_URL`` behaves like a ``scripted:<scenario>`` run, over real HTTP.

    with serve("happy") as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url  # http://127.0.0.1:PORT
        server.fail_next(529)              # the next request: 529 overloaded_error
        server.fail_next(STREAM_OVERLOADED)  # the next stream: an overloaded error event
        server.fail_next(DROP)             # the next connection is reset, unanswered

Usage is fixed and countable: ``input_tokens = 11 * (len(messages) + 1)`` (the system
prompt counts as one), ``output_tokens = 5``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from tests.wire_server import (
    DROP,
    STRUCTURED_ROLES,
    WireFake,
    WireHandler,
    json_args,
    json_text,
    scripted_answer,
    serve_fake,
)

__all__ = ["DROP", "STREAM_OVERLOADED", "FakeAnthropic", "error_body", "serve"]

INPUT_TOKENS_PER_MESSAGE = 11
OUTPUT_TOKENS = 5
MALFORMED_TEXT = "{not json"
MALFORMED_INPUT = {"not": "what the schema asks for"}
STREAM_OVERLOADED = "stream-overloaded"
"""A scripted fault: a stream that starts (HTTP 200) and then sends an overloaded error."""

_ERRORS = {  # status -> (type, message), as Anthropic words them
    400: ("invalid_request_error", "messages: field required"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource"),
    404: ("not_found_error", "model: not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes"),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, default = _ERRORS.get(status, ("api_error", "Internal server error"))
    return {"type": "error", "error": {"type": kind, "message": message or default}}


def _text(content: Any) -> str:
    """Anthropic content is a string or a list of blocks; keep the text."""
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")


def to_langchain(body: dict[str, Any]) -> list[BaseMessage]:
    """An Anthropic request's system prompt and messages as LangChain messages."""
    out: list[BaseMessage] = []
    if body.get("system"):
        out.append(SystemMessage(_text(body["system"])))
    for m in body.get("messages", []):
        role, content = m.get("role"), m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "user":
            texts = []
            for block in blocks:
                if block.get("type") == "tool_result":
                    result = _text(block.get("content"))
                    out.append(ToolMessage(result, tool_call_id=block.get("tool_use_id", "")))
                elif block.get("type") == "text":
                    texts.append(block.get("text", ""))
            if texts:
                out.append(HumanMessage("".join(texts)))
        elif role == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [
                {"name": b["name"], "args": b.get("input") or {}, "id": b["id"]}
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.append(AIMessage(text, tool_calls=calls))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def forced_tool(body: dict[str, Any]) -> str | None:
    """The tool a ``with_structured_output(method="function_calling")`` request forces."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":
        return choice.get("name")
    tools = body.get("tools") or []
    if isinstance(choice, dict) and choice.get("type") == "any" and len(tools) == 1:
        return tools[0]["name"]
    return None


def wants_json(body: dict[str, Any]) -> bool:
    """A ``method="json_schema"`` request (``output_format``, or ``output_config.format``)."""
    fmt = body.get("output_format") or (body.get("output_config") or {}).get("format")
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


@dataclass
class FakeAnthropic(WireFake):
    """The Anthropic-protocol fake; ``serve`` puts it on a port."""

    def to_langchain(self, body: dict[str, Any]) -> list[BaseMessage]:
        return to_langchain(body)

    def message(self, body: dict[str, Any]) -> dict[str, Any]:
        """A ``message`` object answering one request body."""
        role, answer = scripted_answer(self.scenario, to_langchain(body), self.planned)
        content: list[dict[str, Any]] = []
        tool = forced_tool(body)
        structured = role in STRUCTURED_ROLES and (tool is not None or wants_json(body))
        malformed = structured and self.take_malformed(role)
        if tool is not None:  # function_calling: the JSON as that tool's input
            arguments = MALFORMED_INPUT if malformed else json_args(answer)
            content.append(self._tool_use(tool, arguments))
        elif wants_json(body):
            content.append(
                {"type": "text", "text": MALFORMED_TEXT if malformed else json_text(answer)}
            )
        elif answer.tool_calls:
            content += [self._tool_use(c["name"], c["args"]) for c in answer.tool_calls]
        else:
            content.append({"type": "text", "text": str(answer.content)})
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        usage = {
            "input_tokens": INPUT_TOKENS_PER_MESSAGE * (len(body.get("messages", [])) + 1),
            "output_tokens": OUTPUT_TOKENS,
        }
        self.answered(role, usage["input_tokens"], usage["output_tokens"], content=content)
        return {
            "id": f"msg_{self.next_id():04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def _tool_use(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_{self.next_id():04d}",
            "name": name,
            "input": arguments,
        }


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def stream_events(message: dict[str, Any]) -> Iterator[bytes]:
    """The server-sent events that carry one message, as Anthropic sends them: the usage
    of ``message_start`` is provisional, ``message_delta`` has the final counts."""
    usage = message["usage"]
    head = {k: v for k, v in message.items() if k not in ("content", "stop_reason", "usage")}
    start_usage = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    yield _event(
        "message_start",
        {"message": {**head, "content": [], "stop_reason": None, "usage": start_usage}},
    )
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            yield _event(
                "content_block_start",
                {"index": index, "content_block": {**block, "input": {}}},
            )
            text = json.dumps(block["input"])
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):  # split, as sent
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield _event("content_block_delta", {"index": index, "delta": delta})
        else:
            yield _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            delta = {"type": "text_delta", "text": block["text"]}
            yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    yield _event(
        "message_delta",
        {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": usage},
    )
    yield _event("message_stop", {})


def overloaded_stream(model: str) -> Iterator[bytes]:
    """A stream that starts, then fails as an overloaded Anthropic does (status 200)."""
    message = {"id": "msg_overloaded", "type": "message", "role": "assistant", "model": model}
    usage = {"input_tokens": 0, "output_tokens": 0}
    yield _event("message_start", {"message": {**message, "content": [], "usage": usage}})
    yield _event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})


class _Handler(WireHandler):
    def do_POST(self) -> None:
        fake: FakeAnthropic = self.server.fake
        body = self.read_json()
        if body is None:
            self.send_json(400, error_body(400, "the request body is not JSON"))
            return
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            self.send_json(404, error_body(404, f"unknown endpoint {self.path}"))
            return
        fake.record(body)
        failure = fake.take_failure()
        if failure == DROP:
            self.drop()
            return
        if failure == STREAM_OVERLOADED:
            self.send_stream("text/event-stream", overloaded_stream(body.get("model", "")))
            return
        if isinstance(failure, int):
            self.send_json(failure, error_body(failure), {"x-should-retry": "false"})
            return
        try:
            message = fake.message(body)
        except Exception as exc:  # a bug in the fake: say so, as a server error
            self.send_json(500, error_body(500, f"fake server: {type(exc).__name__}: {exc}"))
            return
        if body.get("stream"):
            self.send_stream("text/event-stream", stream_events(message))
        else:
            self.send_json(200, message)


@contextmanager
def serve(scenario: str = "happy") -> Iterator[FakeAnthropic]:
    """Run the fake on 127.0.0.1 (a free port) in a background thread; yield it. Its
    ``base_url`` is the API's root, as ``ANTHROPIC_BASE_URL`` takes it."""
    with serve_fake(FakeAnthropic(scenario=scenario), _Handler, lambda root: root) as fake:
        yield fake
