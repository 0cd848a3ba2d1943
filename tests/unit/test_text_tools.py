"""agent.tools.text_calls: tool calls written as text by small models. No model is called.

Literals marked RECORDED are raw replies (the ``content`` field, verbatim) of
Qwen2.5-Coder-0.5B-Instruct Q4_K_M on llama.cpp's server (xllamacpp 2026.10.11549) to
deepreflect's subagent requests (tools ls, read_file, write_file, edit_file) or to probes
shaped like them (one is the 1.5B's, marked so): the server returned each with no
``tool_calls``. The ``<tool_call>`` form
is the one the model's own chat template asks for (recorded from the server's
``/apply-template``); servers that do not parse it pass it through as text.
"""

from __future__ import annotations

import json

import pytest

from agent.tools.text_calls import has_text_tool_call, tool_calls_from_text

TOOLS = ("ls", "read_file", "write_file", "edit_file")

# RECORDED: deepreflect's coder step, first turn (bare JSON, the wrong path and content).
CODER_BARE = (
    '{"name": "write_file", "arguments": {"path": "work/S1/prime.py", "content": "from prime '
    'import is_prime\\nassert is_prime(7) and not is_prime(8)"}}'
)
# RECORDED: deepreflect's coder step, revision (a fenced call).
CODER_FENCED = (
    '```json\n{"name": "write_file", "arguments": {"path": "src/app.py", "content": "def '
    "is_prime(n):\\n    if n <= 1:\\n        return False\\n    for i in range(2, int(n**0.5) + "
    '1):\\n        if n % i == 0:\\n            return False\\n    return True"}}\n```'
)
# RECORDED: deepreflect's coder step: an edit_file call (its argument names are wrong, which
# is the tool's business, not the parser's).
CODER_EDIT = (
    '{"name": "edit_file", "arguments": {"path": "prime.py", "old": "assert is_prime(7) and '
    'not is_prime(8)", "new": "assert is_prime(7) and is_prime(9)"}}'
)
# RECORDED: deepreflect's coder and writer steps: the step's check echoed back, no call.
ECHOED_CHECK = '{"kind": "contains", "all": ["vector"]}'
# RECORDED: a probe ("write hello.py"), temperature 0: bare JSON.
HELLO_BARE = (
    '{"name": "write_file", "arguments": {"path": "hello.py", "content": "print(\'hello\')"}}'
)
# RECORDED: the same probe, temperature 0.8: the final brace dropped.
HELLO_UNCLOSED = '{"name": "write_file", "arguments": {"path": "hello.py", "content": "hello\\n"}'
# RECORDED: the same probe with tool_choice "required": the call, then rambling prose.
HELLO_THEN_PROSE = (
    '{"name": "write_file", "arguments": {"path": "hello.py", "content": "print(\'hello\')"}}'
    ".json\n\nThis function writes the string 'hello' to the file 'hello.py' in the workspace."
    " The path is 'hello.py' and the content is 'print('hello')'. The function is called with"
    " the specified path and content."
)
# RECORDED: a probe whose tools were write_file and read_file: a "call" of a tool that does
# not exist (the function it was asked to write).
NOT_A_TOOL = '```json\n{\n  "name": "is_prime",\n  "arguments": {\n    "n": {\n      "type": "number"\n    }\n  }\n}\n```'  # noqa: E501


# RECORDED: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the same probe with tool_choice "required":
# a fenced, pretty-printed call, then a run of blank lines up to the token limit.
HELLO_15B_FENCED = (
    '```json\n{\n  "name": "write_file",\n  "arguments": {\n    "path": "hello.py",\n    '
    '"content": "print(\'hello\')"\n  }\n}\n```' + "\n" * 80
)


def only(calls):
    assert len(calls) == 1, calls
    return calls[0]


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        (CODER_BARE, "write_file", {"path": "work/S1/prime.py"}),
        (CODER_FENCED, "write_file", {"path": "src/app.py"}),
        (
            CODER_EDIT,
            "edit_file",
            {"path": "prime.py", "old": "assert is_prime(7) and not is_prime(8)"},
        ),
        (HELLO_BARE, "write_file", {"path": "hello.py", "content": "print('hello')"}),
        (HELLO_UNCLOSED, "write_file", {"path": "hello.py", "content": "hello\n"}),
        (HELLO_THEN_PROSE, "write_file", {"path": "hello.py", "content": "print('hello')"}),
        (HELLO_15B_FENCED, "write_file", {"path": "hello.py", "content": "print('hello')"}),
    ],
)
def test_recorded_calls_are_read(text, name, args):
    call = only(tool_calls_from_text(text, TOOLS))
    assert call["name"] == name and call["id"] == "text-call-1"
    assert call["type"] == "tool_call"
    assert args.items() <= call["args"].items()


