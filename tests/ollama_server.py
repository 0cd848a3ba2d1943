"""A fake Ollama server on localhost that answers ``/api/chat`` with the scripted scenarios.

It speaks ``POST /api/chat`` as Ollama does: ``tools`` (OpenAI-style function schemas) and
``tool_calls`` whose ``arguments`` are objects, ``role: "tool"`` results, ``format`` (a JSON
schema, or ``"json"``) for structured output, newline-delimited JSON when the request says
``"stream": true`` (langchain-ollama's default) and one JSON object otherwise, and the usage
Ollama reports in its final ``done`` object (``prompt_eval_count``, ``eval_count``). Errors
are Ollama's ``{"error": "..."}`` bodies. Every answer is decided by the project's scenarios,
so a run through ``langchain-ollama`` and ``OLLAMA_HOST`` (or ``base_url``) behaves like a
``scripted:<scenario>`` run, over real HTTP.

    with serve("happy") as server:
        os.environ["OLLAMA_HOST"] = server.base_url  # http://127.0.0.1:PORT
        server.fail_next(503)                         # the next request: server busy
        server.fail_next(DROP)                        # the next connection is reset

Usage is fixed and countable: ``prompt_eval_count = 13 * len(messages)``, ``eval_count = 3``.
"""

from __future__ import annotations

import json
import time
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

__all__ = ["DROP", "FakeOllama", "error_body", "serve"]

PROMPT_TOKENS_PER_MESSAGE = 13
EVAL_COUNT = 3
MALFORMED_TEXT = "{not json"
MALFORMED_ARGUMENTS = {"not": "what the schema asks for"}

_ERRORS = {  # status -> message, as Ollama words them
    400: "invalid request",
    401: "unauthorized",
    404: 'model "missing" not found, try pulling it first',
    429: "too many requests",
    500: "an error was encountered while running the model",
    503: "server busy, please try again.  maximum pending requests exceeded",
}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    return {"error": message or _ERRORS.get(status, "internal error")}


def to_langchain(body: dict[str, Any]) -> list[BaseMessage]:
    """An Ollama chat request's messages as LangChain messages."""
    out: list[BaseMessage] = []
    for m in body.get("messages", []):
        role, content = m.get("role"), str(m.get("content") or "")
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": c["function"].get("arguments") or {},
                    "id": c.get("id") or f"call_{i}",
                }
                for i, c in enumerate(m.get("tool_calls") or [])
            ]
            out.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id", "")))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def structured_tool(role: str, body: dict[str, Any]) -> str | None:
    """The tool of a ``with_structured_output(method="function_calling")`` request: Ollama
    has no ``tool_choice``, so it is a structured role's only tool."""
    tools = body.get("tools") or []
    if role in STRUCTURED_ROLES and len(tools) == 1:
        return str(tools[0]["function"]["name"])
    return None


@dataclass
class FakeOllama(WireFake):
    """The Ollama-protocol fake; ``serve`` puts it on a port."""

    def to_langchain(self, body: dict[str, Any]) -> list[BaseMessage]:
        return to_langchain(body)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """The final (``done``) chat response to one request body, with the whole message."""
        role, answer = scripted_answer(self.scenario, to_langchain(body), self.planned)
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        tool = structured_tool(role, body)
        fmt = body.get("format")
        structured = role in STRUCTURED_ROLES and (tool is not None or bool(fmt))
        malformed = structured and self.take_malformed(role)
        if tool is not None:  # function_calling: the JSON as that tool's call
            arguments = MALFORMED_ARGUMENTS if malformed else json_args(answer)
            message["tool_calls"] = [self._call(tool, arguments)]
        elif fmt:  # json_schema (a schema) or json_mode ("json")
            message["content"] = MALFORMED_TEXT if malformed else json_text(answer)
        elif answer.tool_calls:
            message["tool_calls"] = [self._call(c["name"], c["args"]) for c in answer.tool_calls]
        else:
            message["content"] = str(answer.content)
        prompt_tokens = PROMPT_TOKENS_PER_MESSAGE * len(body.get("messages", []))
        self.answered(role, prompt_tokens, EVAL_COUNT, message=message)
        return {
            "model": body.get("model", "llama-fake"),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
            "message": message,
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 100_000,
            "eval_count": EVAL_COUNT,
            "eval_duration": 500_000,
        }

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"call_{self.next_id():04d}",
            "function": {"name": name, "arguments": arguments},
        }


def stream_lines(final: dict[str, Any]) -> Iterator[bytes]:
    """The NDJSON lines that carry one answer, as Ollama streams them: the content in
    pieces (tool calls whole, in one), then the ``done`` object with the usage."""
    head = {"model": final["model"], "created_at": final["created_at"], "done": False}
    message = final["message"]
    text = message["content"]
    pieces = [text[: len(text) // 2], text[len(text) // 2 :]] if text else []
    for piece in pieces:
        yield (
            json.dumps(head | {"message": {"role": "assistant", "content": piece}}) + "\n"
        ).encode()
    if message.get("tool_calls"):
        part = {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
        yield (json.dumps(head | {"message": part}) + "\n").encode()
    done = final | {"message": {"role": "assistant", "content": ""}}
    yield (json.dumps(done) + "\n").encode()


class _Handler(WireHandler):
    def do_POST(self) -> None:
        fake: FakeOllama = self.server.fake
        body = self.read_json()
        if body is None:
            self.send_json(400, error_body(400, "invalid character in the request body"))
            return
        if self.path.split("?")[0].rstrip("/") != "/api/chat":
            self.send_json(404, error_body(404, "404 page not found"))
            return
        fake.record(body)
        failure = fake.take_failure()
        if failure == DROP:
            self.drop()
            return
        if isinstance(failure, int):
            self.send_json(failure, error_body(failure))
            return
        try:
            final = fake.chat(body)
        except Exception as exc:  # a bug in the fake: say so, as a server error
            self.send_json(500, error_body(500, f"fake server: {type(exc).__name__}: {exc}"))
            return
        if body.get("stream", True):
            self.send_stream("application/x-ndjson", stream_lines(final))
        else:
            self.send_json(200, final)


@contextmanager
def serve(scenario: str = "happy") -> Iterator[FakeOllama]:
    """Run the fake on 127.0.0.1 (a free port) in a background thread; yield it. Its
    ``base_url`` is what ``OLLAMA_HOST`` and ``ChatOllama(base_url=...)`` take."""
    with serve_fake(FakeOllama(scenario=scenario), _Handler, lambda root: root) as fake:
        yield fake
