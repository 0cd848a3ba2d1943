"""Error classes: the class of a failure chooses the next action, not the model.

Failures are classified by what they do, not by one client library's class names: the HTTP
status they carry, the standard library's and the HTTP clients' transport errors, LangChain's
provider-neutral ``ModelError`` family, and a few words in type names, error-body types,
status names and AWS error codes (``overloaded_error``, ``UNAVAILABLE``,
``ThrottlingException``, ``CredentialsError``). A wrapped failure
(``raise Wrapper(...) from cause``) is classified by the first link of its chain that says
something, so a wrapper a library adds tomorrow does not turn a blip into a paused run.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from enum import StrEnum

import langchain_core.exceptions as lc_errors
from pydantic import ValidationError


class ErrorClass(StrEnum):
    """What kind of failure happened, and so what to do about it."""

    INVALID_INPUT = "invalid_input"  # ask for clarification or reject; never retry
    PERMISSION_DENIED = "permission_denied"  # stop and report; never work around it
    TRANSIENT = "transient"  # bounded retries with backoff
    DETERMINISTIC_VALIDATION = "deterministic_validation"  # targeted revision from the error
    POLICY_REJECTED = "policy_rejected"  # a normal terminal state; never retry
    UNKNOWN = "unknown"  # keep the evidence, hand to a human


class AgentError(Exception):
    """An error whose class is already known where it is raised."""

    def __init__(self, error_class: ErrorClass | str, message: str) -> None:
        super().__init__(message)
        self.error_class = ErrorClass(error_class)


class ConfigError(AgentError, ValueError):
    """Bad configuration (model string, missing key): the CLI exits 2 with this message.

    A ``ValueError`` too, so that LangGraph Server reports its text to the client (Studio,
    agent-chat-ui) instead of a bare "internal error"."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorClass.INVALID_INPUT, message)


class MissingRunner(ConfigError):
    """A check's runner is not installed (pytest, a database driver): no draft, revision or
    replan can fix that, so the step stops at once and says what to install (``fix``)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


MAX_CHAIN = 8  # links of __cause__/__context__ followed; a chain may be long or cyclic
_POLICY_MARKERS = ("content_policy", "content policy", "content_filter", "content filter")
# Words that name a passing condition in a type name, an error body's type or a status
# name, compared with "_" removed and lower-cased: RateLimitError, rate_limit_error,
# overloaded_error, gRPC's and Google's UNAVAILABLE / RESOURCE_EXHAUSTED / DEADLINE_EXCEEDED,
# AWS's ThrottlingException, anthropic.RetryableError, ...
_TRANSIENT_WORDS = (
    "timeout",
    "connection",
    "ratelimit",
    "overloaded",
    "unavailable",
    "resourceexhausted",
    "deadlineexceeded",
    "toomanyrequests",
    "throttl",
    "retryable",
)
# Words that name missing or refused credentials where no status says so (anthropic's
# CredentialsError, botocore's NoCredentialsError, gRPC's UNAUTHENTICATED/PERMISSION_DENIED)
_DENIED_WORDS = (
    "authentication",
    "unauthenticated",
    "unauthorized",
    "credential",
    "permissiondenied",
    "accessdenied",
    "forbidden",
)
_STATUS_ATTRIBUTES = ("status_code", "status", "code", "http_status")


def _lc_types(*names: str) -> tuple[type[BaseException], ...]:
    """LangChain's provider-neutral model errors that this langchain-core has (newer ones
    are missing from the oldest versions the project accepts)."""
    return tuple(getattr(lc_errors, name) for name in names if hasattr(lc_errors, name))


_REFUSALS = _lc_types("ModelRefusalError")
_OVERFLOWS = _lc_types("ContextOverflowError")


def _transient_types() -> tuple[type[BaseException], ...]:
    """Transport failures of the standard library and the HTTP clients that are installed.

    httpx's ``UnsupportedProtocol`` and ``LocalProtocolError`` are transport errors too, but
    they come from a bad URL or our own request, which a retry repeats; they are left out.
    """
    found: list[type[BaseException]] = [TimeoutError, ConnectionError, socket.gaierror]
    try:
        import httpx

        found += [httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError]
        found += [httpx.ProxyError]
    except ImportError:  # pragma: no cover - httpx comes with langchain-openai
        pass
    try:
        import httpcore

        found += [httpcore.TimeoutException, httpcore.NetworkError, httpcore.RemoteProtocolError]
    except ImportError:  # pragma: no cover
        pass
    try:
        import requests

        found += [requests.exceptions.ConnectionError, requests.exceptions.Timeout]
    except ImportError:  # pragma: no cover - requests is optional
        pass
    return tuple(found)


_TRANSIENT_TYPES = _transient_types()


def exception_chain(exc: BaseException, limit: int = MAX_CHAIN) -> Iterator[BaseException]:
    """``exc``, then what caused it (``__cause__``, else ``__context__`` unless suppressed by
    ``raise ... from None``), at most ``limit`` links and each once, so a cycle ends."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < limit:
        seen.add(id(link))
        yield link
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)


