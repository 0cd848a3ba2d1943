"""``deepreflect`` with one more scripted scenario per goal of bench/goals: ``scripted:goal-NAME``.

    python tests/goal_solver.py run GOAL --model scripted:goal-sql ...   # any deepreflect command

The CLI is deepreflect's own (``agent.cli.main``), so the suite's runner exercises the path a
user takes; only the models are scripted. The planner plans one step per artifact, each
subagent writes the known-good artifact of tests/goal_solutions.py (the citations researcher
searches first and cites what the search returned; with ``GOAL_SOLVER_WRONG`` set, they write
the first known-bad artifact instead, for a false success; the escalation goal's writer uses the
region from the human's answer, which reaches it through the replanned step), reflection
finishes when every step is done (the planner's criteria carry the escalation goal's question,
quoting the goal, so deepreflect pauses on it before the plan runs, and is resumed with the
answer).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import BaseMessage, ToolMessage  # noqa: E402

import agent.models.factory  # noqa: E402
from agent.models.scenarios import finish_or_continue, scenario_model  # noqa: E402
from agent.models.scripted import ScriptedChatModel, prompt_json, tool_call  # noqa: E402
from tests.goal_solutions import BAD, GOOD  # noqa: E402

PREFIX = "goal-"
WRONG_ENV = "GOAL_SOLVER_WRONG"
ACTION = {"citations": "researcher", "escalation": "writer"}
CHECKS: dict[str, dict[str, Any]] = {
    "sql": {"kind": "sql", "db": "chinook"},
    "citations": {"kind": "citations", "min": 2},
}
_REGION = re.compile(r"\b[a-z]{2}-[a-z]+-\d\b")


def _plan(goal: str, answer: str) -> dict[str, Any]:
    steps = []
    for n, path in enumerate(p for p in GOOD[goal] if GOOD[goal][p].strip()):
        text = f"Write {path}."
        if goal == "escalation":
            text += f" Region: {answer or 'unknown'}."
        steps.append({
            "step_id": f"S{n + 1}", "depends_on": [], "action": ACTION.get(goal, "coder"),
            "instructions": text, "expected_output": path,
            "done_when": CHECKS.get(goal, {"kind": "non_empty"}),
        })  # fmt: skip
    plan: dict[str, Any] = {"steps": steps}
    if goal == "escalation":  # the goal tells the agent to ask first: a criterion quoting it
        quote = "ask the user which region before writing the file"
        plan["criteria"] = {"question": {"text": "Which region?", "quote": quote}}
    return plan


def _artifact(goal: str, path: str, instructions: str) -> str:
    if os.environ.get(WRONG_ENV):  # the first known-bad artifact: a run that "succeeds" wrongly
        return BAD[goal][0].get(path, "")
    body = GOOD[goal][path]
    if goal == "escalation":  # the region the plan's instructions carry (from the answer)
        found = _REGION.search(instructions)
        body = body.replace("eu-north-1", found.group(0) if found else "unknown")
    return body


def _subagent(goal: str) -> Any:
    def respond(messages: list[BaseMessage], metadata: Mapping[str, Any]) -> Any:
        text = str(metadata.get("instructions") or "")
        path = str(metadata.get("expected_output") or "")
        last = messages[-1]
        if goal == "citations" and not isinstance(last, ToolMessage):
            return tool_call("search", query="vector index HNSW IVF choosing")
        if isinstance(last, ToolMessage) and last.name != "search":
            return "Artifact written."
        return tool_call("write_file", path=path, content=_artifact(goal, path, text))

    return respond


def _reflection(goal: str) -> Any:
    def decide(messages: list[BaseMessage]) -> dict[str, Any]:
        return finish_or_continue(prompt_json(messages))

    return decide


def goal_model(name: str, role: str) -> BaseChatModel:
    if not name.startswith(PREFIX):
        return scenario_model(name, role)
    goal = name.removeprefix(PREFIX)
    if goal not in GOOD:
        msg = f"no scripted solution for goal {goal!r}"
        raise ValueError(msg)
    if role == "planner":
        responder: Any = lambda messages, metadata: _plan(  # noqa: E731
            goal, str(metadata.get("answer") or "")
        )
    elif role == "reflection":
        responder = _reflection(goal)
    elif role == "judge":
        responder = lambda messages: {"issues": [], "score": 1.0}  # noqa: E731
    else:
        responder = _subagent(goal)
    return ScriptedChatModel(responder=responder, name=f"scripted:{name}:{role}")


if __name__ == "__main__":
    agent.models.factory.scenario_model = goal_model
    from agent.cli import main

    sys.exit(main())
