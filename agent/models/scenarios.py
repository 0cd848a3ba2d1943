"""Scripted scenarios (``scripted:<name>``): deterministic models for the demo and the tests.

Each role answers from the call it is given, not from a call counter, so a thread paused
in one process and resumed in another gets the same answers (docs/architecture.md, CLI contract). A
call is read from its metadata (``agent.models.factory.Metered``: the planner's ``answer`` and
``reason``, a subagent's ``step_id``, ``instructions`` and ``revision``) and from the JSON
data in it (reflection's situation), never from a prompt's wording.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from agent.errors import ConfigError
from agent.models.scripted import Responder, ScriptedChatModel, prompt_json, tool_call
from agent.vfs.entries import is_scratch

SCENARIOS = (
    "demo",
    "happy",
    "replan",
    "escalation",
    "depth-cap",
    "rolling",
    "files",
    "execute",
)
# the goal `deepreflect demo --scenario NAME` runs: what each scenario's plan is about
SCENARIO_GOALS = {
    "demo": "Build a tiny slugify module with tests and a README.",
    "happy": "Write a short report on vector databases from notes.",
    "replan": "Summarise the findings, with sources.",
    "escalation": "Write a short report on vector databases for its audience.",
    "depth-cap": "Write the sharpest possible report on vector databases.",
    "rolling": "Gather the facts on vector databases, then write the report they call for.",
    "files": "List the files I gave you (--file), with their line counts.",
    "execute": "Write an add(a, b) function with tests, and run them before handing it in.",
}
# the Context a scenario needs besides its scripted models
SCENARIO_CONTEXT: dict[str, dict[str, Any]] = {
    "rolling": {"planning": "rolling"},
    "execute": {"tool_calling": "native", "workload": "coding"},
}


def _first_line(value: Any) -> str:
    """A metadata text as the scenarios use it: its first line, stripped."""
    return (str(value or "").splitlines() or [""])[0].strip()


def _step(
    step_id: str, action: str, text: str, output: str, check: Any, deps: Sequence[str] = ()
) -> dict:
    return {
        "step_id": step_id,
        "depends_on": list(deps),
        "action": action,
        "instructions": text,
        "expected_output": output,
        "done_when": check,
    }


# ------------------------------------------------------------------------------ plans

_SLUG_TESTS = """from slugify import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_drops_punctuation():
    assert slugify("Hello, World!") == "hello-world"
