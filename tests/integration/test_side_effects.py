"""Tool calls that happen once (issue 15): journaled with an idempotency key, reused on a
retry, a crash-resume or a revision, and never re-run blindly when their outcome is
unknown; approvals bound to the call's exact arguments."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import RetryPolicy

from agent import build_graph, resume, run
from agent.errors import is_transient
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config
from tests.fakes import ctx, step
from tests.side_effects import (
    REPORT,
    Outbox,
    email_tool,
    emailer,
    in_turn,
    keyed_email_tool,
    report,
    roles_for,
    send,
    tool_answers,
)

PLAN_AGAIN = [step("S1", REPORT, action="coder", check={"kind": "contains", "all": ["sent"]})]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RETRY = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=is_transient)


def sqlite_saver(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "threads.sqlite"), check_same_thread=False)
    return SqliteSaver(conn)


def graph_with(tmp_path, subagent, tools, **kwargs):
    roles = roles_for(subagent, kwargs.pop("plan", None))
    graph = build_graph(
        models=roles, checkpointer=sqlite_saver(tmp_path), tools={"coder": tools}, **kwargs
    )
    return graph, roles


def values(graph, thread="t"):
    return graph.get_state(thread_config(thread)).values


def tool_events(state, name="send_email"):
    return [e for e in state["trajectory"] if e.get("action") == name]


# ------------------------------------------------------------------ retries and revisions


def test_a_transient_error_after_the_call_retries_the_step_without_sending_twice(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    failed = []

    def flaky(answered):
        if answered == 1 and not failed:  # the model times out right after the email
            failed.append(1)
            raise TimeoutError("the model did not answer")

    graph, roles = graph_with(
        tmp_path, emailer(after=flaky), [email_tool(outbox)], retry_policy=RETRY
    )
    result = run(graph, "send and report", thread_id="t", context=ctx())
    assert result["status"] == "success"
    assert len(outbox.sent()) == 1  # the tool's own counter: exactly one execution
    events = tool_events(values(graph))
    assert len(events) == 1  # the failed attempt wrote nothing; the retry reused the result
    assert events[0]["reused"] is True and events[0]["key"].startswith("dr-")
    assert values(graph)["files"][REPORT]["content"] == "sent email #1 to ops@example.com\n"


def test_a_revision_that_repeats_the_identical_call_reuses_its_result(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    # the first draft forgets what the check wants; the revision sends the same email again
    respond = in_turn(send(), report(lambda a, m: str(a[0].content) if m["revision"] else "-"))
    graph, _ = graph_with(tmp_path, respond, [email_tool(outbox)])
    result = run(graph, "send and report", thread_id="t", context=ctx())
    assert result["status"] == "success"
    assert len(outbox.sent()) == 1
    first, second = tool_events(values(graph))
    assert first["key"] == second["key"] and second["reused"] is True and "reused" not in first


def test_an_identical_call_made_twice_in_one_draft_runs_twice(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    reminder = send(body="reminder")
    respond = in_turn(reminder, reminder, report(lambda a, m: "sent twice\n"))
    graph, _ = graph_with(tmp_path, respond, [email_tool(outbox)])
    assert run(graph, "remind twice", thread_id="t", context=ctx())["status"] == "success"
    assert len(outbox.sent()) == 2  # two calls the model meant, not one repeated by a retry
    first, second = tool_events(values(graph))
    assert first["key"] != second["key"]


def test_read_only_tools_run_every_time(tmp_path):
    from langchain_core.tools import tool

    from agent.store.effects import declare_tool

    reads = []

    @tool
    def lookup(who: str) -> str:
        """Look someone up."""
        reads.append(who)
        return f"{who} is sent"

    failed = []

    def respond(messages, metadata):
        answers = tool_answers(messages)
        if answers and len(answers) == 1 and not failed:
            failed.append(1)
            raise TimeoutError("the model did not answer")
        if not answers:
            return tool_call("lookup", who="x")
        if len(answers) == 1:
            return tool_call("write_file", path=REPORT, content=str(answers[0].content))
        return "done"

    graph, _ = graph_with(
        tmp_path, respond, [declare_tool(lookup, read_only=True)], retry_policy=RETRY
    )
    assert run(graph, "look up", thread_id="t", context=ctx())["status"] == "success"
    assert reads == ["x", "x"]  # re-run on the retry: nothing journaled, nothing to reuse
    assert "key" not in tool_events(values(graph), "lookup")[0]


# ------------------------------------------------------------------ unknown outcomes


def _timeout():
    raise TimeoutError("the mail server did not answer")


def test_a_call_that_timed_out_escalates_with_its_key_instead_of_running_again(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    graph, roles = graph_with(tmp_path, emailer(), [email_tool(outbox, then=_timeout)])
    result = run(graph, "send and report", thread_id="t", context=ctx())
    assert result["status"] == "awaiting_input"
    assert len(outbox.sent()) == 1
    request = values(graph)["escalation"]["action_requests"][0]
    assert request["kind"] == "unknown_outcome" and request["name"] == "send_email"
    assert request["idempotency_key"].startswith("dr-")
    assert request["args"] == {"to": "ops@example.com", "body": "deploy done"}
    calls_before = len(roles["default"].calls)

    # the human checked: it was sent; the step goes on with that as the call's result
    answer = {"decisions": [{"type": "done", "message": "sent (checked the mail log)"}]}
    result = resume(graph, "t", answer)
    assert result["status"] == "success"
    assert len(outbox.sent()) == 1
    report = values(graph)["files"][REPORT]["content"]
    assert report == "sent (checked the mail log)\n"
    # the model answers given before the pause were replayed, not asked again
    assert len(roles["default"].calls) - calls_before == 2  # write_file, then "done"


def test_an_unknown_outcome_the_human_asks_to_rerun_runs_once_more(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    attempts = []

    def first_times_out():
        attempts.append(1)
        if len(attempts) == 1:
            _timeout()

    graph, _ = graph_with(tmp_path, emailer(), [email_tool(outbox, then=first_times_out)])
    assert run(graph, "send", thread_id="t", context=ctx())["status"] == "awaiting_input"
    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "success"
    assert len(outbox.sent()) == 2 and len(attempts) == 2


def test_an_idempotent_tool_is_rerun_with_the_same_key(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    keys_seen: list[str] = []
    attempts = []

    def first_times_out():
        attempts.append(1)
        keys_seen.append(outbox.sent()[-1]["key"])
        if len(attempts) == 1:
            _timeout()

    tool = keyed_email_tool(outbox, then=first_times_out, idempotent=True)
    graph, _ = graph_with(tmp_path, emailer(), [tool])
    assert run(graph, "send", thread_id="t", context=ctx())["status"] == "success"
    assert len(attempts) == 2 and keys_seen[0] == keys_seen[1]  # re-run, same key
    assert len(outbox.sent()) == 1  # which the "API" deduplicated
    assert tool_events(values(graph))[0]["key"] == keys_seen[0]


def test_a_receipt_lookup_settles_an_unknown_outcome_without_a_second_call(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    attempts = []

    def receipt(key):
        sent = outbox.by_key(key)
        return f"receipt: sent to {sent['to']}" if sent else None

    def times_out():
        attempts.append(1)
        _timeout()

    tool = keyed_email_tool(outbox, then=times_out, receipt=receipt)
    graph, _ = graph_with(tmp_path, emailer(), [tool])
    assert run(graph, "send", thread_id="t", context=ctx())["status"] == "success"
    assert len(attempts) == 1 and len(outbox.sent()) == 1
    assert values(graph)["files"][REPORT]["content"] == "receipt: sent to ops@example.com\n"


# ------------------------------------------------------------------ crashes


def crash(db: str, outbox_path, mode: str, thread_id: str = "crash") -> Outbox:
    """Run tests/side_effects.py's plan in a process that dies (``mode``); the outbox."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.side_effects", db, str(outbox_path), mode, thread_id],
        env={**os.environ, "PYTHONPATH": ROOT},
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    outbox = Outbox(outbox_path)
    assert len(outbox.sent()) == 1
    return outbox


