"""Which artifacts a program prints, where the program is kept, and how it is read from a
reply (``agent.controller.computed``); running it is in tests/integration/test_computed.py."""

from __future__ import annotations

import json

from agent.controller.computed import (
    Reply,
    as_file,
    is_computed,
    program_in,
    program_path,
    read_reply,
)
from agent.vfs.entries import is_scratch, validate_path


def test_data_files_are_computed_and_code_and_prose_are_not():
    assert is_computed("inventory.json") and is_computed("out/Report.CSV")
    assert not any(is_computed(p) for p in ("stats.py", "report.md", "q.sql", "json", "a.jsonl"))


def test_the_program_is_kept_in_the_step_s_scratch_space_under_a_valid_path():
    kept = program_path("S2", "data/inventory.json")
    assert kept == "work/S2/inventory_json.py"
    assert validate_path(kept) == kept and is_scratch(kept)


def test_the_program_is_the_reply_s_one_python_or_untagged_fence():
    assert program_in("here:\n```python\nprint(1)\n```\ndone") == "print(1)\n"
    assert program_in("```\nprint(2)\n```") == "print(2)\n"
    assert program_in('```json\n{"a": 1}\n```') is None  # the file itself, not a program
    assert program_in("```python\na\n```\n```python\nb\n```") is None  # which one: a guess
    assert program_in("print(3)") is None


def test_a_json_file_printed_as_a_python_value_becomes_that_value_as_json():
    printed = "{'service': 'ledger', 'ok': True, 'none': None, 'n': [1, 2.5]}\n"
    assert json.loads(as_file(printed, "deploy.json")) == {
        "service": "ledger", "ok": True, "none": None, "n": [1, 2.5]
    }  # fmt: skip


def test_valid_json_other_files_and_what_is_not_a_literal_stay_as_printed():
    assert as_file('{"a": 1}\n', "a.json") == '{"a": 1}\n'  # already JSON: untouched
    assert as_file("{'a': 1}\n", "a.csv") == "{'a': 1}\n"  # only .json files are converted
    for printed in ("{'a': {1, 2}}", "{1: 2}x", "hello", "__import__('os')", "3"):
        assert as_file(printed, "a.json") == printed  # the check judges it as printed


def test_a_reply_is_read_as_its_program_else_the_file_it_typed_else_nothing():
    assert read_reply("```python\nprint(1)\n```", [], "a.json") == Reply(program="print(1)\n")
    assert read_reply('```json\n{"a": 1}\n```', [], "a.json") == Reply(file='{"a": 1}\n')
    write = {"name": "write_file", "args": {"path": "a.json", "content": "{}"}}
    assert read_reply("", [write], "a.json") == Reply(file="{}")
    other = {"name": "write_file", "args": {"path": "b.json", "content": "{}"}}
    blank = {"name": "write_file", "args": {"path": "a.json", "content": "  "}}
    for calls in ([other], [blank], []):
        assert read_reply("I would sum the rows.", calls, "a.json") is None
