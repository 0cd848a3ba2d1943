"""An end is held to its evidence: functions the checks say exist but never run."""

from __future__ import annotations

from dataclasses import replace

from agent.controller.subagents import build_registry
from agent.plan.direct import direct_steps
from agent.plan.needs import named_files
from agent.plan.validation import parse_plan
from agent.reflection.rules import Decision, decide_by_rule, held_to_evidence
from agent.reflection.situation import Situation, situation_from_state
from agent.reflection.unverified import unrun_functions
from agent.vfs.entries import file_entry
from agent.vocabulary import Decision as Choice
from agent.vocabulary import StopReason
from tests.fakes import ctx, step

PACKAGE = (
    "Write a package textkit of two modules. textkit/words.py: split_words(text) returns the "
    "words of text, lowercased; longest_word(text) returns the longest word and must use "
    "word_lengths from textkit/count.py. textkit/count.py: word_lengths(text) returns a dict "
    "word -> length and must use split_words from textkit/words.py; count_words(text) "
    "returns how many words text has."
)
STATED = (
    "Write slug.py with slugify(text) that lowercases text and joins its words with '-': "
    "slugify('Hello World') == 'hello-world'."
)
IN_WORDS = STATED.replace("==", "should be")  # an example in words is not a literal


def planned(goal: str) -> list[dict]:
    """The plan the product makes of ``goal`` (the goal names its files), floor raised."""
    registry = build_registry()
    steps = direct_steps(goal, {}, registry, 8)
    assert steps is not None
    parsed, errors = parse_plan(
        {"steps": [s.model_dump() for s in steps]},
        actions=registry,
        max_steps=8,
        asked=named_files(goal),
        goal=goal,
        repairs=True,  # the plan in code is the small-local profile's, with its repairs
    )
    assert parsed is not None, errors
    return [s.model_dump() for s in parsed]


def finished(goal: str, steps: list[dict], extra: dict | None = None) -> Situation:
    files = {s["expected_output"]: file_entry("x", step=1, status="done") for s in steps}
    return Situation(
        goal=goal,
        plan={"version": 1, "steps": steps},
        files=files | (extra or {}),
        step=2,
        depth=1,
        cap=5,
        dispatched=[],
        previous_defects=[],
        turn_events=[],
    )


def test_functions_a_goal_describes_in_prose_only_are_never_run_by_their_checks():
    steps = planned(PACKAGE)
    unrun = unrun_functions({"steps": steps}, {})
    assert unrun == {
        "textkit/words.py": ["split_words", "longest_word"],
        "textkit/count.py": ["word_lengths", "count_words"],
    }


def test_an_end_over_functions_no_check_ran_becomes_an_unverified_escalation():
    # on the 1.5B a split_words that neither lowercased nor dropped punctuation ended success
    s = finished(PACKAGE, planned(PACKAGE))
    # modules proven only to parse: no rule ends the run, reflection's model is asked
    assert decide_by_rule(s) is None
    held = held_to_evidence(Decision(Choice.END, "every module is there", by="rule"), s)
    assert held.decision == Choice.ESCALATE and held.stop_reason == "unverified"
    assert "split_words" in held.question and "count_words" in held.question
    assert "accept the artifacts as they are" in held.suggested_responses
    # the model's end is held the same way
    by_model = held_to_evidence(Decision(Choice.END, "looks done", by="model"), s)
    assert by_model.decision == Choice.ESCALATE and by_model.by == "model"


def test_an_example_in_words_runs_nothing_so_its_end_is_held():
    s = finished(IN_WORDS, planned(IN_WORDS))
    held = held_to_evidence(Decision(Choice.END, "done", by="model"), s)
    assert held.stop_reason == "unverified" and "slugify" in held.question


def test_an_end_whose_functions_a_check_ran_stands():
    s = finished(STATED, planned(STATED))
    by_rule = decide_by_rule(s)
    assert by_rule is not None and held_to_evidence(by_rule, s) is by_rule


