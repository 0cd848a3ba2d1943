"""A request over the model's context window fails only its step: the conversation is
asked again with its oldest tool results trimmed, then the step fails with a clear reason."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from agent.controller.context_window import ContextWindowExceeded, trim_note, trim_tool_results
from agent.controller.records import StepRun
from agent.controller.revise import LoopConfig
from agent.controller.worker import StepWorker
from agent.errors import AgentError, ErrorClass, classify, is_context_overflow, timed_out
from agent.models.factory import Metered
from agent.models.scripted import ScriptedChatModel, tool_call

LLAMA_CPP = "the request exceeds the available context size, try increasing it"
STEP = {
    "step_id": "S1",
    "depends_on": [],
    "action": "coder",
    "instructions": "Read big.txt, then write out.txt containing OK.",
    "expected_output": "out.txt",
    "done_when": {"kind": "contains", "all": ["OK"]},
}


class HTTPError(Exception):
    """An SDK's error as the classifier sees it: a message and a status."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.status_code = status_code


@pytest.mark.parametrize(
    "message",
    [
        f"Error code: 400 - {{'error': {{'code': 400, 'message': '{LLAMA_CPP}', "
        "'type': 'exceed_context_size_error', 'n_prompt_tokens': 5012, 'n_ctx': 4096}}",
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9001 tokens.",
        "Requested token count exceeds the model's maximum context length of 4096 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Input is too long for requested model.",
        "'code': 'context_length_exceeded'",
    ],
)
def test_context_length_errors_of_every_server_are_recognised(message):
    assert is_context_overflow(HTTPError(message))
    assert is_context_overflow(RuntimeError("wrapped")) is False
    try:
        try:
            raise HTTPError(message)
        except HTTPError as inner:
            raise RuntimeError("the client failed") from inner
    except RuntimeError as outer:
        assert is_context_overflow(outer)


@pytest.mark.parametrize(
    "exc",
    [
        HTTPError("rate limit exceeded", 429),
        HTTPError("model not found", 404),
        HTTPError("maximum context length", 503),  # a server error, not the request's size
        AgentError(ErrorClass.INVALID_INPUT, "the context window of the goal"),
        TimeoutError("read timed out"),
    ],
)
def test_other_errors_are_not_context_overflows(exc):
    assert not is_context_overflow(exc)


def conversation():
    return [
        SystemMessage("system"),
        HumanMessage("task"),
        tool_call("read_file", path="a"),
        ToolMessage("a" * 100, tool_call_id="1"),
        ToolMessage("b" * 200, tool_call_id="2"),
        HumanMessage("reminder"),
        ToolMessage("c" * 300, tool_call_id="3"),
    ]


def test_oldest_tool_results_are_trimmed_first_and_the_rest_is_kept():
    messages = conversation()
    assert trim_tool_results(messages, keep=1) == 2
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == [
        trim_note(100),
        trim_note(200),
        "c" * 300,
    ]
    assert [m.tool_call_id for m in messages if isinstance(m, ToolMessage)] == ["1", "2", "3"]
    assert [m.content for m in messages[:2]] == ["system", "task"]
    assert messages[5].content == "reminder" and messages[2].tool_calls
    assert trim_tool_results(messages, keep=1) == 0  # trimmed ones are not trimmed again
    assert trim_tool_results(messages, keep=0) == 1 and messages[-1].content == trim_note(300)
    assert trim_tool_results(messages, keep=0) == 0


def limited_model(script, limit, *, refuse=None):
    """A scripted model whose server refuses any conversation longer than ``limit`` chars
    (or any that ``refuse`` says does not fit)."""
    queue = list(script)
    seen = []

    def respond(messages):
        size = sum(len(str(m.content)) for m in messages)
        seen.append(size)
        if size > limit or (refuse is not None and refuse(messages)):
            raise HTTPError(f"Error code: 400 - {LLAMA_CPP} (n_ctx: {limit})")
        return queue.pop(0)

    return ScriptedChatModel(responder=respond), seen