def _as_status(code: object) -> int | None:
    """``code`` if it is an HTTP status (an int in 100..599, not a bool), else None."""
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
        return code
    return None


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status the error or its ``response`` carries (SDKs name it differently; a
    ``response`` that is a mapping, as botocore's, has it in ``ResponseMetadata``)."""
    response = getattr(exc, "response", None)
    for holder in (exc, response):
        for name in _STATUS_ATTRIBUTES:
            if (code := _as_status(getattr(holder, name, None))) is not None:
                return code
    if isinstance(response, Mapping):
        meta = response.get("ResponseMetadata")
        if isinstance(meta, Mapping):
            return _as_status(meta.get("HTTPStatusCode"))
    return None


def _class_of_status(code: int) -> ErrorClass | None:
    """401/403 deny, 408/409/425/429 and 5xx (Anthropic's 529 "overloaded" too) pass,
    other 4xx are the request's fault; a 2xx or 3xx says nothing about the failure."""
    if code in (401, 403):
        return ErrorClass.PERMISSION_DENIED
    if code in (408, 409, 425, 429) or code >= 500:
        return ErrorClass.TRANSIENT
    if 400 <= code < 500:
        return ErrorClass.INVALID_INPUT
    return None


def _field(holder: object, name: str) -> object:
    return holder.get(name) if isinstance(holder, Mapping) else getattr(holder, name, None)


def _error_type_names(exc: BaseException) -> Iterator[str]:
    """Type names of the error and its bases, the type an error body reports (an Anthropic
    stream's ``{"error": {"type": "overloaded_error"}}`` arrives with status 200), a status
    name (google-genai's ``status="UNAVAILABLE"``) and an AWS error code."""
    for cls in type(exc).__mro__:
        if cls not in (BaseException, Exception, object):
            yield cls.__name__
    holders: list[object] = [exc]
    for name in ("body", "response", "response_json", "details"):
        outer = _field(exc, name)
        if isinstance(outer, Mapping):
            holders += [outer, outer.get("error"), outer.get("Error")]
    for holder in holders:
        for name in ("type", "status", "Code"):
            kind = _field(holder, name)
            if isinstance(kind, str):
                yield kind


def _named(exc: BaseException, words: tuple[str, ...]) -> bool:
    names = (name.replace("_", "").lower() for name in _error_type_names(exc))
    return any(word in name for name in names for word in words)


def _looks_transient(exc: BaseException) -> bool:
    """A failure that the same request may not meet again: by type, by flag or by name."""
    if isinstance(exc, _TRANSIENT_TYPES) or getattr(exc, "is_retryable", None) is True:
        return True
    return _named(exc, _TRANSIENT_WORDS)


def _class_of_link(exc: BaseException) -> ErrorClass | None:
    """What one exception says about the failure by itself, or None if it says nothing."""
    if isinstance(exc, AgentError):
        return exc.error_class
    text = str(exc)[:4000].lower()
    if isinstance(exc, _REFUSALS) or any(m in text for m in _POLICY_MARKERS):
        return ErrorClass.POLICY_REJECTED
    code = _status_code(exc)
    if code is not None and (by_status := _class_of_status(code)) is not None:
        if by_status is ErrorClass.INVALID_INPUT and _named(exc, _TRANSIENT_WORDS):
            return ErrorClass.TRANSIENT  # a named condition beats a generic 400 (AWS throttles)
        return by_status
    if isinstance(exc, _OVERFLOWS):
        return ErrorClass.INVALID_INPUT  # a shorter request may pass; the same one never will
    if isinstance(exc, PermissionError) or _named(exc, _DENIED_WORDS):
        return ErrorClass.PERMISSION_DENIED
    if _looks_transient(exc):
        return ErrorClass.TRANSIENT
    if isinstance(exc, ValidationError | json.JSONDecodeError):
        return ErrorClass.DETERMINISTIC_VALIDATION
    return None


def classify(exc: BaseException) -> ErrorClass:
    """Map an exception to its error class: the first link of its chain that has one wins."""
    for link in exception_chain(exc):
        if (found := _class_of_link(link)) is not None:
            return found
    return ErrorClass.UNKNOWN


# What servers say when a request does not fit the model's context window: OpenAI
# ("maximum context length", code context_length_exceeded), llama.cpp ("the request exceeds
# the available context size", exceed_context_size_error, n_ctx), vLLM ("maximum context
# length"), Ollama, Anthropic ("prompt is too long"), Bedrock/Gemini ("input is too long",
# "exceeds the maximum number of tokens").
_CONTEXT_MARKERS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "context size",
    "exceed_context",
    "exceeds the context",
    "n_ctx",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "maximum number of tokens",
)


