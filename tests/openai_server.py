"""A fake OpenAI-compatible server on localhost that answers with the scripted scenarios.

It speaks ``POST /v1/chat/completions`` (plain JSON, or server-sent events when the request
says ``"stream": true``) and decides every answer with the project's own scenario logic
(``agent.models.scenarios.scenario_model``), so a run through ``langchain-openai`` and
``OPENAI_BASE_URL`` behaves exactly like a ``scripted:<scenario>`` run, over real HTTP. The
metadata the agent gives each call does not travel over the wire, so the server recovers it
(the role, a step's id and revision) from the prompt files themselves: it keeps working
however the prompts are worded.

    with serve("happy") as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url   # http://127.0.0.1:PORT/v1
        server.fail_next(429)                              # the next request is rate limited
        server.malformed_next("reflection")                # the next reflection is not JSON
        ...
        server.requests                                    # every request body received

Usage is fixed and countable: ``prompt_tokens = 10 * len(messages)``, ``completion_tokens
= 7``; ``server.usage_by_role()`` sums what was reported, per role, as the agent meters it.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from tests.wire_server import PlannedSteps, role_of, scripted_answer

__all__ = ["FakeOpenAI", "error_body", "role_of", "serve", "to_langchain"]

COMPLETION_TOKENS = 7
TOKENS_PER_MESSAGE = 10
MALFORMED = "{not json"

_ERRORS = {  # status -> (message, type, code), as OpenAI words them
    400: ("Invalid request", "invalid_request_error", None),
    401: ("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to use this model", "permission_error", None),
    404: ("The model does not exist", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached", "rate_limit_error", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request", "server_error", None),
    503: ("The engine is currently overloaded", "server_error", None),
}


def _text(content: Any) -> str:
    """OpenAI content is a string or a list of parts; keep the text."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def to_langchain(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages as LangChain messages (what the scripted responders read)."""
    out: list[BaseMessage] = []
    for m in messages:
        role, content = m.get("role"), _text(m.get("content"))
        if role in ("system", "developer"):
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = []
            for call in m.get("tool_calls") or []:
                try:
                    args = json.loads(call["function"].get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                calls.append({"name": call["function"]["name"], "args": args, "id": call["id"]})
            out.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id", "")))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def structured_function(body: dict[str, Any]) -> str | None:
    """The function a ``with_structured_output(method="function_calling")`` request forces."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    tools = body.get("tools") or []
    if choice == "required" and len(tools) == 1:  # some clients force the only tool this way
        return tools[0]["function"]["name"]
    return None


def _json_text(answer: AIMessage) -> str:
    """A scripted answer as the JSON text of a structured reply."""
    if answer.tool_calls:
        return json.dumps(answer.tool_calls[0]["args"])
    return str(answer.content)


@dataclass
class FakeOpenAI:
    """The server's behaviour and what it saw; ``serve`` puts it on a port."""

    scenario: str = "happy"
    base_url: str = ""
    planned: PlannedSteps = field(default_factory=PlannedSteps)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # one entry per answered request: {"role", "prompt_tokens", "completion_tokens", ...}
    answers: list[dict[str, Any]] = field(default_factory=list)
    refuse_response_format: bool = False
    """Answer any request with a ``response_format`` HTTP 400, as a server without
    constrained decoding does."""
    slow_response_format_s: float = 0.0
    """Seconds to wait before answering a request with a ``response_format``, as a server
    whose grammar for the schema is slow to decode by."""
    _failures: list[int] = field(default_factory=list)
    _malformed: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ fault injection
    def fail_next(self, status: int = 429, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` and an OpenAI error body."""
        with self._lock:
            self._failures.extend([status] * times)

    def malformed_next(self, role: str = "reflection", times: int = 1) -> None:
        """Make the next ``times`` structured answers to ``role`` invalid JSON."""
        with self._lock:
            self._malformed[role] = self._malformed.get(role, 0) + times

    # ------------------------------------------------------------------ what it saw
    def requests_by_role(self, role: str) -> list[dict[str, Any]]:
        return [b for b in self.requests if role_of(to_langchain(b.get("messages", []))) == role]

    def usage_by_role(self) -> dict[str, dict[str, int]]:
        """Usage reported per role, summed, in the shape of the agent's ``usage`` key."""
        totals: dict[str, dict[str, int]] = {}
        for a in self.answers:
            slot = totals.setdefault(
                a["role"], {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0}
            )
            slot["input_tokens"] += a["prompt_tokens"]
            slot["output_tokens"] += a["completion_tokens"]
            slot["total_tokens"] += a["prompt_tokens"] + a["completion_tokens"]
            slot["calls"] += 1
        return totals

    # ------------------------------------------------------------------ answering
    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def take_failure(self) -> int | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def _take_malformed(self, role: str) -> bool:
        with self._lock:
            if self._malformed.get(role, 0) > 0:
                self._malformed[role] -= 1
                return True
            return False

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """A ``chat.completion`` object for one request body."""
        messages = to_langchain(body["messages"])
        role, answer = scripted_answer(self.scenario, messages, self.planned)

        message: dict[str, Any] = {"role": "assistant", "content": None}
        function = structured_function(body)
        if function is not None:  # method="function_calling": the JSON as that tool's call
            arguments = MALFORMED if self._take_malformed(role) else _json_text(answer)
            message["tool_calls"] = [self._call(function, arguments)]
        elif body.get("response_format", {}).get("type") in ("json_schema", "json_object"):
            message["content"] = MALFORMED if self._take_malformed(role) else _json_text(answer)
        elif answer.tool_calls:
            message["tool_calls"] = [
                self._call(c["name"], json.dumps(c["args"])) for c in answer.tool_calls
            ]
        else:
            message["content"] = str(answer.content)
        finish = "tool_calls" if message.get("tool_calls") else "stop"

        prompt_tokens = TOKENS_PER_MESSAGE * len(body["messages"])
        with self._lock:
            number = next(self._ids)
            self.answers.append(
                {
                    "role": role,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": COMPLETION_TOKENS,
                    "message": message,
                }
            )
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": prompt_tokens + COMPLETION_TOKENS,
            },
        }

    def _call(self, name: str, arguments: str) -> dict[str, Any]:
        with self._lock:
            number = next(self._ids)
        return {
            "id": f"call_{number}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }


REFUSED_RESPONSE_FORMAT = "response_format type json_schema is not supported by this server"


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    default, kind, code = _ERRORS.get(status, ("Error", "api_error", None))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


def stream_chunks(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events that carry one completion, as OpenAI sends them."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
    ]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
            self.close_connection = True

    def _send_events(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")  # the end of the stream closes the socket
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, error_body(400, "the request body is not JSON"))
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, error_body(404, f"unknown endpoint {self.path}"))
            return
        fake.record(body)
        status = fake.take_failure()
        if status is not None:
            self._send_json(status, error_body(status))
            return
        if fake.slow_response_format_s and body.get("response_format"):
            time.sleep(fake.slow_response_format_s)
        if fake.refuse_response_format and body.get("response_format"):
            self._send_json(400, error_body(400, REFUSED_RESPONSE_FORMAT))
            return
        try:
            completion = fake.complete(body)
        except Exception as exc:  # a bug in the fake: say so, as a server error
            self._send_json(500, error_body(500, f"fake server: {type(exc).__name__}: {exc}"))
            return
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._send_events(stream_chunks(completion, include_usage))
        else:
            self._send_json(200, completion)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


@contextmanager
def serve(scenario: str = "happy") -> Iterator[FakeOpenAI]:
    """Run the fake on 127.0.0.1 (a free port) in a background thread; yield it."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.fake = FakeOpenAI(scenario=scenario)
    host, port = httpd.server_address[:2]
    httpd.fake.base_url = f"http://{host}:{port}/v1"
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield httpd.fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