def run_step(model, inputs, tool_calling="native") -> StepRun:
    """The step as the subagent node runs it (awaited); through its tools unless told."""
    worker = StepWorker(
        step=STEP,
        goal="the goal",
        inputs=inputs,
        round_no=1,
        system_prompt="system",
        model=Metered(model, "coder", "function_calling"),
        judge=None,
        loop_config=LoopConfig(max_revisions=1),
        tool_calling=tool_calling,
    )
    return asyncio.run(worker.aexecute())


# a step reading a big input, then writing its artifact
READ_THEN_WRITE = [
    tool_call("read_file", path="big.txt"),
    tool_call("write_file", path="out.txt", content="OK"),
    "done",
]


def test_a_conversation_over_the_window_is_retried_trimmed_and_the_step_succeeds():
    model, seen = limited_model(READ_THEN_WRITE, limit=3_000)
    run = run_step(model, {"big.txt": "x" * 5_000})
    assert run.files["out.txt"]["status"] == "done"
    assert seen[1] > 3_000 and seen[2] < 3_000  # refused, then asked again trimmed
    trimmed = [e for e in run.trajectory if e["action"] == "context_trimmed"]
    assert len(trimmed) == 1 and trimmed[0]["trimmed"] == 1
    assert not [e for e in run.trajectory if e["action"] == "error"]


def test_a_direct_prompt_over_the_window_is_asked_again_through_the_tools_and_trimmed():
    model, seen = limited_model(READ_THEN_WRITE, limit=3_000)
    run = run_step(model, {"big.txt": "x" * 5_000}, tool_calling="auto")
    assert run.files["out.txt"]["status"] == "done"
    assert seen[0] > 3_000 and seen[1] < 3_000  # the file in the prompt; then the tool path
    assert [e["action"] for e in run.trajectory][:2] == ["context_window", "read_file"]


def test_a_step_that_does_not_fit_even_trimmed_fails_alone_with_a_clear_reason():
    script = [tool_call("read_file", path="big.txt"), "never reached"]

    def after_a_tool_result(messages):  # the task fits; nothing after a tool result does
        return any(isinstance(m, ToolMessage) for m in messages)

    model, seen = limited_model(script, 10**6, refuse=after_a_tool_result)
    run = run_step(model, {"big.txt": "x" * 5_000})  # recorded, not raised
    assert len(seen) == 3  # the task; the read, refused; the read trimmed, refused too
    (error,) = [e for e in run.trajectory if e["action"] == "error"]
    assert error["error_class"] == "deterministic_validation"
    assert "does not fit the model's context window" in error["observation"]
    assert "1 tool result(s) trimmed" in error["observation"]
    assert "out.txt" not in run.files or run.files["out.txt"]["status"] != "done"


def test_a_task_that_does_not_fit_at_all_fails_the_step_without_trimming():
    model, seen = limited_model(["never reached"], limit=20)
    run = run_step(model, {})
    (error,) = [e for e in run.trajectory if e["action"] == "error"]
    assert "0 tool result(s) trimmed" in error["observation"] and len(seen) == 1


def test_the_refusal_is_a_step_failure_not_an_invalid_input():
    exc = ContextWindowExceeded(HTTPError(LLAMA_CPP), trimmed=3)
    assert classify(exc) is ErrorClass.DETERMINISTIC_VALIDATION
    assert "3 tool result(s) trimmed" in str(exc) and LLAMA_CPP in str(exc)


def test_any_other_model_error_is_not_retried_trimmed():
    model = ScriptedChatModel([AgentError("permission_denied", "401 invalid api key")])
    run = run_step(model, {})
    assert [e["error_class"] for e in run.trajectory if e["action"] == "error"] == [
        "permission_denied"
    ]
    assert not [e for e in run.trajectory if e["action"] == "context_trimmed"]


def test_a_timeout_is_told_from_a_refusal_and_from_a_context_overflow():
    assert timed_out(TimeoutError("read timed out"))
    assert timed_out(httpx.ReadTimeout("timed out"))
    try:
        try:
            raise httpx.ReadTimeout("timed out")
        except httpx.ReadTimeout as inner:
            raise RuntimeError("Request timed out.") from inner
    except RuntimeError as outer:
        assert timed_out(outer)
    assert not timed_out(HTTPError("response_format is not supported"))
    assert not timed_out(HTTPError(LLAMA_CPP))
    assert not is_context_overflow(TimeoutError("read timed out"))
