"""The critic: fail-safe parsing, grounded issues, checks as critiques, a stateless prompt."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent.checks.critique import (
    RUBRIC_ONLY_EVIDENCE,
    Critique,
    Issue,
    blocking,
    critic_messages,
    critique_from_check,
    feedback,
    ground,
    merge,
    parse_critique,
    rubric_report,
    run_critic,
)
from agent.controller.revise import LoopConfig, revise_loop


class RecordingChatModel(BaseChatModel):
    """Replays `responses` in order, reports `tokens` per call, and records every prompt."""

    responses: list[str]
    tokens: int | None = 42
    calls: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "recording-fake"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls.append(list(messages))
        usage = None
        if self.tokens is not None:
            usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": self.tokens}
        reply = AIMessage(content=self.responses[len(self.calls) - 1], usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def prompt_text(self, call: int) -> str:
        return "\n".join(m.text for m in self.calls[call])


def issue(id: str, severity: str = "blocking", evidence: str = "quoted", **kw: Any) -> Issue:
    return Issue(id=id, severity=severity, evidence=evidence, **kw)


def critique_json(*issues: Issue, score: float = 0.5) -> str:
    return Critique(issues=list(issues), score=score).model_dump_json()


FAILED_REPORT = {"kind": "pytest", "passed": False, "score": 0.5, "evidence": "sol.py:12: boom"}


# -- parse_critique ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "looks good to me!",
        "{not json}",
        "[1, 2, 3]",
        '{"issues": []}',  # no score: not an approval
        '{"approved": true, "issues": []}',
        '{"score": 85, "issues": []}',  # out of 0..1: malformed, not clamped to a perfect score
        '{"score": NaN, "issues": []}',
        '{"score": 0.5, "issues": ["missing edge case"]}',  # seed 002's string issues
        '{"score": 0.5, "issues": [{"id": "x", "severity": "critical", "evidence": "e"}]}',
        "[" * 100_000,
        {"score": "high"},
        42,
    ],
)
def test_parse_critique_returns_none_for_malformed_input(raw: Any) -> None:
    assert parse_critique(raw) is None


@given(st.text())
def test_parse_critique_never_raises_on_any_text(text: str) -> None:
    assert parse_critique(text) is None or isinstance(parse_critique(text), Critique)


def test_parse_critique_reads_json_inside_a_fence_with_prose_around() -> None:
    raw = (
        "Here is my review.\n```json\n"
        '{"score": 0.4, "issues": [{"id": "no-filter", "severity": "blocking", '
        '"location": "WHERE clause", "evidence": "212 rows", "suggestion": "filter"}]}'
        "\n```\nThanks."
    )
    critique = parse_critique(raw)
    assert critique is not None
    assert critique.score == 0.4
    assert critique.issues[0].location == "WHERE clause"


def test_parse_critique_reads_bare_json_embedded_in_prose() -> None:
    critique = parse_critique('Verdict: {"score": 1, "issues": []} -- done')
    assert critique == Critique(score=1.0)


def test_parse_critique_accepts_dicts_and_critiques() -> None:
    critique = Critique(issues=[issue("a")], score=0.3)
    assert parse_critique(critique) is critique
    assert parse_critique(critique.model_dump()) == critique


def test_parse_critique_normalises_what_models_commonly_get_slightly_wrong() -> None:
    raw = json.dumps(
        {
            "score": 0.5,
            "issues": [{"id": 7, "severity": " Blocking", "location": "  ", "evidence": None}],
        }
    )
    critique = parse_critique(raw)
    assert critique is not None
    assert critique.issues == [Issue(id="7", severity="blocking", location=None, evidence="")]


# -- ground, blocking, feedback ------------------------------------------------------------


def test_ground_drops_issues_without_evidence() -> None:
    kept = issue("kept", evidence="AssertionError: 3 != 4")
    critique = Critique(
        issues=[issue("empty", evidence=""), kept, issue("blank", evidence=" \n ")], score=0.2
    )
    assert ground(critique).issues == [kept]
    assert len(critique.issues) == 3  # the original is not mutated


def test_blocking_keeps_only_blocking_issues() -> None:
    critique = Critique(issues=[issue("a", "minor"), issue("b"), issue("c", "major")], score=0.5)
    assert [i.id for i in blocking(critique)] == ["b"]


def test_feedback_sorts_by_severity_keeps_order_within_a_severity_and_caps() -> None:
    issues = [
        issue("m1", "minor"),
        issue("j1", "major"),
        issue("b1"),
        issue("m2", "minor"),
        issue("b2"),
        issue("j2", "major"),
        issue("b3"),
    ]
    assert [i["id"] for i in feedback(issues)] == ["b1", "b2", "b3", "j1", "j2"]
    assert [i["id"] for i in feedback(issues, cap=2)] == ["b1", "b2"]
    assert len(feedback(issues, cap=None)) == 7
    assert feedback(issues)[0] == {
        "id": "b1",
        "severity": "blocking",
        "location": None,
        "evidence": "quoted",
        "suggestion": "",
    }


# -- checks as critiques ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "location"),
    [
        ("sol.py:12: AssertionError: assert 3 == 4", "sol.py:12"),
        ("Expecting ',' delimiter: line 7 column 3 (char 40)", "line 7"),
        ('Traceback:\n  File "a.py", line 2, in <module>\n  File "b.py", line 9, in f', "b.py:9"),
        ("expected 5 rows, got 212", None),
    ],
)
def test_failed_check_becomes_one_blocking_issue_quoting_its_evidence(
    evidence: str, location: str | None
) -> None:
    critique = critique_from_check({**FAILED_REPORT, "evidence": evidence})
    assert critique.score == 0.5
    assert critique.issues == [
        Issue(
            id="check-pytest",
            severity="blocking",
            location=location,
            evidence=evidence,
            suggestion=critique.issues[0].suggestion,
        )
    ]


def test_failed_check_without_evidence_text_still_blocks_after_grounding() -> None:
    critique = critique_from_check(
        {"kind": "python", "passed": False, "score": 0.0, "evidence": ""}
    )
    assert [i.id for i in blocking(ground(critique))] == ["check-python"]


def test_passed_check_has_no_issues_and_keeps_its_score() -> None:
    report = {"kind": "sql", "passed": True, "score": 0.9, "evidence": "5 rows"}
    critique = critique_from_check(report)
    assert critique.issues == []
    assert critique.score == 0.9


def test_merge_keeps_every_issue_and_the_lower_score() -> None:
    check = critique_from_check(FAILED_REPORT)
    critic = Critique(issues=[issue("style", "minor")], score=0.8, requirements_checked=["R1"])
    merged = merge(check, critic)
    assert [i.id for i in merged.issues] == ["check-pytest", "style"]
    assert merged.score == 0.5
    assert merged.requirements_checked == ["check-pytest", "R1"]


# -- the critic's prompt and call ------------------------------------------------------------


def test_critic_messages_hold_task_draft_evidence_and_rubric_only() -> None:
    system, human = critic_messages(
        "Sum a list", "sol.py", "def f(xs): return {x for x in xs}", FAILED_REPORT, ["R1", "R2"]
    )
    assert '"issues": [' in system.text and "{{" not in system.text  # braces rendered once
    for part in ("Sum a list", "sol.py", "def f(xs): return {x for x in xs}", "sol.py:12: boom"):
        assert part in human.text
    assert "pytest check FAILED" in human.text
    assert "- R1\n- R2" in human.text


def test_critic_never_sees_the_generators_input_or_earlier_critiques() -> None:
    marker = (
        "EARLIER-CRITIQUE-MARKER"  # reaches the generator as feedback, must not reach the critic
    )
    model = RecordingChatModel(
        responses=[
            critique_json(issue("bug", evidence=marker, location="line 1"), score=0.3),
            critique_json(score=0.9),
        ]
    )
    drafts = iter(["draft one", "draft two"])
    generator_inputs: list[str] = []

    def generate(task: str, fb: Any) -> tuple[str, int]:
        generator_inputs.append(json.dumps(fb))
        return next(drafts), 0

    def critique(task: str, draft: str, evidence: dict) -> tuple[Critique | None, int]:
        return run_critic(model, task, "sol.py", draft, evidence, ["R1"])

    evidence = {"kind": "exists", "passed": True, "score": 1.0, "evidence": "sol.py exists"}
    result = revise_loop("the task", generate, lambda d: evidence, critique, LoopConfig())

    assert result.stop_reason == "pass"
    assert marker in generator_inputs[1]
    second = model.prompt_text(1)
    assert "the task" in second and "draft two" in second
    assert marker not in second and "draft one" not in second


def test_run_critic_parses_the_reply_and_counts_tokens() -> None:
    model = RecordingChatModel(responses=[f"```json\n{critique_json(issue('a'), score=0.4)}\n```"])
    critique, tokens = run_critic(model, "task", "a.md", "draft", "evidence", "be concise")
    assert critique == Critique(issues=[issue("a")], score=0.4)
    assert tokens == 42
    assert "- be concise" in model.prompt_text(0)


def test_run_critic_fails_safe_on_a_malformed_reply_and_without_usage() -> None:
    model = RecordingChatModel(responses=["I think it is fine."], tokens=None)
    assert run_critic(model, "task", "a.md", "draft", "evidence", []) == (None, 0)


def test_run_critic_lets_model_errors_propagate() -> None:
    model = RecordingChatModel(responses=[])  # the reply lookup raises IndexError
    with pytest.raises(IndexError):
        run_critic(model, "task", "a.md", "draft", "evidence", [])


# -- the rubric check kind ----------------------------------------------------------------


def test_rubric_report_passes_without_blocking_issue_and_judge_sees_rubric_only_evidence() -> None:
    judge = RecordingChatModel(responses=[critique_json(issue("tone", "minor"), score=0.85)])
    report = rubric_report(
        judge, task="Write a summary", path="s.md", content="A summary.", criteria=["cites R1"]
    )
    assert report == {
        "kind": "rubric",
        "passed": True,
        "score": 0.85,
        "evidence": "no blocking issue",
    }
    prompt = judge.prompt_text(0)
    assert RUBRIC_ONLY_EVIDENCE in prompt and "- cites R1" in prompt and "A summary." in prompt


def test_rubric_report_fails_on_a_grounded_blocking_issue_and_quotes_it() -> None:
    judge = RecordingChatModel(
        responses=[critique_json(issue("no-source", evidence="task: 'cite a source'"), score=0.3)]
    )
    report = rubric_report(judge, task="t", path="s.md", content="c", criteria=["cites"])
    assert report["passed"] is False
    assert report["score"] == 0.3
    assert report["evidence"] == "no-source: task: 'cite a source'"


def test_rubric_report_ignores_blocking_issues_without_evidence() -> None:
    judge = RecordingChatModel(responses=[critique_json(issue("vague", evidence=""), score=0.6)])
    report = rubric_report(judge, task="t", path="s.md", content="c", criteria=["cites"])
    assert report["passed"] is True


def test_rubric_report_on_a_malformed_critique_fails_with_score_zero() -> None:
    judge = RecordingChatModel(responses=["LGTM"])
    report = rubric_report(judge, task="t", path="s.md", content="c", criteria=["cites"])
    assert report["passed"] is False
    assert report["score"] == 0.0
    assert report["evidence"].startswith("malformed critique: ")


def test_a_judge_s_model_error_is_raised_from_a_rubric_inside_an_all_too() -> None:
    # the floor puts prose's rubric in an ``all`` beside presence and citations: a judge
    # without permission is the run's error, not a crashed check the loop revises against
    from agent.checks import run_check
    from agent.models.scripted import ScriptedChatModel

    class Forbidden(Exception):
        status_code = 403

    judge = ScriptedChatModel(responder=lambda messages: Forbidden("no access"))
    spec = {
        "kind": "all",
        "checks": [{"kind": "non_empty"}, {"kind": "citations", "min": 0}, "names its subject"],
    }
    with pytest.raises(Forbidden):
        run_check(spec, {"a.md": "text"}, "a.md", judge=judge)
    crashing = {"kind": "all", "checks": [{"kind": "non_empty"}, {"kind": "regex", "pattern": "("}]}
    assert not run_check(crashing, {"a.md": "text"}, "a.md")["passed"]  # others never raise