def test_recorded_code_content_keeps_its_newlines_and_indentation():
    call = only(tool_calls_from_text(CODER_FENCED, TOOLS))
    assert call["args"]["content"].splitlines()[:2] == ["def is_prime(n):", "    if n <= 1:"]


@pytest.mark.parametrize("text", [ECHOED_CHECK, NOT_A_TOOL])
def test_recorded_replies_without_a_call_of_a_tool_give_none(text):
    assert tool_calls_from_text(text, TOOLS) == []
    assert not has_text_tool_call(text, TOOLS)


WRITE = {"path": "a.py", "content": "x = 1\n"}


@pytest.mark.parametrize(
    "text",
    [
        # Qwen's / Hermes' format (the model's chat template asks for it)
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\\n"}}'
        "\n</tool_call>",
        # the closing tag missing at the end
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\\n"}}',
        # parameters instead of arguments; arguments as a JSON string (OpenAI's wire form)
        '{"name": "write_file", "parameters": {"path": "a.py", "content": "x = 1\\n"}}',
        json.dumps({"name": "write_file", "arguments": json.dumps(WRITE)}),
        # OpenAI's tool-call object, alone, in a list, under tool_calls
        json.dumps({"type": "function", "function": {"name": "write_file", "arguments": WRITE}}),
        json.dumps([{"name": "write_file", "arguments": WRITE}]),
        json.dumps({"tool_calls": [{"function": {"name": "write_file", "arguments": WRITE}}]}),
        json.dumps({"function_call": {"name": "write_file", "arguments": json.dumps(WRITE)}}),
        # other frameworks' shapes
        json.dumps({"tool": "write_file", "args": WRITE}),
        json.dumps({"tool": "write_file", "tool_input": WRITE}),
        json.dumps({"action": "write_file", "action_input": WRITE}),
        # decorated names
        json.dumps({"name": "functions.write_file", "arguments": WRITE}),
        json.dumps({"name": "write_file()", "arguments": WRITE}),
        # prose around it, a fence without a tag, a trailing comma
        'I will write the file now.\n```\n{"name": "write_file", "arguments": '
        '{"path": "a.py", "content": "x = 1\\n",}}\n```\nDone.',
    ],
)
def test_the_common_forms_are_read(text):
    call = only(tool_calls_from_text(text, TOOLS))
    assert call["name"] == "write_file" and call["args"] == WRITE


def test_a_file_whose_content_holds_code_fences_is_written_whole():
    content = "# Notes\n\n```python\nprint({'a': [1]})\n```\n"
    text = (
        "```json\n"
        + json.dumps({"name": "write_file", "arguments": {"path": "n.md", "content": content}})
        + "\n```"
    )
    assert only(tool_calls_from_text(text, TOOLS))["args"]["content"] == content


def test_several_calls_keep_their_order_and_get_stable_ids():
    text = (
        '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.md"}}\n</tool_call>'
    )
    calls = tool_calls_from_text(text, TOOLS)
    assert [(c["name"], c["args"], c["id"]) for c in calls] == [
        ("ls", {}, "text-call-1"),
        ("read_file", {"path": "a.md"}, "text-call-2"),
    ]
    assert tool_calls_from_text(text, TOOLS) == calls  # the same text, the same ids
    assert [c["id"] for c in tool_calls_from_text(text, TOOLS, id_prefix="r2")] == [
        "r2-1",
        "r2-2",
    ]
    listed = json.dumps([{"name": "ls", "arguments": {}}, {"name": "read_file", "arguments": {}}])
    assert [c["name"] for c in tool_calls_from_text(listed, TOOLS)] == ["ls", "read_file"]


