"""Structured answers from small models' text: JSON read out of reply text
(``agent.models.reply_json``) and validated against a schema, with the error written for a
retry prompt (``agent.models.reply_schema``). No model is called.

Literals marked RECORDED are raw replies (the ``content`` field, verbatim) of
Qwen2.5-Coder-0.5B-Instruct Q4_K_M on llama.cpp's server (xllamacpp 2026.10.11549,
temperature 0), to the planner's and reflection's requests of deepreflect or to probes
shaped like them.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from agent.models.reply_json import json_from_text, json_values
from agent.models.reply_schema import parse_structured
from agent.plan.steps import PlanDraft
from agent.reflection.model_view import ReflectionAnswer

# RECORDED: the planner's request with tools and tool_choice {"type": "function", ...}: no
# tool call; the plan in a fenced block between prose, the reply cut at max_tokens.
PROSE_AND_FENCE = (
    "To write the `is_prime(n)` function in the `prime.py` file and write a pytest test for "
    "it, you can follow these steps:\n\n1. **Define the `is_prime(n)` function**: This "
    "function should check if a number `n` is prime.\n\n2. **Write a pytest test**: This test "
    "should use the `is_prime` function to verify its correctness.\n\nHere's the JSON "
    'representation of the plan:\n\n```json\n{\n  "steps": [\n    {\n      "step_id": '
    '"Plan",\n      "instructions": "Write the is_prime(n) function in prime.py with a pytest '
    'test.",\n      "expected_output": "Write the is_prime(n) function in prime.py with a '
    'pytest test."\n    }\n  ]\n}\n```\n\n### Step-by-Step Plan\n\n1. **Function Definition**:'
    " The `is_prime(n)` function should check if a number `n` is prime. This function should"
    " return `True` if `n` is prime and `False` otherwise.\n\n2. **Test Function**: The "
    "`is_prime(n)` function should be tested using a pytest test. The test should use the "
    "`is_prime` function to verify its correctness.\n\n3. **Test Cases**: The test cases "
    "should cover various scenarios, including edge cases like `n = 1`, `n = 2`, `n = 3`, "
    "`n = 4`, `n = 5`, `n = 6`, `n = 7`,"
)

# RECORDED: deepreflect's planner (function_calling): a fenced plan whose done_when is a
# string and whose "kind" strayed out of it.
FENCED_PLAN_WRONG_SHAPE = (
    '```json\n{\n  "steps": [\n    {\n      "step_id": "plan_draft",\n      "depends_on": [],'
    '\n      "action": "critic",\n      "instructions": "In the prime.py file, write a '
    'function called is_prime(n) that checks if a given number n is prime.",\n      '
    '"expected_output": "prime.py",\n      "done_when": "contains",\n      "kind": '
    '"non_empty"\n    }\n  ]\n}\n```'
)

# RECORDED: deepreflect's planner (function_calling), bare JSON with unbalanced brackets.
BROKEN_PLAN = (
    '{"steps": [{"step_id": "check_is_prime", "depends_on": ["coder", "critic", "researcher",'
    ' "writer", "sql"], "action": "critic", "instructions": "Write a check for whether a '
    "number is prime. The check should return true if the number is prime and false "
    'otherwise.", "expected_output": "0", "done_when": "")]}'
)

# RECORDED: deepreflect's planner (function_calling), bare JSON, one "]" too many.
PLAN_EXTRA_BRACKET = (
    '{"steps": [{"step_id": "check_is_prime", "depends_on": ["coder", "critic", "researcher",'
    ' "writer", "sql"], "action": "critic", "instructions": "Write a check for whether a '
    "number is prime. The check should return true if the number is prime and false "
    'otherwise.", "expected_output": "0", "done_when": {"kind": "contains", "all": '
    '["is_prime(n)"]}]}]}'
)

# RECORDED: a reflection-shaped request without tools: bare JSON.
REFLECTION_BARE = (
    '{"decision": "end", "reason": "The run has completed successfully, and no further '
    'steps are needed to continue."}'
)

# RECORDED: response_format json_object: valid JSON, though not a valid plan.
JSON_MODE_PLAN = (
    '{\n  "steps": [\n    {\n      "step_id": "instructions",\n      "instructions": "Create '
    'a function `is_prime(n)` that checks if a number `n` is prime."\n    },\n    {\n      '
    '"step_id": "expected_output",\n      "expected_output": "Implement the `is_prime(n)` '
    'function in prime.py."\n    }\n  ]\n}'
)


class Point(BaseModel):
    x: int
    y: int = 0


class Plan(BaseModel):
    steps: list[str] = Field(min_length=1)


# ------------------------------------------------------------------------ json_from_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x": 1}', {"x": 1}),
        ('  \n{"x": 1}\n', {"x": 1}),
        ('```json\n{"x": 1}\n```', {"x": 1}),
        ('```JSON\n{"x": 1}\n```', {"x": 1}),
        ('```\n{"x": 1}\n```', {"x": 1}),
        ('```{"x": 1}```', {"x": 1}),
        ('Here you go:\n```json\n{"x": 1}\n```\nHope it helps!', {"x": 1}),
        ('The answer is {"x": 1} as asked.', {"x": 1}),
        ('Sure! {"x": {"y": [1, 2, {"z": "}"}]}} done', {"x": {"y": [1, 2, {"z": "}"}]}}),
        ('a string with a brace "{" first, then {"x": 2}', {"x": 2}),
        ('{not json} and then {"x": 3}', {"x": 3}),
        ('[1, 2] then {"x": 4}', {"x": 4}),  # an object is preferred over an earlier array
        ("[1, 2, 3]", [1, 2, 3]),  # failing any object, the first array
    ],
)
def test_json_is_found_in_the_forms_replies_take(text, expected):
    assert json_from_text(text) == expected


def test_a_fence_is_preferred_over_an_object_in_the_prose_before_it():
    text = 'Use the form {"name": ...}. Answer:\n```json\n{"x": 1}\n```'
    assert json_from_text(text) == {"x": 1}


def test_a_fence_inside_a_json_string_does_not_cut_the_json_short():
    content = "# Report\n```python\nprint({'a': 1})\n```\nThe end."
    call = {"name": "write_file", "arguments": {"path": "r.md", "content": content}}
    import json

    for text in (json.dumps(call), f"```json\n{json.dumps(call)}\n```", f"Now: {json.dumps(call)}"):
        assert json_from_text(text) == call


def test_the_recorded_prose_and_fence_reply_yields_its_plan():
    value = json_from_text(PROSE_AND_FENCE)
    assert isinstance(value, dict)
    assert value["steps"][0]["step_id"] == "Plan"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x": 1,}', {"x": 1}),  # trailing commas: one reading only, so tolerated
        ('{"x": [1, 2,], "y": 2,\n}', {"x": [1, 2], "y": 2}),
        ('{"code": "def f():\n    return 1"}', {"code": "def f():\n    return 1"}),  # raw newline
        ('{"code": "print(\\\'hi\\\')"}', {"code": "print('hi')"}),  # \' is no JSON escape
        ('{"path": "C:\\temp\\x"}', {"path": "C:\temp\\x"}),  # \t is one; \x is kept literal
        ("{'x': 1, 'ok': True, 'none': None}", {"x": 1, "ok": True, "none": None}),  # Python
        ('{"a": {"b": 1}', {"a": {"b": 1}}),  # the last brace dropped at the end of the reply
        ('{"s": "a, }"}', {"s": "a, }"}),  # a comma before a brace inside a string is kept
    ],
)
def test_the_lenient_pass_repairs_what_has_one_reading(text, expected):
    assert json_from_text(text) == expected


def test_repair_can_be_turned_off_for_a_reply_cut_at_its_token_limit():
    assert json_from_text('{"steps": [{"a": 1}, {"b": 2}', repair=False) == {"a": 1}
    assert json_from_text('{"steps": [{"a": 1}, {"b": 2}') == {"steps": [{"a": 1}, {"b": 2}]}
    assert json_from_text('{"x": 1,}', repair=False) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "no json here at all",
        "{",
        "}{",
        '{"x": "unterminated',
        "{{{{{{{{{{{{{{{{{{",
        "]]]]]]",
        "```json\n```",
        "null",
        "42",
        '"just a string"',
        "{x: 1}",
        "{'x': b'bytes'}",  # a Python literal JSON cannot hold
        "{1: 'a'}",
    ],
)
def test_no_json_is_none(text):
    assert json_from_text(text) is None


def test_garbage_never_raises_and_reads_as_no_answer():
    # how fast is a benchmark's question, never a timed assertion (a loaded CI failed it)
    hostile = ["{" * 100_000, '{"a": ' * 10_000, "\x00{\x00}" * 1000]
    hostile += [None, 3, b"{}"]  # not even text
    for text in hostile:
        assert json_from_text(text) is None  # type: ignore[arg-type]
        assert list(json_values(text)) == []  # type: ignore[arg-type]
    nested = "[" * 50_000 + "]" * 50_000  # too deep to be an answer: read, never raised
    json_from_text(nested)
    list(json_values(nested))


def test_json_values_lists_every_top_level_value_once():
    text = 'first {"a": 1} then [{"b": 2}] and {"c": {"d": 3}}'
    assert [v for _, v in json_values(text)] == [{"a": 1}, [{"b": 2}], {"c": {"d": 3}}]


# ------------------------------------------------------------------- parse_structured


def test_a_valid_answer_is_returned_with_no_error():
    parsed, error = parse_structured('Sure:\n```json\n{"x": 3}\n```', Point)
    assert parsed == Point(x=3, y=0) and error == ""


def test_the_first_candidate_that_validates_wins():
    parsed, error = parse_structured('{"z": 1} and then {"x": 5}', Point)
    assert parsed == Point(x=5) and error == ""


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Point", "arguments": {"x": 7}}',  # a tool call to the schema, as text
        '{"name": "Point", "arguments": "{\\"x\\": 7}"}',  # arguments as a JSON string
        '{"name": "point", "parameters": {"x": 7}}',
        '{"type": "function", "function": {"name": "Point", "arguments": {"x": 7}}}',
        '{"Point": {"x": 7}}',
        '[{"x": 7}]',
        '<tool_call>\n{"name": "Point", "arguments": {"x": 7}}\n</tool_call>',
    ],
)
def test_an_answer_wrapped_the_way_small_models_wrap_it_is_unwrapped(text):
    assert parse_structured(text, Point) == (Point(x=7), "")


def test_a_validation_error_is_written_for_a_retry_prompt():
    parsed, error = parse_structured('{"x": "seven", "y": 1}', Point)
    assert parsed is None
    assert error.startswith("the JSON does not match the Point schema:")
    assert "- x: Input should be a valid integer" in error and "'seven'" in error
    assert "https://" not in error  # no pydantic URLs in a prompt


def test_the_closest_candidate_gives_the_error():
    parsed, error = parse_structured('{"q": 1, "r": 2} then {"x": "bad"}', Plan)
    assert parsed is None and "- steps: Field required" in error
    parsed, error = parse_structured('{"steps": []} {"other": 1}', Plan)
    assert parsed is None and "- steps: List should have at least 1 item" in error


def test_a_reply_without_json_says_so():
    parsed, error = parse_structured("I think the plan should have three steps.", Plan)
    assert parsed is None and error.startswith("the answer holds no JSON object")
    assert "Plan schema" in error
    assert parse_structured("", Plan)[1].startswith("the answer was empty")


def test_a_long_error_is_bounded():
    class Many(BaseModel):
        items: list[int]

    _, error = parse_structured('{"items": [' + ", ".join(['"x"'] * 200) + "]}", Many)
    assert len(error) <= 1200 and "more" in error


def test_recorded_replies_against_the_real_schemas():
    # the prose-and-fence plan parses as JSON but misses fields: a readable error
    parsed, error = parse_structured(PROSE_AND_FENCE, PlanDraft)
    assert parsed is None
    assert "steps.0.action: Field required" in error
    # done_when as a string is allowed by the schema ("a rubric"); the stray key is ignored
    parsed, error = parse_structured(FENCED_PLAN_WRONG_SHAPE, PlanDraft)
    assert isinstance(parsed, PlanDraft) and error == ""
    assert parsed.steps[0].expected_output == "prime.py"
    # unbalanced brackets: not JSON at all, and said so
    parsed, error = parse_structured(BROKEN_PLAN, PlanDraft)
    assert parsed is None and "no JSON object" in error
    # one bracket too many: the balanced object before it is the answer
    parsed, error = parse_structured(PLAN_EXTRA_BRACKET, PlanDraft)
    assert isinstance(parsed, PlanDraft) and parsed.steps[0].step_id == "check_is_prime"
    # reflection's bare JSON
    parsed, error = parse_structured(REFLECTION_BARE, ReflectionAnswer)
    assert isinstance(parsed, ReflectionAnswer) and parsed.decision == "end"
    # json_object mode's answer: JSON, but each step misses fields
    parsed, error = parse_structured(JSON_MODE_PLAN, PlanDraft)
    assert parsed is None and "steps.0.expected_output: Field required" in error