def is_context_overflow(exc: BaseException) -> bool:
    """Whether a model request failed because it does not fit the model's context window:
    a shorter request may pass where the same one never will (it is ``invalid_input``)."""
    for link in exception_chain(exc):
        if isinstance(link, _OVERFLOWS):
            return True
        if isinstance(link, AgentError):
            return False
        text = str(link)[:4000].lower()
        if any(marker in text for marker in _CONTEXT_MARKERS):
            code = _status_code(link)
            return code is None or 400 <= code < 500
    return False


def timed_out(exc: BaseException) -> bool:
    """Whether a request failed because no answer came in time (not a refusal)."""
    for link in exception_chain(exc):
        if isinstance(link, TimeoutError) or _named(link, ("timeout", "timedout")):
            return True
    return False


def cut_off(exc: BaseException) -> bool:
    """Whether a request failed only because the answer reached its token limit unfinished
    (openai's ``LengthFinishReasonError``): malformed output to retry, not an unknown fault."""
    for link in exception_chain(exc):
        if _named(link, ("lengthfinishreason",)) or "length limit was reached" in str(link)[:2000]:
            return True
    return False


def is_transient(exc: BaseException) -> bool:
    """``retry_on`` for LangGraph's ``RetryPolicy``: only transient errors are retried."""
    return classify(exc) is ErrorClass.TRANSIENT


# the variables that point a provider's client at a server of one's own
BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL", "OLLAMA_HOST")


def unreachable_server(exc: BaseException) -> str | None:
    """``"the server at URL (set by VAR)"`` when ``exc`` is a connection that never reached
    a server (HTTP clients keep the request, and so its URL), else None."""
    import os

    for link in exception_chain(exc):
        url = getattr(getattr(link, "request", None), "url", None)
        if url is None or _status_code(link) is not None or not _connection_failed(link):
            continue
        shown = str(url)
        origin = f"{getattr(url, 'scheme', '')}://{getattr(url, 'netloc', b'').decode()}"
        named = [v for v in BASE_URL_VARIABLES if (os.environ.get(v) or "\0").startswith(origin)]
        return f"the server at {shown}" + (f" (set by {named[0]})" if named else "")
    return None


def _connection_failed(exc: BaseException) -> bool:
    """A transport error before any answer: refused, unresolved, timed out connecting."""
    return any("connect" in type(link).__name__.lower() for link in exception_chain(exc))


def describe(exc: BaseException, limit: int = 300) -> str:
    """A short, single-line description that keeps the evidence of what went wrong."""
    text = " ".join(f"{type(exc).__name__}: {str(exc)[: limit * 4]}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
