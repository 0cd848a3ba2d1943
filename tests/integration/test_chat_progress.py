"""Progress told in the chat: the plan, each check with its evidence, each revision and each
decision as tagged AI messages kept in the thread, never mistaken for the answer or the
question of a pause, bounded, and absent when ``Context.chat_progress`` is off."""

from __future__ import annotations

import pytest

from agent import Context, resume, run
from agent.events import MAX_PROGRESS_CHARS, MAX_PROGRESS_MESSAGES, is_progress
from agent.runs.progress import history
from agent.runs.runner import thread_config
from agent.vfs.quoting import screen_text
from tests.fakes import END, chain, models, sqlite_graph


def _run(tmp_path, scenario: str, **context):
    graph, conn = sqlite_graph(tmp_path, {})
    ctx = Context(model=f"scripted:{scenario}", **context)
    result = run(graph, "write it", context=ctx, thread_id="t")
    return graph, result


def _values(graph):
    return graph.get_state(thread_config("t")).values


def _progress(values):
    return [m for m in values["messages"] if is_progress(m)]


def _reloaded(tmp_path):
    """The thread's messages as another process reads them: a new graph on the same file."""
    graph, conn = sqlite_graph(tmp_path, {})
    try:
        return _values(graph)["messages"]
    finally:
        conn.close()


@pytest.mark.parametrize("scenario", ["demo", "escalation", "depth-cap"])
def test_every_plan_check_and_decision_is_one_progress_message_kept_in_the_thread(
    tmp_path, scenario
):
    graph, result = _run(tmp_path, scenario)
    values = _values(graph)
    told = _progress(values)
    plans = [m for m in told if m.id.startswith("progress-plan-")]
    checks = [m for m in told if m.id.startswith("progress-check-")]
    decided = [m for m in told if m.id.startswith("progress-decision-")]
    assert len(told) == len(plans) + len(checks) + len(decided)  # nothing else is progress
    assert len(plans) == len(values["plan_history"]) + 1  # every plan version
    checked = [e for e in values["trajectory"] if e["action"] == "check"]
    assert len(checks) == len(checked) >= 1
    for message, event in zip(checks, checked, strict=True):
        assert event["step_id"] in message.content
        assert ("passed" if event["check"]["passed"] else "failed") in message.content
        evidence_line = screen_text(event["observation"])[:60]  # as the chat shows it
        assert evidence_line in " ".join(message.content.split())
    reflected = [d for d in values["decisions"] if d.get("round") is not None]
    assert len(decided) == len(reflected)
    for message, entry in zip(decided, reflected, strict=True):
        assert f"round {entry['round']}: {entry['decision']}" in message.content
    assert all(len(m.content) <= MAX_PROGRESS_CHARS for m in told)
    assert len({m.id for m in values["messages"]}) == len(values["messages"])
    # the same messages after a reload: they live in the checkpoint, not in a stream
    assert [m.id for m in _reloaded(tmp_path) if is_progress(m)] == [m.id for m in told]
    assert result["status"] in ("success", "awaiting_input")


def test_a_revision_is_told_with_the_check_that_judged_it(tmp_path):
    graph, _ = _run(tmp_path, "demo")
    texts = [m.content for m in _progress(_values(graph))]
    assert any("revision 1" in t and "passed" in t for t in texts)
    assert any("first draft" in t and "failed" in t for t in texts)


@pytest.mark.parametrize("scenario", ["escalation", "depth-cap"])
def test_when_paused_the_question_is_the_last_ai_message(tmp_path, scenario):
    graph, result = _run(tmp_path, scenario)
    assert result["status"] == "awaiting_input"
    last = _values(graph)["messages"][-1]
    assert last.type == "ai" and not is_progress(last)
    assert last.id.startswith("escalation-")
    assert result["escalation"]["question"] in last.content


def test_the_final_answer_is_the_last_message_and_the_results_answer(tmp_path):
    graph, result = _run(tmp_path, "demo")
    values = _values(graph)
    last = values["messages"][-1]
    assert not is_progress(last) and last.type == "ai"
    assert result["final_answer"] and last.content.startswith(result["final_answer"])
    assert all(result["final_answer"] not in m.content for m in _progress(values))


def test_an_answered_escalation_keeps_its_story_and_show_reads_the_human_answer(tmp_path):
    graph, _ = _run(tmp_path, "escalation")
    resumed = resume(graph, "t", "engineers", context=Context(model="scripted:escalation"))
    assert resumed["status"] == "success"
    values = _values(graph)
    kinds = [("progress" if is_progress(m) else m.type) for m in values["messages"]]
    answered = kinds.index("human", 1)
    assert kinds[answered - 1] == "ai"  # the question, right above the answer
    assert "progress" in kinds[answered:]  # the resumed turn is told too
    assert values["messages"][-1].content.startswith(resumed["final_answer"])
    assert "  human answered: engineers" in history(values)


def test_chat_progress_off_leaves_only_the_conversation(tmp_path):
    graph, result = _run(tmp_path, "demo", chat_progress=False)
    values = _values(graph)
    assert result["status"] == "success" and not _progress(values)
    assert [m.type for m in values["messages"]] == ["human", "ai"]


def test_chat_progress_off_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPREFLECT_CHAT_PROGRESS", "false")
    assert Context().chat_progress is False
    monkeypatch.setenv("DEEPREFLECT_CHAT_PROGRESS", "maybe")
    assert any("chat_progress" in p for p in Context().validate())


def test_the_same_run_tells_the_same_ids(tmp_path):
    first, _ = _run(tmp_path / "a", "demo")
    second, _ = _run(tmp_path / "b", "demo")
    ids = [[m.id for m in _progress(_values(g))] for g in (first, second)]
    assert ids[0] == ids[1]


def test_a_long_run_keeps_a_bounded_number_of_progress_messages(tmp_path):
    graph, _ = sqlite_graph(tmp_path, models(chain(40), [END]))
    result = run(graph, "forty parts", context=Context(model="scripted:happy"), thread_id="t")
    assert result["status"] == "success"
    values = _values(graph)
    told = _progress(values)
    assert len(told) == MAX_PROGRESS_MESSAGES
    assert told[-1].id.startswith("progress-decision-")  # the newest are the ones kept
    assert values["messages"][0].type == "human" and not is_progress(values["messages"][-1])
    assert len(values["messages"]) == MAX_PROGRESS_MESSAGES + 2