def _crashed_run(tmp_path, mode):
    db = tmp_path / "threads.sqlite"
    outbox = crash(str(db), tmp_path / "outbox", mode)
    graph = build_graph(
        models=roles_for(emailer()),
        checkpointer=SqliteSaver(sqlite3.connect(str(db), check_same_thread=False)),
        tools={"coder": [email_tool(outbox)]},
    )
    return graph, outbox


def test_killed_after_the_call_then_resumed_the_email_is_not_sent_again(tmp_path):
    graph, outbox = _crashed_run(tmp_path, "after_call")
    result = resume(graph, "crash", None, context=ctx())
    assert result["status"] == "success"
    assert len(outbox.sent()) == 1  # the journaled result was reused
    event = tool_events(values(graph, "crash"))[0]
    assert event["reused"] is True


def test_killed_inside_the_call_then_resumed_escalates_with_the_key(tmp_path):
    graph, outbox = _crashed_run(tmp_path, "in_call")
    result = resume(graph, "crash", None, context=ctx())
    assert result["status"] == "awaiting_input"
    assert len(outbox.sent()) == 1  # started, no result: never re-run blindly
    request = values(graph, "crash")["escalation"]["action_requests"][0]
    assert request["kind"] == "unknown_outcome" and request["idempotency_key"].startswith("dr-")
    result = resume(graph, "crash", {"decisions": [{"type": "done", "message": "sent"}]})
    assert result["status"] == "success" and len(outbox.sent()) == 1


