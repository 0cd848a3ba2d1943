import json

import pytest
from pydantic import BaseModel, ValidationError

from agent.errors import AgentError, ErrorClass, classify, is_transient


class _HTTPError(Exception):
    def __init__(self, status_code: int, message: str = "") -> None:
        super().__init__(message or f"HTTP {status_code}")
        self.status_code = status_code


class _M(BaseModel):
    x: int


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_HTTPError(429), ErrorClass.TRANSIENT),
        (_HTTPError(503), ErrorClass.TRANSIENT),
        (TimeoutError("read timed out"), ErrorClass.TRANSIENT),
        (_HTTPError(401), ErrorClass.PERMISSION_DENIED),
        (_HTTPError(403), ErrorClass.PERMISSION_DENIED),
        (_HTTPError(400, "content_policy_violation"), ErrorClass.POLICY_REJECTED),
        (_HTTPError(400, "bad request"), ErrorClass.INVALID_INPUT),
        (AgentError("policy_rejected", "refused"), ErrorClass.POLICY_REJECTED),
        (json.JSONDecodeError("x", "doc", 0), ErrorClass.DETERMINISTIC_VALIDATION),
        (RuntimeError("something odd"), ErrorClass.UNKNOWN),
    ],
)
def test_classify(exc, expected):
    assert classify(exc) is expected


def test_pydantic_errors_are_deterministic_validation():
    with pytest.raises(ValidationError) as err:
        _M(x="not a number")
    assert classify(err.value) is ErrorClass.DETERMINISTIC_VALIDATION


def test_only_transient_errors_are_retried():
    assert is_transient(_HTTPError(429)) and not is_transient(_HTTPError(401))