def test_tags_win_over_json_elsewhere_in_the_reply():
    text = (
        'The plan: {"name": "read_file", "arguments": {"path": "x"}}\n'
        '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    )
    assert [c["name"] for c in tool_calls_from_text(text, TOOLS)] == ["ls"]


def test_a_call_written_twice_is_one_call():
    call = '{"name": "ls", "arguments": {}}'
    assert len(tool_calls_from_text(f"```json\n{call}\n```\nThat is: {call}", TOOLS)) == 1


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "delete_everything", "arguments": {}}',  # not one of the tools
        '{"name": "write_file", "arguments": "not json"}',
        '{"name": "write_file", "arguments": [1, 2]}',
        '{"name": "write_file", "description": "writes a file"}',  # a tool's description
        '{"type": "function", "function": {"name": "write_file", "parameters": {"type": '
        '"object"}}, "extra": 1}',
        '{"name": "Alice", "age": 3}',
        "write_file(path='a.py', content='x')",  # Python call syntax is not recognised
        "",
        "no tools here",
        "<tool_call></tool_call>",
        "<tool_call>garbage</tool_call>",
        "{" * 10_000,
    ],
)
def test_what_is_no_call_gives_none(text):
    assert tool_calls_from_text(text, TOOLS) == []


def test_a_tool_definition_echoed_back_is_no_call():
    definition = {"name": "write_file", "description": "Write a file", "parameters": {}}
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    for text in (
        json.dumps({"type": "function", "function": definition}),
        json.dumps(definition),
        json.dumps({"name": "write_file", "parameters": schema}),
    ):
        assert tool_calls_from_text(text, TOOLS) == []
    # a tool that takes a "type" argument is still called
    call = only(tool_calls_from_text(json.dumps({"name": "ls", "arguments": {"type": "x"}}), TOOLS))
    assert call["args"] == {"type": "x"}


def test_nothing_is_found_without_tools_and_garbage_never_raises():
    assert tool_calls_from_text(HELLO_BARE, []) == []
    for junk in (None, 3, b"{}", ["x"], "\x00" * 100, "<tool_call>" * 1000):
        assert tool_calls_from_text(junk, TOOLS) == []  # type: ignore[arg-type]


# RECORDED-like: Qwen2.5-Coder-1.5B writes its write_file call as fenced JSON whose content
# holds the docstring's bare triple quotes, so the JSON does not parse (docs/real-model-eval.md)
UNESCAPED_DOCSTRING = (
    '```json\n{"name": "write_file", "arguments": {"path": "solution.py", "content": '
    '"def f(x):\\n    """Return x."""\\n    return x\\n"}}\n```'
)


def test_a_write_call_whose_content_has_bare_quotes_is_still_read():
    (call,) = tool_calls_from_text(UNESCAPED_DOCSTRING, ["write_file", "read_file"])
    assert call["name"] == "write_file" and call["args"]["path"] == "solution.py"
    assert call["args"]["content"] == 'def f(x):\n    """Return x."""\n    return x\n'


def test_a_loose_write_call_with_its_path_after_the_content_is_read_too():
    reply = '{"name": "write_file", "arguments": {"content": "x = \\"a\\"\\n""", "path": "a.py"}}'
    (call,) = tool_calls_from_text(reply, ["write_file"])
    assert call["args"]["path"] == "a.py" and call["args"]["content"].startswith('x = "a"')


def test_a_loose_write_needs_the_write_tool_a_path_and_some_content():
    assert tool_calls_from_text(UNESCAPED_DOCSTRING, ["read_file"]) == []
    assert tool_calls_from_text('{"name": "write_file", "content": "x"}}', ["write_file"]) == []
    no_content = '{"name": "write_file", "arguments": {"path": "a.py", "content": " "}}'
    assert tool_calls_from_text(no_content, ["write_file"])[0]["args"]["content"] == " "


# ------------------------------------------------------------------ the file in a fence

FENCED_REPLY = (
    "Here is the solution:\n\n```python\nfrom typing import List\n\n\n"
    "def below_zero(operations: List[int]) -> bool:\n"
    '    """ Detect a negative balance. """\n'
    "    balance = 0\n    for op in operations:\n        balance += op\n"
    "        if balance < 0:\n            return True\n    return False\n```\n"
)


def test_the_one_fence_of_the_files_language_is_the_file():
    from agent.tools.text_calls import fenced_file

    content = fenced_file(FENCED_REPLY, "solution.py")
    assert content is not None and content.startswith("from typing import List\n")
    assert content.endswith("    return False\n") and '"""' in content
    assert fenced_file("```\nplain\n```", "notes.txt") == "plain\n"  # untagged counts


@pytest.mark.parametrize(
    "reply",
    [
        "no fence at all",
        '```json\n{"a": 1}\n```',  # another language than the file's
        "```python\na = 1\n```\nor\n```python\na = 2\n```",  # two candidates: a guess
        "```python\n   \n```",  # empty
    ],
)
def test_no_fence_or_an_ambiguous_one_is_no_file(reply):
    from agent.tools.text_calls import fenced_file

    assert fenced_file(reply, "solution.py") is None