# ------------------------------------------------------------------ approvals


def approval_run(tmp_path, outbox, subagent=None, **kwargs):
    graph, roles = graph_with(
        tmp_path,
        subagent or emailer(),
        [email_tool(outbox)],
        interrupt_on=kwargs.pop("interrupt_on", {"send_email": True}),
        **kwargs,
    )
    result = run(graph, "send and report", thread_id="t", context=ctx())
    return graph, roles, result


def test_a_call_waits_for_approval_and_runs_once_approved(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    graph, roles, result = approval_run(tmp_path, outbox)
    assert result["status"] == "awaiting_input" and outbox.sent() == []
    state = values(graph)
    payload = state["escalation"]
    assert payload["action_requests"][0]["args"] == {"to": "ops@example.com", "body": "deploy done"}
    assert payload["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    snapshot = graph.get_state(thread_config("t"))
    assert snapshot.tasks[0].interrupts[0].value["action_requests"] == payload["action_requests"]
    asked = len(roles["default"].calls)
    assert asked == 1

    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "success"
    assert len(outbox.sent()) == 1
    assert len(roles["default"].calls) == asked + 2  # the first answer replayed, not asked again
    assert values(graph)["replay"] == {}  # cleared once the step finished


def test_an_edited_call_runs_with_the_edited_arguments(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    graph, _, _ = approval_run(tmp_path, outbox)
    edited = {"to": "team@example.com", "body": "deploy done, v2"}
    decision = {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}
    result = resume(graph, "t", {"decisions": [decision]})
    assert result["status"] == "success"
    assert [(s["to"], s["body"]) for s in outbox.sent()] == [(edited["to"], edited["body"])]
    event = tool_events(values(graph))[0]
    assert event["edited"] is True


def test_a_rejected_call_is_not_run_and_the_model_is_told_why(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    seen = []

    def noted(answers, metadata):
        seen.append(str(answers[0].content))
        return "not sent: the email was rejected"

    respond = in_turn(send(to="ceo@example.com"), report(noted))
    graph, _, _ = approval_run(tmp_path, outbox, respond)
    why = "do not email the CEO"
    result = resume(graph, "t", {"decisions": [{"type": "reject", "message": why}]})
    assert result["status"] == "success"
    assert outbox.sent() == []
    assert seen and why in seen[-1] and "rejected" in seen[-1]


def test_an_approval_does_not_carry_over_to_changed_arguments(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    # a second email with other arguments after the first
    respond = in_turn(send(), send(body="and a follow-up"), report(lambda a, m: "sent both\n"))
    graph, _, _ = approval_run(tmp_path, outbox, respond)
    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "awaiting_input"  # asked again, for the new arguments
    assert [s["body"] for s in outbox.sent()] == ["deploy done"]
    request = values(graph)["escalation"]["action_requests"]
    assert [r["args"]["body"] for r in request] == ["and a follow-up"]
    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "success"
    assert [s["body"] for s in outbox.sent()] == ["deploy done", "and a follow-up"]


def test_parallel_steps_ask_for_all_their_approvals_at_once(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    plan = [step("A", "out/a.md", action="coder"), step("B", "out/b.md", action="coder")]

    def respond(messages, metadata):
        answers = tool_answers(messages)
        path = metadata["expected_output"]
        if not answers:
            return tool_call("send_email", to=f"{metadata['step_id']}@example.com", body="hi")
        if len(answers) == 1:
            return tool_call("write_file", path=path, content=f"{answers[0].content}\n")
        return "done"

    graph, _, result = approval_run(tmp_path, outbox, respond, plan=plan)
    assert result["status"] == "awaiting_input"
    requests = values(graph)["escalation"]["action_requests"]
    assert sorted(r["args"]["to"] for r in requests) == ["A@example.com", "B@example.com"]
    assert len(graph.get_state(thread_config("t")).tasks[0].interrupts) == 1  # one question
    order = [r["args"]["to"] for r in requests]
    decisions = [
        {"type": "approve"} if to == "A@example.com" else {"type": "reject", "message": "no"}
        for to in order
    ]
    result = resume(graph, "t", {"decisions": decisions})
    assert result["status"] == "success"
    assert [s["to"] for s in outbox.sent()] == ["A@example.com"]
    files = values(graph)["files"]
    assert files["out/a.md"]["content"] == "sent email #1 to A@example.com\n"
    assert files["out/b.md"]["content"] == "rejected by a human: no\n"


def test_the_context_names_tools_to_approve_for_the_served_graph(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    graph, _ = graph_with(tmp_path, emailer(), [email_tool(outbox)])
    result = run(graph, "send", thread_id="t", context=ctx(interrupt_on="send_email"))
    assert result["status"] == "awaiting_input" and outbox.sent() == []
    assert resume(graph, "t", "approve")["status"] == "success"
    assert len(outbox.sent()) == 1


@pytest.mark.parametrize(
    "answer",
    [
        "approve",
        {"type": "approve"},
        [{"type": "accept"}],  # agent-chat-ui's HumanResponse
    ],
)
def test_the_other_answer_shapes_approve_too(tmp_path, answer):
    from langgraph.types import Command

    outbox = Outbox(tmp_path / "outbox")
    graph, _, _ = approval_run(tmp_path, outbox)
    for _ in graph.stream(Command(resume=answer), thread_config("t"), context=ctx()):
        pass
    assert values(graph)["status"] == "success" and len(outbox.sent()) == 1


def test_an_answer_that_decides_nothing_asks_again_and_loses_nothing(tmp_path):
    from langgraph.types import Command

    outbox = Outbox(tmp_path / "outbox")
    graph, _, _ = approval_run(tmp_path, outbox)
    for _ in graph.stream(Command(resume={"type": "maybe"}), thread_config("t"), context=ctx()):
        pass
    state = graph.get_state(thread_config("t"))
    assert state.values["status"] == "awaiting_input" and state.tasks[0].interrupts
    assert outbox.sent() == []


def test_approvals_work_on_an_in_memory_checkpointer_too():
    from tests.side_effects import roles_for as roles

    outbox_calls = []

    from langchain_core.tools import tool

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        outbox_calls.append(to)
        return f"sent to {to}"

    graph = build_graph(
        models=roles(emailer()),
        checkpointer=InMemorySaver(),
        tools={"coder": [send_email]},
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "reject"]}},
    )
    assert run(graph, "send", thread_id="m", context=ctx())["status"] == "awaiting_input"
    assert resume(graph, "m", {"decisions": [{"type": "approve"}]})["status"] == "success"
    assert outbox_calls == ["ops@example.com"]


def test_the_judge_of_a_rubric_check_before_the_pause_is_not_asked_again(tmp_path):
    from agent import ScriptedChatModel

    outbox = Outbox(tmp_path / "outbox")
    judged = []

    def judge(messages):
        text = str(messages[-1].content)
        judged.append(text)
        if "sent email" in text:
            return {"issues": [], "score": 1.0}
        issue = {"id": "email", "severity": "blocking", "evidence": "no email sent"}
        return {"issues": [issue], "score": 0.2}

    def respond(messages, metadata):
        answers = tool_answers(messages)
        if not metadata["revision"]:  # the first draft forgets the email
            return tool_call("write_file", path=REPORT, content="draft\n") if not answers else "ok"
        sent = [a for a in answers if a.name == "send_email"]
        if not sent:
            return tool_call("send_email", to="ops@example.com", body="deploy done")
        if answers[-1].name == "send_email":
            return tool_call("write_file", path=REPORT, content=f"{sent[0].content}\n")
        return "done"

    plan = [step("S1", REPORT, action="coder", check={"kind": "rubric", "criteria": ["email"]})]
    roles = roles_for(respond, plan)
    roles["judge"] = ScriptedChatModel(responder=judge)
    graph = build_graph(
        models=roles,
        checkpointer=sqlite_saver(tmp_path),
        tools={"coder": [email_tool(outbox)]},
        interrupt_on={"send_email": True},
    )
    assert run(graph, "send and report", thread_id="t", context=ctx())["status"] == "awaiting_input"
    assert len(judged) == 1 and len(roles["default"].calls) == 3
    result = resume(graph, "t", {"decisions": [{"type": "approve"}]})
    assert result["status"] == "success" and len(outbox.sent()) == 1
    assert len(judged) == 2  # only the revision after the pause was judged anew
    assert len(roles["default"].calls) == 5  # write_file and "done" after the email


def test_a_new_plan_version_makes_the_old_request_moot_and_asks_again(tmp_path):
    from agent import ScriptedChatModel

    outbox = Outbox(tmp_path / "outbox")
    graph, roles, result = approval_run(tmp_path, outbox)
    assert result["status"] == "awaiting_input"
    first = values(graph)["escalation"]["action_requests"][0]["id"]

    roles["planner"] = ScriptedChatModel(responder=lambda messages: {"steps": PLAN_AGAIN})
    graph = build_graph(
        models=roles,
        checkpointer=graph.checkpointer,
        tools={"coder": [email_tool(outbox)]},
        interrupt_on={"send_email": True},
    )
    result = resume(graph, "t", "send it after the review instead")  # text: a new plan
    assert result["status"] == "awaiting_input" and outbox.sent() == []
    state = values(graph)
    assert state["plan"]["version"] == 2
    requests = state["escalation"]["action_requests"]
    assert len(requests) == 1 and requests[0]["id"] != first  # only the new plan's call
    assert resume(graph, "t", "approve")["status"] == "success"
    assert len(outbox.sent()) == 1


def test_hostile_arguments_to_a_journaled_tool_are_refused_and_nothing_is_sent(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    deep: dict = {}
    node = deep
    for _ in range(300):  # deeper than any tool takes (agent.tools.filesystem.MAX_ARG_DEPTH)
        node["x"] = {}
        node = node["x"]
    seen = []

    def respond(messages, metadata):
        answers = tool_answers(messages)
        if not answers:
            return tool_call("send_email", to="ops@example.com", body="x", extra=deep)
        if len(answers) == 1:
            seen.append(str(answers[0].content))
            return tool_call("write_file", path=REPORT, content="not sent\n")
        return "done"

    graph, _ = graph_with(tmp_path, respond, [email_tool(outbox)])
    assert run(graph, "send", thread_id="t", context=ctx())["status"] == "success"
    assert outbox.sent() == [] and "refused" in seen[0]