"""
_SLUG_BUGGY = '''import re


def slugify(text: str) -> str:
    """Lowercase the text and join its words with dashes."""
    words = text.lower().split()
    return "-".join(words)
'''


def _demo_plan(answer: str, reason: str) -> dict:
    readme = "Write README.md for the slugify module, citing notes/requirements.md."
    if reason:
        readme += " It must have a Usage section with an example and say how to run pytest."
    return {
        "steps": [
            _step(
                "S1",
                "researcher",
                "Collect the requirements of a slugify helper.",
                "notes/requirements.md",
                {"kind": "contains", "all": ["lowercase", "dash"]},
            ),
            _step(
                "S2",
                "coder",
                "Write pytest tests for slugify(text).",
                "test_slugify.py",
                {"kind": "regex", "pattern": r"def test_\w+"},
            ),
            _step(
                "S3",
                "coder",
                "Implement slugify(text) in slugify.py so the tests pass.",
                "slugify.py",
                {"kind": "pytest", "tests": ["test_slugify.py"]},
                ["S2"],
            ),
            _step(
                "S4",
                "writer",
                readme,
                "README.md",
                {"kind": "contains", "all": ["slugify", "Usage", "pytest"]},
                ["S1", "S3"],
            ),
        ]
    }


def _simple_plan(answer: str, reason: str) -> dict:
    audience = f" Audience: {answer}." if answer else ""
    return {
        "steps": [
            _step(
                "S1",
                "researcher",
                f"Collect the key facts for the goal.{audience}",
                "notes.md",
                {"kind": "contains", "all": ["Facts"]},
            ),
            _step(
                "S2",
                "writer",
                f"Write the report from notes.md.{audience}",
                "report.md",
                {"kind": "contains", "all": ["Report", "notes.md"]},
                ["S1"],
            ),
        ]
    }


def _rolling_plan(answer: str, reason: str) -> dict:
    """Segment 1 is the research; once reflection has seen it, segment 2 adds the report."""
    plan = _simple_plan(answer, "")
    return plan if reason else {"steps": plan["steps"][:1]}


def _replan_plan(answer: str, reason: str) -> dict:
    text = "Write summary.md for the goal."
    if reason:
        text += " Include a Sources section."
    return {
        "steps": [
            _step(
                "S1",
                "writer",
                text,
                "summary.md",
                {"kind": "contains", "all": ["Summary", "Sources"]},
            ),
        ]
    }


def _files_plan(answer: str, reason: str) -> dict:
    return {
        "steps": [
            _step(
                "S1",
                "writer",
                "Write INVENTORY.md: every file you were given, with its line count.",
                INVENTORY,
                {"kind": "contains", "all": ["# Inventory"]},
            ),
        ]
    }


def _execute_plan(answer: str, reason: str) -> dict:
    return {
        "steps": [
            _step(
                "S1",
                "coder",
                "Write pytest tests for add(a, b) in test_calc.py.",
                CALC_TESTS,
                {"kind": "regex", "pattern": r"def test_\w+"},
            ),
            _step(
                "S2",
                "coder",
                "Implement add(a, b) in calc.py; run the tests with execute before handing in.",
                "calc.py",
                {"kind": "pytest", "tests": [CALC_TESTS]},
                ["S1"],
            ),
        ]
    }


# ------------------------------------------------------------------------------ artifacts

CALC_TESTS = "test_calc.py"
_CALC_TEST_TEXT = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
_CALC_BUGGY = "def add(a, b):\n    return a - b\n"
RUN_TESTS = f"pytest -q {CALC_TESTS}"


def _tested(messages: list[BaseMessage], metadata: Mapping[str, Any]) -> Any:
    """The ``execute`` scenario's coder: writes calc.py, runs the tests with ``execute``, fixes
    what they report, runs them again, and hands in only once they pass."""
    if metadata.get("expected_output") == CALC_TESTS:
        if any(isinstance(m, ToolMessage) for m in messages):
            return "Tests written."
        return tool_call("write_file", path=CALC_TESTS, content=_CALC_TEST_TEXT)
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("write_file", path="calc.py", content=_CALC_BUGGY)
    last = results[-1]
    if last.name != "execute":
        return tool_call("execute", command=RUN_TESTS)
    if str(last.content).startswith("exit code 0"):
        return "calc.py is written and its tests pass."
    return tool_call("edit_file", path="calc.py", old="a - b", new="a + b")


INVENTORY = "INVENTORY.md"


def _inventory(messages: list[BaseMessage]) -> Any:
    """The ``files`` scenario's step, through the real tools: ``ls``, then ``read_file`` on
    every file listed (the user's), then the inventory written from what was read."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("ls")
    last = results[-1]
    if last.name == "ls":
        listed = str(last.content).splitlines()
        paths = [p for p in listed if p not in (INVENTORY, "(no files)") and not is_scratch(p)]
        paths = [p for p in paths if not p.endswith(" (binary: not readable as text)")]
        calls = [{"name": "read_file", "args": {"path": p}, "id": f"read-{p}"} for p in paths]
        if calls:
            return AIMessage(content="", tool_calls=calls)
    if last.name in ("ls", "read_file"):
        asked = {
            c["id"]: c["args"].get("path")
            for m in messages
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        }
        rows = [
            f"- {asked[m.tool_call_id]}: {len(str(m.content).splitlines())} lines"
            for m in results
            if m.name == "read_file" and m.tool_call_id in asked
        ]
        body = "# Inventory\n" + ("\n".join(rows) or "No files were given.") + "\n"
        return tool_call("write_file", path=INVENTORY, content=body)
    return "Artifact written."


def _artifact(step_id: str, instructions: str, revision: bool) -> AIMessage:
    """What a subagent writes, decided from its step and whether it is revising."""
    if step_id == "S1" and "requirements" in instructions:
        body = (
            "# Requirements\n- lowercase the text\n- join words with a dash\n- drop punctuation\n"
        )
        return tool_call("write_file", path="notes/requirements.md", content=body)
    if step_id == "S2" and "pytest tests" in instructions:
        return tool_call("write_file", path="test_slugify.py", content=_SLUG_TESTS)
    if step_id == "S3" and "slugify.py" in instructions:
        if revision:  # the evidence names the failing assertion: patch just that line
            return tool_call(
                "edit_file",
                path="slugify.py",
                old="    words = text.lower().split()",
                new='    words = re.findall(r"[a-z0-9]+", text.lower())',
            )
        return tool_call("write_file", path="slugify.py", content=_SLUG_BUGGY)
    if step_id == "S4":
        body = "# slugify\nTurns titles into URL slugs; see notes/requirements.md.\n"
        if "Usage section" in instructions:
            body += '\n## Usage\n\n    slugify("Hello, World!")  # hello-world\n\nRun `pytest`.\n'
        elif revision:
            body += "\nTests live in test_slugify.py.\n"
        return tool_call("write_file", path="README.md", content=body)
    if "summary.md" in instructions:
        body = "# Summary\nThe goal, in brief.\n"
        if "Sources section" in instructions:
            body += "\n## Sources\n- the goal statement\n"
        elif revision:
            body += "\nMore detail on the goal.\n"
        return tool_call("write_file", path="summary.md", content=body)
    if step_id == "S1":
        return tool_call("write_file", path="notes.md", content=f"# Facts\n{instructions}\n")
    return tool_call(
        "write_file", path="report.md", content=f"# Report\nBased on notes.md. {instructions}\n"
    )


def _subagent(messages: list[BaseMessage], metadata: Mapping[str, Any]) -> Any:
    if metadata.get("expected_output") in (CALC_TESTS, "calc.py"):
        return _tested(messages, metadata)
    if metadata.get("expected_output") == INVENTORY:
        return _inventory(messages)
    if isinstance(messages[-1], ToolMessage):
        return "Artifact written."
    return _artifact(
        str(metadata.get("step_id") or "S1"),
        _first_line(metadata.get("instructions")),
        revision=bool(metadata.get("revision")),
    )


# ------------------------------------------------------------------------------ roles


def _planner(plan_for: Callable[[str, str], dict]) -> Responder:
    def respond(messages: list[BaseMessage], metadata: Mapping[str, Any]) -> Any:
        return plan_for(_first_line(metadata.get("answer")), _first_line(metadata.get("reason")))

    return respond


def finish_or_continue(s: dict[str, Any]) -> dict[str, Any]:
    steps = s.get("plan", {}).get("steps", [])
    if steps and all(st["done"] for st in steps):
        names = ", ".join(st["expected_output"] for st in steps)
        verb = "is" if len(steps) == 1 else "are"
        return {
            "decision": "end",
            "reason": "every artifact is done",
            "final_answer": f"Done: {names} {verb} written and checked.",
        }
    failed = [p for p, f in s.get("files", {}).items() if f.get("check") == "fail"]
    if failed:
        return {
            "decision": "replan",
            "reason": f"{failed[0]} failed its check after revisions; sharpen its step",
        }
    return {"decision": "continue", "reason": "steps remain"}


def _reflection(decide: Callable[[dict[str, Any]], dict]) -> Responder:
    return lambda messages: decide(prompt_json(messages))


def _escalating(s: dict[str, Any]) -> dict[str, Any]:
    if s.get("plan", {}).get("version", 0) < 2:
        return {
            "decision": "escalate",
            "reason": "the audience is ambiguous",
            "question": "Who is the report for: engineers or executives?",
            "suggested_responses": ["engineers", "executives"],
        }
    return finish_or_continue(s)


def _segment_by_segment(s: dict[str, Any]) -> dict[str, Any]:
    """Rolling planning: the first segment done, ask for the next; then finish."""
    steps = s.get("plan", {}).get("steps", [])
    if s.get("planning") == "rolling" and len(steps) == 1 and all(st["done"] for st in steps):
        return {"decision": "replan", "reason": "plan the next segment: the report from notes.md"}
    return finish_or_continue(s)


def _never_satisfied(s: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "replan", "reason": "the report could be sharper"}


def _approve(messages: list[BaseMessage]) -> dict[str, Any]:
    """The judge of every scenario: no issue with any artifact."""
    return {"issues": [], "score": 1.0}


_PLANNERS: dict[str, Callable[[str, str], dict]] = {
    "demo": _demo_plan,
    "happy": _simple_plan,
    "replan": _replan_plan,
    "escalation": _simple_plan,
    "depth-cap": _simple_plan,
    "rolling": _rolling_plan,
    "files": _files_plan,
    "execute": _execute_plan,
}
_REFLECTIONS: dict[str, Callable[[dict[str, Any]], dict]] = {
    "demo": finish_or_continue,
    "happy": finish_or_continue,
    "replan": finish_or_continue,
    "escalation": _escalating,
    "depth-cap": _never_satisfied,
    "rolling": _segment_by_segment,
    "files": finish_or_continue,
    "execute": finish_or_continue,
}


def scenario_model(name: str, role: str) -> BaseChatModel:
    """The scripted model playing ``role`` in scenario ``name``."""
    if name not in SCENARIOS:
        msg = f"unknown scripted scenario {name!r}; choose one of {', '.join(SCENARIOS)}"
        raise ConfigError(msg)
    responder: Responder
    if role == "planner":
        responder = _planner(_PLANNERS[name])
    elif role == "reflection":
        responder = _reflection(_REFLECTIONS[name])
    elif role == "judge":
        responder = _approve
    else:
        responder = _subagent
    return ScriptedChatModel(responder=responder, name=f"scripted:{name}:{role}")
