"""Test doubles shared by the suite: plans, scripted role models, a graph on SQLite."""

from __future__ import annotations

import os
import re
import sqlite3
import string
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import Context, ScriptedChatModel, build_graph
from agent.models.scripted import tool_call
from agent.prompts import load_prompt
from agent.reflection.situation import Situation


def step(
    step_id: str,
    output: str,
    *,
    action: str = "writer",
    deps: tuple[str, ...] = (),
    check: Any = None,
    text: str | None = None,
) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "depends_on": list(deps),
        "action": action,
        "instructions": text or f"Write {output}.",
        "expected_output": output,
        "done_when": check if check is not None else {"kind": "non_empty"},
    }


def chain(n: int, size: int = 20) -> list[dict[str, Any]]:
    """A sequential plan of n steps, each writing one file."""
    return [
        step(f"S{i}", f"out/part{i:03d}.md", deps=(f"S{i - 1}",) if i > 1 else ())
        for i in range(1, n + 1)
    ]


def prompt_values(name: str, text: str) -> dict[str, str] | None:
    """The values ``render(name, ...)`` filled in to produce ``text``, or None if ``text``
    is not that prompt. Read from the prompt file itself, so it survives any rewording:
    the way a test recognises a prompt, or a fake server recovers what a call was about."""
    found = re.fullmatch(_prompt_pattern(name, named=True), text, re.DOTALL)
    return found.groupdict() if found else None


OPTIONAL_PARTS = {"run_goal": "subagent_run_goal", "done_when_line": "subagent_done_when_line"}
"""Fields filled with a prompt of their own or with nothing (``agent.controller.prompting``)."""


def _prompt_pattern(name: str, *, named: bool) -> str:
    """The regular expression of prompt ``name``. A field of :data:`OPTIONAL_PARTS` is its
    prompt or nothing, so two fields side by side (``{run_goal}{instructions}``) still split
    where the text does."""
    pattern, seen = "", set()
    for literal, field, _spec, _conversion in string.Formatter().parse(load_prompt(name)):
        pattern += re.escape(literal)
        if field is None:
            continue
        if (own := OPTIONAL_PARTS.get(field)) is not None:
            inner = f"(?:{_prompt_pattern(own, named=False)})?"
        else:
            inner = ".*?"
        if not named:
            pattern += inner
        else:
            pattern += f"(?P={field})" if field in seen else f"(?P<{field}>{inner})"
        seen.add(field)
    return pattern


def calls_of(model: ScriptedChatModel, step_id: str) -> list[list[BaseMessage]]:
    """The prompts ``model`` received for one step, told apart by their metadata."""
    return [
        messages
        for messages, metadata in zip(model.calls, model.call_metadata, strict=True)
        if metadata.get("step_id") == step_id
    ]


