"""Whether a model revises, learnt from the thread's own trajectory: fresh drafts first for
one that does not, when its profile allows it; nothing kept by the process."""

from __future__ import annotations

from agent.controller import habits
from agent.controller.habits import RevisionRecord, as_learnt, learnt_from, revisions_of
from agent.controller.revise import LoopConfig, LoopResult
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


def event(model: str, helped: int = 0, stuck: int = 0) -> dict:
    return {"action": "result", "model": model, "revisions": revisions_of(result(helped, stuck))}


def test_a_model_whose_revisions_never_help_starts_its_loops_fresh():
    record = RevisionRecord()
    record.add(result(stuck=1))
    assert not record.fresh_first()  # one flat revision is not a habit yet
    record.add(result(stuck=1))
    assert record.fresh_first()


def test_a_model_whose_revisions_helped_once_keeps_revising_first():
    record = RevisionRecord()
    record.add(result(helped=1))
    record.add(result(stuck=5))
    assert not record.fresh_first()


def test_the_record_is_read_from_the_threads_result_events_of_that_model_only():
    trajectory = [event("m", stuck=1), event("other", helped=3), event("m", stuck=1)]
    trajectory += [{"action": "check", "model": "m", "revisions": {"flat": 9}}]
    assert learnt_from(trajectory, "m") == RevisionRecord(helped=0, flat=2)
    assert learnt_from(trajectory, "other").helped == 3
    assert learnt_from([], "m") == RevisionRecord()


def test_hostile_counts_in_a_trajectory_count_nothing():
    trajectory = [{"action": "result", "model": "m", "revisions": {"helped": -5, "flat": "9"}}]
    trajectory += [{"action": "result", "model": "m", "revisions": {"flat": True}}]
    trajectory += [{"action": "result", "model": "m", "revisions": "flat"}]
    assert learnt_from(trajectory, "m") == RevisionRecord()


def test_a_loop_is_fresh_first_only_when_the_profile_allows_and_drafts_remain():
    config = LoopConfig(fresh_drafts=3)
    flat = RevisionRecord(flat=2)
    assert as_learnt(config, RevisionRecord(), allowed=True) is config
    assert as_learnt(config, flat, allowed=True).fresh_first
    assert as_learnt(config, flat, allowed=False) is config  # the default profile revises
    # without fresh drafts to draw there is nothing to start with
    assert not as_learnt(LoopConfig(fresh_drafts=0), flat, allowed=True).fresh_first


def test_nothing_is_learnt_by_the_process():
    assert not [n for n in dir(habits) if n.isupper() and n not in ("FLAT_REVISIONS",)]


def test_every_profile_choice_names_a_profile_and_every_profile_is_a_choice():
    from agent.models.profiles import AUTO, PROFILES
    from agent.vocabulary import ProfileChoice

    assert {str(c) for c in ProfileChoice} == {AUTO, *PROFILES}
