"""What the fake protocol servers (``tests/openai_server.py``, ``tests/anthropic_server.py``,
``tests/ollama_server.py``) share: telling which deepreflect role sent a request and the
metadata it gave the call, answering it with the scripted scenarios, the scripted faults, the
usage reported per role, and a threaded HTTP server on a free localhost port.

The metadata the agent gives each call does not travel over the wire, so a server recovers
it (the role, a step's id and revision) from the prompt files themselves: it keeps working
however the prompts are worded. A step asked directly (``subagent_direct*``) is named by its
artifact only, so a server remembers the step ids of the plans it answered
(:class:`PlannedSteps`).
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agent.controller.subagents import BUILTIN_ROLES
from agent.models.scenarios import scenario_model
from agent.prompts import load_prompt
from tests.fakes import prompt_values

DROP = "drop"
"""A scripted fault: close the connection without an answer (the client sees it drop)."""
STRUCTURED_ROLES = ("planner", "reflection", "judge")

# the prompt file each role's system message is rendered from
_SYSTEM_PROMPTS = {"planner": "planner", "reflection": "reflection", "judge": "judge"}
# the prompt files a subagent's task is rendered from, and whether each is a revision
_TASK_PROMPTS = {
    "subagent_task": 0,
    "subagent_revision": 1,
    "subagent_direct": 0,
    "subagent_direct_revision": 1,
}


def role_of(messages: list[BaseMessage]) -> str:
    """Which deepreflect role sent the request, told by the prompt file of its system message."""
    system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
    for role, name in _SYSTEM_PROMPTS.items():
        if prompt_values(name, system) is not None:
            return role
    found = (name for name in BUILTIN_ROLES if system == load_prompt(f"subagents/{name}"))
    return next(found, "subagent")


@dataclass
class PlannedSteps:
    """The step ids of the plans a server answered, by artifact: what names a step asked
    directly, whose prompt names only its artifact."""

    ids: dict[str, str] = field(default_factory=dict)

    def learn(self, role: str, answer: AIMessage) -> None:
        """Remember the steps of a planner's answer (a later plan's ids win)."""
        if role != "planner":
            return
        try:
            steps = json_args(answer).get("steps") or []
        except (ValueError, TypeError):
            return
        for step in steps if isinstance(steps, list) else []:
            if isinstance(step, dict) and {"step_id", "expected_output"} <= set(step):
                self.ids[str(step["expected_output"])] = str(step["step_id"])

    def step_id(self, expected_output: str) -> str:
        return self.ids.get(expected_output, "")


def call_metadata(
    role: str, messages: list[BaseMessage], planned: PlannedSteps | None = None
) -> dict[str, Any]:
    """The metadata the agent gave the call (``agent.models.factory.Metered``), recovered from the
    values filled into its first human message (a direct step's id from ``planned``)."""
    human = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
    metadata: dict[str, Any] = {"role": role}
    if role == "planner":
        values = prompt_values("planner_input", human) or {}
        return metadata | {k: values.get(k, "") for k in ("answer", "reason")}
    for name, revision in _TASK_PROMPTS.items():
        if (values := prompt_values(name, human)) is not None:
            path = values["expected_output"]
            step_id = values.get("step_id") or (planned or PlannedSteps()).step_id(path)
            found = {"step_id": step_id, "expected_output": path, "revision": revision}
            return metadata | found | {"instructions": values["instructions"]}
    return metadata


def scripted_answer(
    scenario: str, messages: list[BaseMessage], planned: PlannedSteps
) -> tuple[str, AIMessage]:
    """The role that sent ``messages`` and the scripted scenario's answer to them; a plan's
    step ids are remembered in ``planned``."""
    role = role_of(messages)
    config = {"metadata": call_metadata(role, messages, planned)}
    answer = scenario_model(scenario, role).invoke(messages, config=config)
    planned.learn(role, answer)
    return role, answer


def json_text(answer: AIMessage) -> str:
    """A scripted answer as the JSON text of a structured reply."""
    if answer.tool_calls:
        return json.dumps(answer.tool_calls[0]["args"])
    return str(answer.content)


def json_args(answer: AIMessage) -> dict[str, Any]:
    """A scripted answer as the arguments of a structured reply's tool call."""
    if answer.tool_calls:
        return dict(answer.tool_calls[0]["args"])
    return dict(json.loads(str(answer.content)))


@dataclass
class WireFake:
    """A fake server's behaviour and what it saw; each protocol adds its answers."""

    scenario: str = "happy"
    base_url: str = ""
    planned: PlannedSteps = field(default_factory=PlannedSteps)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # one entry per answered request: {"role", "input_tokens", "output_tokens", ...}
    answers: list[dict[str, Any]] = field(default_factory=list)
    _failures: list[int | str] = field(default_factory=list)
    _malformed: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ fault injection
    def fail_next(self, status: int | str = 429, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` and the protocol's error
        body, or ``DROP`` the connection, or a protocol's named mid-stream fault."""
        with self._lock:
            self._failures.extend([status] * times)

    def malformed_next(self, role: str = "reflection", times: int = 1) -> None:
        """Make the next ``times`` structured answers to ``role`` invalid."""
        with self._lock:
            self._malformed[role] = self._malformed.get(role, 0) + times

    def take_failure(self) -> int | str | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def take_malformed(self, role: str) -> bool:
        with self._lock:
            if self._malformed.get(role, 0) > 0:
                self._malformed[role] -= 1
                return True
            return False

    # ------------------------------------------------------------------ what it saw
    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def answered(self, role: str, input_tokens: int, output_tokens: int, **more: Any) -> None:
        with self._lock:
            self.answers.append(
                {"role": role, "input_tokens": input_tokens, "output_tokens": output_tokens} | more
            )

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def roles_of_requests(self) -> list[str]:
        """The role of every request received, in order (each protocol reads its own)."""
        return [role_of(self.to_langchain(body)) for body in self.requests]

    def requests_by_role(self, role: str) -> list[dict[str, Any]]:
        return [
            b for b, r in zip(self.requests, self.roles_of_requests(), strict=True) if r == role
        ]

    def requests_per_role(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for role in self.roles_of_requests():
            counts[role] = counts.get(role, 0) + 1
        return counts

    def usage_by_role(self) -> dict[str, dict[str, int]]:
        """Usage reported per role, summed, in the shape of the agent's ``usage`` key."""
        totals: dict[str, dict[str, int]] = {}
        for a in self.answers:
            slot = totals.setdefault(
                a["role"], {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0}
            )
            slot["input_tokens"] += a["input_tokens"]
            slot["output_tokens"] += a["output_tokens"]
            slot["total_tokens"] += a["input_tokens"] + a["output_tokens"]
            slot["calls"] += 1
        return totals

    def to_langchain(self, body: dict[str, Any]) -> list[BaseMessage]:
        """A request body's messages as LangChain messages (each protocol reads its own)."""
        raise NotImplementedError


class WireHandler(BaseHTTPRequestHandler):
    """Plain HTTP/1.1 helpers: a JSON request, a JSON answer, a stream, a dropped socket."""

    protocol_version = "HTTP/1.1"
    server: WireServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def read_json(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, content_type: str, parts: Iterable[bytes]) -> None:
        """A 200 answer written part by part, ended by closing the connection."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")  # the end of the stream closes the socket
        self.end_headers()
        for part in parts:
            self.wfile.write(part)
            self.wfile.flush()
        self.close_connection = True

    def drop(self) -> None:
        """Close the connection at once, with no answer (a reset, as a crashed proxy does)."""
        self.close_connection = True
        try:  # linger 0: closing the socket resets the connection
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass


class WireServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: Any


FakeT = TypeVar("FakeT", bound=WireFake)


@contextmanager
def serve_fake(
    fake: FakeT, handler: type[WireHandler], base_url: Callable[[str], str]
) -> Iterator[FakeT]:
    """Run ``fake`` behind ``handler`` on 127.0.0.1 (a free port) in a background thread;
    ``base_url("http://127.0.0.1:PORT")`` is what clients are pointed at."""
    httpd = WireServer(("127.0.0.1", 0), handler)
    httpd.fake = fake
    host, port = httpd.server_address[:2]
    fake.base_url = base_url(f"http://{host}:{port}")
    thread = threading.Thread(
        target=httpd.serve_forever,
        kwargs={"poll_interval": 0.05},
        name=f"fake-{type(fake).__name__}",
        daemon=True,
    )
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
