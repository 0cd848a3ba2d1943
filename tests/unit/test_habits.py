"""Whether a model revises, learnt per model: fresh drafts first for one that does not."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI

from agent.controller import habits
from agent.controller.habits import RevisionHabits, as_learnt, habit_key, learn
from agent.controller.revise import LoopConfig, LoopResult
from agent.models.scripted import ScriptedChatModel
from agent.vocabulary import LoopStop


def result(helped: int = 0, stuck: int = 0) -> LoopResult:
    return LoopResult(
        best="x",
        best_score=0.0,
        stop_reason=LoopStop.STALLED,
        rounds=helped + stuck,
        issues=[],
        tokens=1,
        revisions_helped=helped,
        revisions_stuck=stuck,
    )


def test_a_model_whose_revisions_never_help_starts_its_loops_fresh():
    learnt = RevisionHabits(after=2)
    learnt.record("m", result(stuck=1))
    assert not learnt.fresh_first("m")  # one flat revision is not a habit yet
    learnt.record("m", result(stuck=1))
    assert learnt.fresh_first("m") and not learnt.fresh_first("other")


def test_a_model_whose_revisions_helped_once_keeps_revising_first():
    learnt = RevisionHabits(after=2)
    learnt.record("m", result(helped=1))
    learnt.record("m", result(stuck=5))
    assert not learnt.fresh_first("m")


@pytest.fixture
def fresh_habits(monkeypatch):
    learnt = RevisionHabits(after=2)
    monkeypatch.setattr(habits, "REVISION_HABITS", learnt)
    return learnt


def test_a_loop_of_a_model_that_does_not_revise_is_configured_fresh_first(fresh_habits):
    model = ChatOpenAI(model="qwen", api_key="x", base_url="http://127.0.0.1:9/v1")
    config = LoopConfig(fresh_drafts=3)
    assert as_learnt(config, model) is config
    learn(model, result(stuck=2))
    assert as_learnt(config, model).fresh_first
    # without fresh drafts to draw there is nothing to start with
    assert not as_learnt(LoopConfig(fresh_drafts=0), model).fresh_first


def test_a_scripted_model_teaches_nothing(fresh_habits):
    # a test's script is not a model's habit: learnt, it would steer the next test's loops
    model = ScriptedChatModel(["x"])
    assert habit_key(model) is None
    learn(model, result(stuck=9))
    assert not as_learnt(LoopConfig(fresh_drafts=3), model).fresh_first
