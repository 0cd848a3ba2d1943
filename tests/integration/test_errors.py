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


# -- each provider's own client library: its real exception classes ---------------------------
# Built from the installed SDKs (the `dev` extra brings anthropic, ollama and google-genai);
# a case whose library is missing reports a skip.

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
_OVERLOADED_BODY = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def _lib(name: str) -> Any:
    return pytest.importorskip(name)


def _anthropic_status(cls_name: str, code: int, body: object = None, module: str = "anthropic"):
    def make() -> BaseException:
        cls = getattr(_lib(module), cls_name)
        response = httpx.Response(code, request=httpx.Request("POST", ANTHROPIC_URL))
        return cls(f"Error code: {code}", response=response, body=body)

    return make


def _anthropic_transport(cls_name: str, module: str = "anthropic"):
    def make() -> BaseException:
        return getattr(_lib(module), cls_name)(request=httpx.Request("POST", ANTHROPIC_URL))

    return make


def _ollama(status: int, message: str = "error"):
    return lambda: _lib("ollama").ResponseError(message, status)


def _genai(cls_name: str, code: int, status: str):
    def make() -> BaseException:
        errors = _lib("google.genai.errors")
        body = {"error": {"code": code, "message": f"{status} error", "status": status}}
        return getattr(errors, cls_name)(code, body)

    return make


def _api_core(cls_name: str):
    return lambda: getattr(_lib("google.api_core.exceptions"), cls_name)("google api error")


