"""Fault injection: scripted models that raise, and what the graph does about it.

Transient errors (timeouts, 429, 5xx) are retried by the node's ``RetryPolicy`` with backoff,
within a bound, and the run stays resumable from its checkpoint when the bound is hit.
Permanent errors (401/403, a content-policy refusal, a 400) stop the run with the right
status and stop reason and are never retried. A failing parallel subagent keeps its
siblings' finished work, and resuming re-runs only the failed step.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import BaseMessage
from langgraph.types import RetryPolicy

from agent import ScriptedChatModel, resume, run
from agent.errors import ErrorClass, classify, is_transient
from agent.graph.build import DEFAULT_RETRY
from agent.runs.runner import thread_config
from tests.fakes import END, ctx, models, sqlite_graph, step, writer

INITIAL = 0.01
# jitter=False: LangGraph's jitter adds up to 1 s per retry, which would only slow the suite.
RETRY = RetryPolicy(max_attempts=3, initial_interval=INITIAL, jitter=False, retry_on=is_transient)
INJECTED: Counter[str] = Counter()  # faults raised by the scripted models of this module


@pytest.fixture(scope="module", autouse=True)
def _report_faults():
    yield
    print(f"\nfaults injected: {sum(INJECTED.values())} ({dict(sorted(INJECTED.items()))})")


class StatusError(Exception):
    """The smallest error with an HTTP status, as any SDK might raise it."""

    def __init__(self, status_code: int, message: str = "") -> None:
        super().__init__(message or f"HTTP {status_code}")
        self.status_code = status_code


def _response(code: int) -> httpx.Response:
    request = httpx.Request("POST", "https://api.example.test/v1/chat/completions")
    return httpx.Response(code, request=request)


def _request() -> httpx.Request:
    return httpx.Request("POST", "https://api.example.test/v1/chat/completions")


TRANSIENT: dict[str, Callable[[], BaseException]] = {
    "TimeoutError": lambda: TimeoutError("the model did not answer in 120 s"),
    "status 429": lambda: StatusError(429, "Too Many Requests"),
    "status 503": lambda: StatusError(503, "Service Unavailable"),
    "openai.RateLimitError": lambda: openai.RateLimitError(
        "Rate limit reached for gpt-4.1-mini", response=_response(429), body=None
    ),
    "openai.InternalServerError": lambda: openai.InternalServerError(
        "The server is overloaded", response=_response(503), body=None
    ),
    "openai.APITimeoutError": lambda: openai.APITimeoutError(request=_request()),
    "openai.APIConnectionError": lambda: openai.APIConnectionError(request=_request()),
    "httpx.ReadTimeout": lambda: httpx.ReadTimeout("timed out", request=_request()),
}
PERMANENT: dict[str, tuple[Callable[[], BaseException], str, str]] = {
    "401": (
        lambda: openai.AuthenticationError(
            "Incorrect API key provided", response=_response(401), body=None
        ),
        "permission_denied",
        "Incorrect API key provided",
    ),
    "403": (
        lambda: StatusError(403, "this project may not use the model"),
        "permission_denied",
        "may not use the model",
    ),
    "content policy": (
        lambda: openai.BadRequestError(
            "Error code: 400 - {'error': {'code': 'content_policy_violation', 'message': "
            "'Your request was rejected as a result of our safety system.'}}",
            response=_response(400),
            body=None,
        ),
        "policy_rejected",
        "content_policy_violation",
    ),
    "400": (
        lambda: openai.BadRequestError(
            "Error code: 400 - Unrecognized request argument supplied: logit_scale",
            response=_response(400),
            body=None,
        ),
        "invalid_input",
        "Unrecognized request argument",
    ),
}
CONTEXT_LENGTH = "Error code: 400 - maximum context length is 128000 tokens"


class Script:
    """A responder replaying ``items`` (an exception is raised), recording when it was called.

    ``down`` makes every call raise ``fault()`` until it is cleared: a model that fails
    forever, then recovers.
    """

    def __init__(
        self,
        items: list[Any] | None = None,
        *,
        fault: Callable[[], BaseException] | None = None,
        then: Callable[[list[BaseMessage]], Any] | None = None,
    ) -> None:
        self.items = list(items or [])
        self.fault = fault
        self.down = fault is not None
        self.then = then
        self.times: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, messages: list[BaseMessage]) -> Any:
        with self.lock:
            self.times.append(time.monotonic())
            if self.down:
                item: Any = self.fault()
            elif self.items:
                item = self.items.pop(0)
            else:
                item = self.then(messages) if self.then else "(script exhausted)"
        if isinstance(item, BaseException):
            INJECTED[type(item).__name__] += 1
        return item

    @property
    def calls(self) -> int:
        return len(self.times)


def graph_with(tmp_path, roles, **kwargs):
    kwargs.setdefault("retry_policy", RETRY)
    graph, _ = sqlite_graph(tmp_path, roles, **kwargs)
    return graph


def values(graph, thread_id: str = "t") -> dict[str, Any]:
    return graph.get_state(thread_config(thread_id)).values


def test_every_injected_transient_error_is_classified_transient():
    for name, make in TRANSIENT.items():
        assert classify(make()) is ErrorClass.TRANSIENT, name
    assert DEFAULT_RETRY.max_attempts == 3 and DEFAULT_RETRY.retry_on is is_transient


# ----------------------------------------------------------------------------- transient


@pytest.mark.parametrize("fault", list(TRANSIENT), ids=list(TRANSIENT))
def test_a_planner_that_fails_twice_then_answers_succeeds_after_backoff(tmp_path, fault):
    plan = [step("S1", "a.md")]
    script = Script([TRANSIENT[fault](), TRANSIENT[fault](), {"steps": plan}])
    roles = models(plan, [END], planner=ScriptedChatModel(responder=script))
    result = run(graph_with(tmp_path, roles), "goal", context=ctx(), thread_id="t")
    assert result["status"] == "success" and result["stop_reason"] == "end"
    assert script.calls == 3
    first_wait, second_wait = (b - a for a, b in zip(script.times, script.times[1:], strict=False))
    assert first_wait >= INITIAL and second_wait >= 2 * INITIAL  # exponential backoff
    assert second_wait < 5  # and bounded


def test_a_planner_failing_forever_pauses_after_exactly_three_attempts_and_a_retry_resumes(
    tmp_path,
):
    plan = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    script = Script(fault=TRANSIENT["openai.InternalServerError"], then=lambda m: {"steps": plan})
    roles = models(plan, [END], planner=ScriptedChatModel(responder=script))
    graph = graph_with(tmp_path, roles)
    paused = run(graph, "goal", context=ctx(), thread_id="t")
    assert script.calls == 3  # max_attempts, not one more
    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "model_unavailable")
    question = values(graph)["escalation"]["question"]
    assert "planner model" in question and "overloaded" in question  # the error stays
    last = values(graph)["messages"][-1]  # in the chat too, as the paused thread's last message
    assert last.type == "ai" and "overloaded" in str(last.content)

    script.down = False  # the provider recovers
    result = resume(graph, "t", "retry", context=ctx())
    assert result["status"] == "success"
    assert script.calls == 4
    assert {p: a["status"] for p, a in result["artifacts"].items()} == {
        "a.md": "done",
        "b.md": "done",
    }


def test_a_reflection_failing_forever_pauses_and_a_retry_redoes_no_subagent(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md")]
    sub_calls: Counter[str] = Counter()

    def subagent(messages, metadata):
        sub_calls[metadata["step_id"]] += 1
        return writer()(messages, metadata)

    script = Script(fault=lambda: TimeoutError("reflection timed out"), then=lambda m: END)
    roles = models(plan, [], subagent, reflection=ScriptedChatModel(responder=script))
    graph = graph_with(tmp_path, roles)
    paused = run(graph, "goal", context=ctx(), thread_id="t")
    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "model_unavailable")
    assert script.calls == 3
    done = {p: e["sha256"] for p, e in values(graph)["files"].items() if e["status"] == "done"}
    assert set(done) == {"a.md", "b.md"}
    assert sub_calls == {"S1": 2, "S2": 2}

    script.down = False
    result = resume(graph, "t", "retry", context=ctx())
    assert result["status"] == "success"
    assert sub_calls == {"S1": 2, "S2": 2}  # nothing was regenerated
    assert {p: values(graph)["files"][p]["sha256"] for p in done} == done


def test_a_subagent_timeout_is_retried_and_only_that_step_runs_again(tmp_path):
    calls: Counter[str] = Counter()
    failed = threading.Event()

    def subagent(messages, metadata):
        step_id = metadata["step_id"]
        calls[step_id] += 1
        if step_id == "S1" and not failed.is_set():
            failed.set()
            INJECTED["TimeoutError"] += 1
            return TimeoutError("read timed out")
        return writer()(messages, metadata)

    plan = [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    result = run(graph_with(tmp_path, models(plan, [END], subagent)), "goal", context=ctx())
    assert result["status"] == "success"
    assert calls == {"S1": 3, "S2": 2}  # S1: the failed call, then write + final line


# ----------------------------------------------------------------------------- permanent


def _permanent_case(role: str, name: str):
    return pytest.param(role, name, id=f"{role}-{name}")


@pytest.mark.parametrize(
    ("role", "name"),
    [_permanent_case(r, n) for r in ("planner", "reflection", "subagent") for n in PERMANENT],
)
def test_a_permanent_error_stops_the_run_with_its_class_and_is_never_retried(tmp_path, role, name):
    make, stop_reason, evidence = PERMANENT[name]
    script = Script(fault=make)
    plan = [step("S1", "a.md")]
    go_on = {"decision": "continue", "reason": "try again"}
    if role == "planner":
        roles = models(plan, [END], planner=ScriptedChatModel(responder=script))
    elif role == "reflection":
        roles = models(plan, [], reflection=ScriptedChatModel(responder=script))
    else:
        roles = models(plan, [go_on, go_on, END], script)
    graph = graph_with(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", stop_reason)
    assert script.calls == 1  # not retried, by the RetryPolicy or by the graph
    message = str(values(graph)["messages"][-1].content)
    assert message.startswith(f"The run failed ({stop_reason})") and evidence in message


@pytest.mark.parametrize("role", ["planner", "reflection"])
def test_a_planner_or_reflection_request_over_the_context_window_stops_the_run(tmp_path, role):
    script = Script(
        fault=lambda: openai.BadRequestError(CONTEXT_LENGTH, response=_response(400), body=None)
    )
    plan = [step("S1", "a.md")]
    if role == "planner":
        roles = models(plan, [END], planner=ScriptedChatModel(responder=script))
    else:
        roles = models(plan, [], reflection=ScriptedChatModel(responder=script))
    result = run(graph_with(tmp_path, roles), "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", "invalid_input")
    assert script.calls == 1


def test_a_subagent_request_over_the_context_window_fails_only_its_step(tmp_path):
    script = Script(
        fault=lambda: openai.BadRequestError(CONTEXT_LENGTH, response=_response(400), body=None)
    )
    go_on = {"decision": "continue", "reason": "try again"}
    roles = models([step("S1", "a.md")], [go_on, go_on, END], script)
    graph = graph_with(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "subagent_failed_twice")
    assert "does not fit the model's context window" in result["escalation"]["question"]
    # per attempt of the step: asked directly, then through the tools; nothing to trim
    assert script.calls == 4


# ----------------------------------------------------------------------------- parallel


def test_a_parallel_subagent_failing_forever_keeps_its_siblings_work(tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md"), step("S3", "c.md")]
    calls: Counter[str] = Counter()
    siblings_done = threading.Barrier(3)
    state = {"down": True, "waited": False}

    def subagent(messages, metadata):
        step_id = metadata["step_id"]
        calls[step_id] += 1
        if step_id == "S2" and state["down"]:
            if not state["waited"]:  # fail only once S1 and S3 have finished their steps
                state["waited"] = True
                siblings_done.wait(timeout=10)
                time.sleep(0.2)
            INJECTED["RateLimitError"] += 1
            return TRANSIENT["openai.RateLimitError"]()
        answer = writer()(messages, metadata)
        if isinstance(answer, str) and state["down"]:  # the final line: the draft is written
            siblings_done.wait(timeout=10)
        return answer

    roles = models(plan, [END], subagent)
    graph = graph_with(tmp_path, roles)
    with pytest.raises(openai.RateLimitError):
        run(graph, "goal", context=ctx(max_parallel=3), thread_id="t")
    assert calls == {"S1": 2, "S2": 3, "S3": 2}  # S2: exactly max_attempts

    snapshot = graph.get_state(thread_config("t"))
    assert snapshot.next == ("subagent",) and len(snapshot.tasks) == 3
    failed = [t for t in snapshot.tasks if t.error is not None]
    kept = {
        path: entry["sha256"]
        for t in snapshot.tasks
        for path, entry in ((t.result or {}).get("files") or {}).items()
        if entry and entry["status"] == "done"
    }
    assert len(failed) == 1 and "RateLimitError" in repr(failed[0].error)
    assert failed[0].result is None
    assert set(kept) == {"a.md", "c.md"}  # the siblings' finished artifacts, as pending writes

    state["down"] = False
    result = resume(graph, "t", None, context=ctx(max_parallel=3))
    assert result["status"] == "success"
    assert calls == {"S1": 2, "S2": 5, "S3": 2}  # only S2 ran again
    files = values(graph)["files"]
    assert {p: files[p]["sha256"] for p in kept} == kept
    assert files["b.md"]["status"] == "done"


# ----------------------------------------------------------------------------- the judge


def test_a_transient_judge_error_is_retried_not_blamed_on_the_artifact(tmp_path):
    judge_script = Script([TRANSIENT["openai.RateLimitError"]()], then=lambda m: {"score": 1.0})
    plan = [step("S1", "a.md", check="The file names its subject")]
    roles = models(plan, [END], judge=ScriptedChatModel(responder=judge_script))
    graph = graph_with(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    checks = [e for e in values(graph)["trajectory"] if e["action"] == "check"]
    assert result["status"] == "success"
    assert all(c["check"]["passed"] for c in checks), [c["observation"] for c in checks]
    assert judge_script.calls == 2


def test_a_judge_without_permission_stops_the_run(tmp_path):
    judge_script = Script(fault=PERMANENT["401"][0])
    plan = [step("S1", "a.md", check="The file names its subject")]
    go_on = {"decision": "continue", "reason": "try again"}
    roles = models(plan, [go_on, go_on], judge=ScriptedChatModel(responder=judge_script))
    result = run(graph_with(tmp_path, roles), "goal", context=ctx(), thread_id="t")
    assert (result["status"], result["stop_reason"]) == ("failed", "permission_denied")
    assert judge_script.calls == 1