def writer(contents: Callable[[str, str, bool], str] | Mapping[str, str] | None = None):
    """A subagent responder: writes the step's output (content chosen per step), then stops.
    It reads its step from the call's metadata, never from the prompt."""

    def respond(messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "written"
        step_id, path = metadata["step_id"], metadata["expected_output"]
        revision = bool(metadata["revision"])
        if callable(contents):
            body = contents(step_id, path, revision)
        elif contents is not None:
            body = contents.get(step_id, f"content of {path}\n")
        else:
            body = f"content of {path}\n"
        return tool_call("write_file", path=path, content=body)

    return respond


def models(
    plan: list[dict[str, Any]] | list[Any],
    reflections: list[Any] | None = None,
    subagent: Callable | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Per-role scripted models: a planner script, a reflection script, one subagent responder."""
    planner = ScriptedChatModel(
        [{"steps": plan}] if plan and isinstance(plan[0], dict) and "step_id" in plan[0] else plan
    )
    roles: dict[str, Any] = {
        "planner": planner,
        "reflection": ScriptedChatModel(reflections or []),
        "judge": ScriptedChatModel(responder=lambda m: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=subagent or writer()),
    }
    roles.update(extra)
    return roles


END = {"decision": "end", "reason": "all done", "final_answer": "Done: see the artifacts."}


def sqlite_graph(tmp_path: Path, roles: Mapping[str, Any], **kwargs: Any):
    """The compiled graph on a real SQLite checkpointer in ``tmp_path``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(tmp_path / "threads.sqlite"), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    kwargs.setdefault("retry_policy", None)
    return build_graph(models=roles, checkpointer=saver, **kwargs), conn


def ctx(**overrides: Any) -> Context:
    return Context(**{"model": "scripted:happy", **overrides})


ROOT = str(Path(__file__).resolve().parents[1])
"""The repository: the working directory of the CLI's subprocesses."""


def cli(*args: str, db: Any, env_extra: Mapping[str, str] | None = None):
    """``python -m agent.cli ARGS --db DB`` in a subprocess, without the host's keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEEPREFLECT_"))}
    env.update({"COLUMNS": "200", "PYTHONPATH": ROOT, **(env_extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def both_isolation_levels(levels: tuple[str, ...] = ("kernel", "landlock", "process")):
    """An autouse fixture running every test of a module under each of ``levels`` (every
    sandbox isolation level by default; ``kernel`` and ``landlock`` are skipped, with the
    reason, where they cannot run)."""
    import pytest

    from agent import sandbox

    @pytest.fixture(autouse=True, params=list(levels))
    def mode(request, monkeypatch) -> str:
        if request.param == "kernel" and sandbox.isolation.bwrap_path() is None:
            pytest.skip(f"no usable bubblewrap: {sandbox.isolation._probe_error()}")
        if request.param == "landlock" and sandbox.isolation.landlock_probe().startswith("un"):
            pytest.skip(f"no Landlock/seccomp: {sandbox.isolation.landlock_probe()}")
        monkeypatch.setenv("DEEPREFLECT_SANDBOX", request.param)
        return request.param

    return mode


def step_worker(
    responses: Any,
    *,
    step: Mapping[str, Any],
    goal: str = "the goal",
    inputs: Mapping[str, str] | None = None,
    max_revisions: int = 2,
    fresh_drafts: int = 0,
    judge: Any = None,
    **options: Any,
) -> tuple[Any, ScriptedChatModel]:
    """A ``StepWorker`` for ``step`` whose coder answers ``responses``, and that model."""
    from agent.controller.revise import LoopConfig
    from agent.controller.worker import StepWorker
    from agent.models.factory import Metered

    model = ScriptedChatModel(responses)
    worker = StepWorker(
        step=step,
        goal=goal,
        inputs=inputs or {},
        round_no=1,
        system_prompt="system",
        model=Metered(model, "coder", "function_calling"),
        judge=judge,
        loop_config=LoopConfig(max_revisions=max_revisions, fresh_drafts=fresh_drafts),
        **options,
    )
    return worker, model


def call_tool(call: Mapping[str, Any], tools: Mapping[str, Any]) -> tuple[str, bool]:
    """``agent.tools.filesystem.execute_tool_call`` (a coroutine) from a sync test."""
    import asyncio

    from agent.tools.filesystem import execute_tool_call

    return asyncio.run(execute_tool_call(call, tools))


def situation(files=None, *, steps=None, depth=0, cap=4, dispatched=(), events=(), **kw):
    """A reflection :class:`Situation` over ``steps`` (two Markdown steps by default)."""
    steps = steps or [step("S1", "a.md"), step("S2", "b.md", deps=("S1",))]
    return Situation(
        goal=kw.pop("goal", "goal"),
        plan={"version": 1, "steps": steps},
        files=files or {},
        step=kw.pop("step_no", 1),
        depth=depth,
        cap=cap,
        dispatched=list(dispatched),
        previous_defects=kw.pop("previous_defects", []),
        turn_events=list(events),
        **kw,
    )