def _botocore(code: str, status: int):
    def make() -> BaseException:
        exceptions = _lib("botocore.exceptions")
        response = {
            "Error": {"Code": code, "Message": f"{code} from Bedrock"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }
        return exceptions.ClientError(response, "Converse")

    return make


def _ollama_refused() -> BaseException:
    """What the ollama client raises when nothing listens: a ConnectionError, its httpx
    cause hidden (``from None``)."""
    client = _lib("ollama").Client(host=f"http://127.0.0.1:{_closed_port()}")
    try:
        client.chat(model="m", messages=[{"role": "user", "content": "hi"}])
    except Exception as exc:  # noqa: BLE001 - the point is what it is
        return exc
    raise AssertionError("the ollama client reached a closed port")


class _StatusNamed(Exception):
    """A Google-style error that only names its status (no code)."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


PROVIDER_TRANSIENT: dict[str, Callable[[], BaseException]] = {
    "anthropic.RateLimitError 429": _anthropic_status("RateLimitError", 429),
    "anthropic.InternalServerError 529": _anthropic_status(
        "InternalServerError", 529, _OVERLOADED_BODY
    ),
    "anthropic.APIStatusError 529": _anthropic_status("APIStatusError", 529, _OVERLOADED_BODY),
    "anthropic.OverloadedError": _anthropic_status("OverloadedError", 529, _OVERLOADED_BODY),
    "anthropic overloaded_error mid-stream (status 200)": _anthropic_status(
        "APIStatusError", 200, _OVERLOADED_BODY
    ),
    "anthropic.InternalServerError 500": _anthropic_status("InternalServerError", 500),
    "anthropic.APIConnectionError": _anthropic_transport("APIConnectionError"),
    "anthropic.APITimeoutError": _anthropic_transport("APITimeoutError"),
    "anthropic.RetryableError": lambda: _lib("anthropic").RetryableError("try again"),
    "langchain_anthropic AnthropicRateLimitError": _anthropic_status(
        "AnthropicRateLimitError", 429, module="langchain_anthropic.chat_models"
    ),
    "langchain_anthropic AnthropicOverloadedError": _anthropic_status(
        "AnthropicOverloadedError", 529, _OVERLOADED_BODY, module="langchain_anthropic.chat_models"
    ),
    "langchain_anthropic AnthropicConnectionError": _anthropic_transport(
        "AnthropicConnectionError", module="langchain_anthropic.chat_models"
    ),
    "langchain_anthropic AnthropicTimeoutError": _anthropic_transport(
        "AnthropicTimeoutError", module="langchain_anthropic.chat_models"
    ),
    "ollama.ResponseError 503 (server busy)": _ollama(503, "server busy, please try again"),
    "ollama.ResponseError 429": _ollama(429, "too many requests"),
    "ollama.ResponseError 500": _ollama(500, "an error was encountered while running the model"),
    "ollama client: connection refused": _ollama_refused,
    "httpx.ConnectError from the ollama client's transport": lambda: httpx.ConnectError(
        "[Errno 111] Connection refused", request=httpx.Request("POST", "http://127.0.0.1/api/chat")
    ),
    "google.genai ClientError 429": _genai("ClientError", 429, "RESOURCE_EXHAUSTED"),
    "google.genai ServerError 503": _genai("ServerError", 503, "UNAVAILABLE"),
    "google.genai ServerError 500": _genai("ServerError", 500, "INTERNAL"),
    "google.api_core ResourceExhausted": _api_core("ResourceExhausted"),
    "google.api_core ServiceUnavailable": _api_core("ServiceUnavailable"),
    "google.api_core DeadlineExceeded": _api_core("DeadlineExceeded"),
    "google.api_core TooManyRequests": _api_core("TooManyRequests"),
    "a status named UNAVAILABLE, no code": lambda: _StatusNamed("UNAVAILABLE"),
    "a status named RESOURCE_EXHAUSTED, no code": lambda: _StatusNamed("RESOURCE_EXHAUSTED"),
    "botocore ThrottlingException (429)": _botocore("ThrottlingException", 429),
    "botocore ThrottlingException (400)": _botocore("ThrottlingException", 400),
    "botocore ServiceUnavailableException": _botocore("ServiceUnavailableException", 503),
    "botocore EndpointConnectionError": lambda: _lib("botocore.exceptions").EndpointConnectionError(
        endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"
    ),
}

PROVIDER_PERMANENT: dict[str, tuple[Callable[[], BaseException], ErrorClass]] = {
    "anthropic.AuthenticationError 401": (
        _anthropic_status("AuthenticationError", 401),
        ErrorClass.PERMISSION_DENIED,
    ),
    "langchain_anthropic AnthropicAuthenticationError": (
        _anthropic_status(
            "AnthropicAuthenticationError", 401, module="langchain_anthropic.chat_models"
        ),
        ErrorClass.PERMISSION_DENIED,
    ),
    "anthropic.PermissionDeniedError 403": (
        _anthropic_status("PermissionDeniedError", 403),
        ErrorClass.PERMISSION_DENIED,
    ),
    "anthropic.BadRequestError 400": (
        _anthropic_status("BadRequestError", 400),
        ErrorClass.INVALID_INPUT,
    ),
    "anthropic.NotFoundError 404": (
        _anthropic_status("NotFoundError", 404),
        ErrorClass.INVALID_INPUT,
    ),
    "anthropic.CredentialsError (no key found)": (
        lambda: _lib("anthropic").CredentialsError("no credentials"),
        ErrorClass.PERMISSION_DENIED,
    ),
    "ollama.ResponseError 401": (_ollama(401, "unauthorized"), ErrorClass.PERMISSION_DENIED),
    "ollama.ResponseError 404 (model not pulled)": (
        _ollama(404, 'model "llama3.1" not found, try pulling it first'),
        ErrorClass.INVALID_INPUT,
    ),
    "google.genai ClientError 401": (
        _genai("ClientError", 401, "UNAUTHENTICATED"),
        ErrorClass.PERMISSION_DENIED,
    ),
    "google.genai ClientError 400": (
        _genai("ClientError", 400, "INVALID_ARGUMENT"),
        ErrorClass.INVALID_INPUT,
    ),
    "google.api_core PermissionDenied": (
        _api_core("PermissionDenied"),
        ErrorClass.PERMISSION_DENIED,
    ),
    "google.api_core Unauthenticated": (
        _api_core("Unauthenticated"),
        ErrorClass.PERMISSION_DENIED,
    ),
    "google.api_core InvalidArgument": (_api_core("InvalidArgument"), ErrorClass.INVALID_INPUT),
    "botocore AccessDeniedException": (
        _botocore("AccessDeniedException", 403),
        ErrorClass.PERMISSION_DENIED,
    ),
    "botocore ValidationException": (
        _botocore("ValidationException", 400),
        ErrorClass.INVALID_INPUT,
    ),
    "botocore NoCredentialsError": (
        lambda: _lib("botocore.exceptions").NoCredentialsError(),
        ErrorClass.PERMISSION_DENIED,
    ),
}


@pytest.mark.parametrize("name", list(PROVIDER_TRANSIENT))
def test_each_providers_passing_failures_are_transient(name):
    exc = PROVIDER_TRANSIENT[name]()
    assert classify(exc) is ErrorClass.TRANSIENT
    assert is_transient(exc)


@pytest.mark.parametrize("name", list(PROVIDER_PERMANENT))
def test_each_providers_permanent_failures_keep_their_class(name):
    make, expected = PROVIDER_PERMANENT[name]
    exc = make()
    assert classify(exc) is expected
    assert not is_transient(exc)


def test_a_connection_that_reached_no_server_names_its_url_and_variable(monkeypatch):
    from agent.errors import unreachable_server
    from agent.graph.pauses import model_unavailable

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    refused = openai.APIConnectionError(request=request)
    where = unreachable_server(refused)
    assert where is not None and "http://127.0.0.1:9/v1" in where and "OPENAI_BASE_URL" in where
    question = model_unavailable("planner", "APIConnectionError", where).question or ""
    assert "OPENAI_BASE_URL" in question and "127.0.0.1:9" in question
    answered = httpx.HTTPStatusError(
        "503", request=request, response=httpx.Response(503, request=request)
    )
    assert unreachable_server(answered) is None  # a server answered: not a connection
