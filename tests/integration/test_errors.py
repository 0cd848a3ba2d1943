"""Error classification by behaviour: the HTTP status, transport errors of the standard library
and the HTTP clients, LangChain's provider-neutral model errors and words in type names, found
anywhere in the exception chain; real exception objects from the installed client libraries,
fakes shaped like the SDKs that are not installed."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpcore
import httpx
import openai
import pytest
import requests
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelConnectionError,
    ModelRefusalError,
)
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import (
    OpenAIAPIContextOverflowError,
    OpenAIAPIError,
    OpenAIAuthenticationError,
    OpenAIConnectionError,
    OpenAIInvalidRequestError,
    OpenAIPermissionDeniedError,
    OpenAIRateLimitError,
    OpenAITimeoutError,
)
from langgraph.types import RetryPolicy
from pydantic import BaseModel, ValidationError

from agent import ScriptedChatModel, run
from agent.errors import AgentError, ErrorClass, classify, describe, exception_chain, is_transient
from tests.fakes import END, ctx, models, sqlite_graph, step

URL = "https://api.example.test/v1/chat/completions"


def _request() -> httpx.Request:
    return httpx.Request("POST", URL)


def _response(code: int) -> httpx.Response:
    return httpx.Response(code, request=_request())


class _HTTPError(Exception):
    def __init__(self, status_code: int, message: str = "") -> None:
        super().__init__(message or f"HTTP {status_code}")
        self.status_code = status_code


class _M(BaseModel):
    x: int


# -- fakes shaped like SDKs that are not installed -------------------------------------------


class AnthropicAPIStatusError(Exception):
    """anthropic.APIStatusError: status_code and response from the HTTP response, a body."""

    def __init__(self, message: str, *, response: httpx.Response, body: object) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code
        self.body = body


class OverloadedError(AnthropicAPIStatusError):
    """anthropic.OverloadedError, raised for HTTP 529."""


class GoogleAPICallError(Exception):
    """google.api_core.exceptions.GoogleAPICallError: the HTTP status is a class attribute."""

    code: int | None = None


class ServiceUnavailable(GoogleAPICallError):
    code = 503


class DeadlineExceeded(GoogleAPICallError):
    code = 504


class PermissionDenied(GoogleAPICallError):
    code = 403


class InvalidArgument(GoogleAPICallError):
    code = 400


class GenaiServerError(Exception):
    """google.genai.errors.ServerError: an int `code` and a string `status`."""

    def __init__(self) -> None:
        super().__init__("503 UNAVAILABLE. The model is overloaded.")
        self.code = 503
        self.status = "UNAVAILABLE"


class ServiceUnavailableError(Exception):
    """A type that names its condition and carries nothing else."""


class VendorTimeoutBase(Exception):
    pass


class VendorReadFailure(VendorTimeoutBase):
    """Only a base class names the condition."""


class ExitLike(Exception):
    """`code` that is not an HTTP status (an exit code) says nothing."""

    code = 2


class FlagLike(Exception):
    status_code = True  # a bool is not a status


def _anthropic_overloaded() -> Exception:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return OverloadedError("Overloaded", response=_response(529), body=body)


def _anthropic_streamed_overloaded() -> Exception:
    # mid-stream the error event arrives on a 200 response: only the body says what it is
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return AnthropicAPIStatusError("Overloaded", response=_response(200), body=body)


def _wrapped(cause: BaseException, how: str = "from") -> BaseException:
    """A generic error raised while handling `cause`, as a wrapping library does: `raise ...
    from cause`, implicitly (only `__context__` is set) or `from None` (the cause hidden)."""
    try:
        try:
            raise cause
        except BaseException as exc:
            outer = RuntimeError("model call failed")
            if how == "implicit":
                raise outer  # noqa: B904 - the implicit __context__ is the point
            raise outer from (exc if how == "from" else None)
    except RuntimeError as caught:
        return caught


TRANSIENT: dict[str, Callable[[], BaseException]] = {
    "status 429": lambda: _HTTPError(429),
    "status 503": lambda: _HTTPError(503),
    "status 408": lambda: _HTTPError(408),
    "status 409": lambda: _HTTPError(409),
    "status 425": lambda: _HTTPError(425),
    "TimeoutError": lambda: TimeoutError("read timed out"),
    "socket.gaierror": lambda: socket.gaierror(-3, "Temporary failure in name resolution"),
    "ConnectionResetError": lambda: ConnectionResetError(104, "Connection reset by peer"),
    "openai.APIConnectionError": lambda: openai.APIConnectionError(request=_request()),
    "openai.APITimeoutError": lambda: openai.APITimeoutError(request=_request()),
    "openai.RateLimitError": lambda: openai.RateLimitError(
        "Rate limit reached", response=_response(429), body=None
    ),
    "openai.InternalServerError": lambda: openai.InternalServerError(
        "The server had an error", response=_response(500), body=None
    ),
    "langchain_openai OpenAIConnectionError": lambda: OpenAIConnectionError(
        message="Connection error.", request=_request()
    ),
    "langchain_openai OpenAITimeoutError": lambda: OpenAITimeoutError(_request()),
    "langchain_openai OpenAIRateLimitError": lambda: OpenAIRateLimitError(
        "Rate limit reached", response=_response(429), body=None
    ),
    "langchain_openai OpenAIAPIError": lambda: OpenAIAPIError(
        "The server is overloaded", response=_response(503), body=None
    ),
    "langchain_core ModelConnectionError": lambda: ModelConnectionError("unreachable"),
    "httpx.ConnectError": lambda: httpx.ConnectError("refused", request=_request()),
    "httpx.ReadTimeout": lambda: httpx.ReadTimeout("timed out", request=_request()),
    "httpx.PoolTimeout": lambda: httpx.PoolTimeout("no connection free"),
    "httpx.RemoteProtocolError": lambda: httpx.RemoteProtocolError("peer closed connection"),
    "httpx.HTTPStatusError 502": lambda: httpx.HTTPStatusError(
        "Bad Gateway", request=_request(), response=_response(502)
    ),
    "httpcore.ConnectError": lambda: httpcore.ConnectError("refused"),
    "httpcore.ReadTimeout": lambda: httpcore.ReadTimeout("timed out"),
    "requests ConnectionError": lambda: requests.exceptions.ConnectionError("refused"),
    "requests ReadTimeout": lambda: requests.exceptions.ReadTimeout("timed out"),
    "anthropic 529 overloaded": _anthropic_overloaded,
    "anthropic overloaded mid-stream": _anthropic_streamed_overloaded,
    "google ServiceUnavailable": ServiceUnavailable,
    "google DeadlineExceeded": DeadlineExceeded,
    "google-genai ServerError": GenaiServerError,
    "a name that says ServiceUnavailable": ServiceUnavailableError,
    "a base class that says Timeout": VendorReadFailure,
    "wrapped with from": lambda: _wrapped(httpx.ConnectError("refused", request=_request())),
    "wrapped implicitly": lambda: _wrapped(OpenAITimeoutError(_request()), "implicit"),
}

PERMANENT: dict[str, tuple[Callable[[], BaseException], ErrorClass]] = {
    "status 401": (lambda: _HTTPError(401), ErrorClass.PERMISSION_DENIED),
    "status 403": (lambda: _HTTPError(403), ErrorClass.PERMISSION_DENIED),
    "status 400": (lambda: _HTTPError(400, "bad request"), ErrorClass.INVALID_INPUT),
    "status 404": (lambda: _HTTPError(404), ErrorClass.INVALID_INPUT),
    "content policy": (
        lambda: _HTTPError(400, "content_policy_violation"),
        ErrorClass.POLICY_REJECTED,
    ),
    "openai 401": (
        lambda: openai.AuthenticationError("bad key", response=_response(401), body=None),
        ErrorClass.PERMISSION_DENIED,
    ),
    "langchain_openai 401": (
        lambda: OpenAIAuthenticationError("bad key", response=_response(401), body=None),
        ErrorClass.PERMISSION_DENIED,
    ),
    "langchain_openai 403": (
        lambda: OpenAIPermissionDeniedError("not allowed", response=_response(403), body=None),
        ErrorClass.PERMISSION_DENIED,
    ),
    "langchain_openai 400": (
        lambda: OpenAIInvalidRequestError("bad request", response=_response(400), body=None),
        ErrorClass.INVALID_INPUT,
    ),
    "langchain_openai context overflow without a status": (
        lambda: OpenAIAPIContextOverflowError(
            "input exceeds the context window", request=_request(), body=None
        ),
        ErrorClass.INVALID_INPUT,
    ),
    "langchain_core ContextOverflowError": (
        lambda: ContextOverflowError("too long"),
        ErrorClass.INVALID_INPUT,
    ),
    "langchain_core ModelRefusalError": (lambda: ModelRefusalError(), ErrorClass.POLICY_REJECTED),
    "google PermissionDenied": (PermissionDenied, ErrorClass.PERMISSION_DENIED),
    "google InvalidArgument": (InvalidArgument, ErrorClass.INVALID_INPUT),
    "a 401 wrapped in a generic error": (
        lambda: _wrapped(openai.AuthenticationError("bad key", response=_response(401), body=None)),
        ErrorClass.PERMISSION_DENIED,
    ),
    "PermissionError": (lambda: PermissionError("denied"), ErrorClass.PERMISSION_DENIED),
    "AgentError": (lambda: AgentError("policy_rejected", "refused"), ErrorClass.POLICY_REJECTED),
    "json": (lambda: json.JSONDecodeError("x", "doc", 0), ErrorClass.DETERMINISTIC_VALIDATION),
    "httpx.UnsupportedProtocol": (
        lambda: httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'"),
        ErrorClass.UNKNOWN,
    ),
    "RuntimeError": (lambda: RuntimeError("something odd"), ErrorClass.UNKNOWN),
    "an exit code is not a status": (ExitLike, ErrorClass.UNKNOWN),
    "a bool is not a status": (FlagLike, ErrorClass.UNKNOWN),
    "a cause suppressed with from None": (
        lambda: _wrapped(httpx.ConnectError("refused", request=_request()), "from None"),
        ErrorClass.UNKNOWN,
    ),
}


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_transient_failures_are_recognised_by_behaviour_and_retried(name):
    exc = TRANSIENT[name]()
    assert classify(exc) is ErrorClass.TRANSIENT
    assert is_transient(exc)


@pytest.mark.parametrize("name", list(PERMANENT))
def test_permanent_failures_keep_their_class_and_are_never_retried(name):
    make, expected = PERMANENT[name]
    exc = make()
    assert classify(exc) is expected
    assert not is_transient(exc)


def test_pydantic_errors_are_deterministic_validation():
    with pytest.raises(ValidationError) as err:
        _M(x="not a number")
    assert classify(err.value) is ErrorClass.DETERMINISTIC_VALIDATION


def test_the_first_link_of_the_chain_that_says_something_wins():
    # a 401 explains the failure even though the connection error underneath would retry
    auth = openai.AuthenticationError("bad key", response=_response(401), body=None)
    auth.__cause__ = httpx.ConnectError("refused", request=_request())
    assert classify(auth) is ErrorClass.PERMISSION_DENIED


def test_a_cyclic_or_endless_exception_chain_ends():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert [str(e) for e in exception_chain(first)] == ["a", "b"]
    assert classify(first) is ErrorClass.UNKNOWN

    deepest = head = RuntimeError("0")
    for i in range(1, 50):
        head = RuntimeError(str(i))
        head.__cause__ = deepest
        deepest = head
    assert len(list(exception_chain(head))) == 8
    assert classify(head) is ErrorClass.UNKNOWN


def test_describe_stays_short_for_a_huge_message():
    text = describe(RuntimeError("x" * 5_000_000))
    assert len(text) == 300 and text.startswith("RuntimeError: xxx") and text.endswith("…")


# -- over a real socket: what langchain-openai raises when the server is down -----------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_through_langchain_openai_is_transient():
    model = ChatOpenAI(
        model="m", api_key="k", base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=0
    )
    with pytest.raises(OpenAIConnectionError) as err:
        model.invoke("hello")
    assert classify(err.value) is ErrorClass.TRANSIENT


def test_a_server_that_never_answers_through_langchain_openai_is_transient():
    with socket.socket() as listener:  # accepts connections (the backlog), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        model = ChatOpenAI(
            model="m",
            api_key="k",
            base_url=f"http://127.0.0.1:{port}/v1",
            max_retries=0,
            timeout=0.2,
        )
        with pytest.raises(OpenAITimeoutError) as err:
            model.invoke("hello")
    assert classify(err.value) is ErrorClass.TRANSIENT


# -- in the graph: a briefly-down provider is retried, not paused ------------------------------


class _Flaky:
    """Raises `fault()` on the first `times` calls, then answers `then`."""

    def __init__(self, fault: Callable[[], BaseException], times: int, then: Any) -> None:
        self.fault, self.left, self.then, self.calls = fault, times, then, 0

    def __call__(self, messages: Any) -> Any:
        self.calls += 1
        if self.left:
            self.left -= 1
            return self.fault()
        return self.then


@pytest.mark.parametrize(
    "name", ["langchain_openai OpenAIConnectionError", "langchain_openai OpenAITimeoutError"]
)
def test_a_planner_whose_server_is_briefly_down_is_retried_and_the_run_succeeds(tmp_path, name):
    plan = [step("S1", "a.md")]
    flaky = _Flaky(TRANSIENT[name], times=2, then={"steps": plan})
    roles = models(plan, [END], planner=ScriptedChatModel(responder=flaky))
    retry = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)
    graph, _ = sqlite_graph(tmp_path, roles, retry_policy=retry)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert flaky.calls == 3  # two failures retried, the third attempt answered
