"""Error classes (seed 001): the class of a failure chooses the next action, not the model."""

from __future__ import annotations

import json
from enum import StrEnum

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


class ConfigError(AgentError):
    """Bad configuration (model string, missing key): the CLI exits 2 with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorClass.INVALID_INPUT, message)


_POLICY_MARKERS = ("content_policy", "content policy", "content_filter", "content filter")
_TRANSIENT_NAMES = (
    "RateLimitError",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "ReadTimeout",
    "ConnectTimeout",
    "ConnectError",
    "RemoteProtocolError",
)


def _status_code(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None) or getattr(holder, "status", None)
        if isinstance(code, int):
            return code
    return None


def classify(exc: BaseException) -> ErrorClass:
    """Map an exception to its error class (HTTP status first, then its type)."""
    if isinstance(exc, AgentError):
        return exc.error_class
    text = str(exc).lower()
    if any(marker in text for marker in _POLICY_MARKERS):
        return ErrorClass.POLICY_REJECTED
    code = _status_code(exc)
    if code is not None:
        if code in (401, 403):
            return ErrorClass.PERMISSION_DENIED
        if code in (408, 409, 425, 429) or code >= 500:
            return ErrorClass.TRANSIENT
        if 400 <= code < 500:
            return ErrorClass.INVALID_INPUT
    if isinstance(exc, TimeoutError | ConnectionError) or type(exc).__name__ in _TRANSIENT_NAMES:
        return ErrorClass.TRANSIENT
    if isinstance(exc, PermissionError):
        return ErrorClass.PERMISSION_DENIED
    if isinstance(exc, ValidationError | json.JSONDecodeError):
        return ErrorClass.DETERMINISTIC_VALIDATION
    return ErrorClass.UNKNOWN


def is_transient(exc: BaseException) -> bool:
    """``retry_on`` for LangGraph's ``RetryPolicy``: only transient errors are retried."""
    return classify(exc) is ErrorClass.TRANSIENT


def describe(exc: BaseException, limit: int = 300) -> str:
    """A short, single-line description that keeps the evidence of what went wrong."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