def test_other_decisions_are_not_held():
    s = finished(PACKAGE, planned(PACKAGE))
    replan = Decision(Choice.REPLAN, "again", by="model")
    assert held_to_evidence(replan, s) is replan


def test_a_call_in_a_python_check_or_in_the_tests_a_pytest_check_runs_counts_as_run():
    defines = {"kind": "syntax", "defines": ["f", "g"]}
    code = {"kind": "python", "code": "assert mod.f(2) == 4\n"}
    pytest = {"kind": "pytest", "tests": ["tests/test_g.py"]}
    steps = [
        step("S1", "mod.py", action="coder", check={"kind": "all", "checks": [defines, code]}),
        step("S2", "tests/test_g.py", action="coder", check=pytest),
    ]
    assert unrun_functions({"steps": steps}, {}) == {"mod.py": ["g"]}
    tests = {
        "tests/test_g.py": file_entry("from mod import g\n\n\ndef test_g():\n    g()\n", step=1)
    }
    assert unrun_functions({"steps": steps}, tests) == {}


def test_a_name_only_mentioned_is_not_run():
    # "book_price calls discounted_total" states structure, not a call that ran
    stated = {"defines": ["discounted_total"], "calls": ["book_price calls discounted_total"]}
    check = {"kind": "python", "code": "", "stated": stated}
    steps = [step("S1", "pricing.py", action="coder", check=check)]
    assert unrun_functions({"steps": steps}, {}) == {"pricing.py": ["discounted_total"]}


def test_examples_a_human_answers_with_are_run_by_the_replan_s_checks():
    # the planner raises the floor on the goal and the answer (agent.plan.planner)
    answer = "split_words('Hi, you') == ['hi', 'you'] and count_words('a b') == 2"
    unrun = unrun_functions({"steps": planned(f"{PACKAGE}\n\n{answer}")}, {})
    assert unrun == {
        "textkit/words.py": ["longest_word"],
        "textkit/count.py": ["word_lengths"],
    }


def test_an_end_the_model_decided_becomes_unverified_for_a_profile_without_model_ends():
    from agent.reflection.rules import unjudged_end
    from agent.vocabulary import StopReason

    held = unjudged_end(Decision(Choice.END, "looks done", by="model"))
    assert held.decision == Choice.ESCALATE and held.stop_reason == StopReason.UNVERIFIED
    assert held.forced and not held.counts_depth and held.question
    assert "accept the artifacts as they are" in held.suggested_responses
    for other in (Choice.CONTINUE, Choice.REPLAN, Choice.ESCALATE):
        kept = Decision(other, "why", by="model")
        assert unjudged_end(kept) is kept


def test_an_end_resting_on_words_no_trusted_reader_read_is_held_until_a_human_answered():
    # Profile.planner_reads off: what the checks test comes from the goal's literals and a
    # model not trusted to read every word; in any language, the end pauses for a human
    for goal in (STATED, STATED.replace("that lowercases text", "die den Text kleinschreibt")):
        s = finished(goal, planned(goal))
        by_rule = decide_by_rule(s)
        assert by_rule is not None and by_rule.decision == Choice.END
        unread = replace(s, words_read=False)
        held = held_to_evidence(by_rule, unread)
        assert held.decision == Choice.ESCALATE and held.stop_reason == StopReason.UNVERIFIED
        assert held.forced and not held.counts_depth
        assert held.suggested_responses == ["accept the artifacts as they are", "stop here"]
        replan = Decision(Choice.REPLAN, "again", by="model")
        assert held_to_evidence(replan, unread) is replan
    state = {"goal": STATED, "plan": {"version": 1, "steps": planned(STATED)}}
    assert situation_from_state(state, ctx(), planner_reads=True).words_read
    assert not situation_from_state(state, ctx(), planner_reads=False).words_read
    answered = {**state, "plan": {**state["plan"], "answered": True}}
    assert situation_from_state(answered, ctx(), planner_reads=False).words_read
