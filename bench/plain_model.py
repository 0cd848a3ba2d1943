"""The plain model asked once: the baseline deepreflect must beat (issue 22, item 1).

What a user gets without deepreflect: one chat request to the same model on the same server,
no agent, no tools, greedy, ``max_tokens`` 512. The prompt is ``plain_prompt.txt`` beside
this file (system "You are a helpful coding assistant.", then the user's instruction and the
problem's prompt in a python fence); the reply's fenced code is graded as the whole program by
the same hidden check deepreflect's drafts are graded by (HumanEval: ``check(entry_point)``
in the sandbox). Per task: correctness, prompt and completion tokens, wall time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from agent.checks import run_check
from agent.eval.datasets import Task

PROMPT_FILE = Path(__file__).with_name("plain_prompt.txt")
MAX_TOKENS = 512
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def prompt_parts() -> tuple[str, str]:
    """(system, user instruction) of the plain prompt, from ``plain_prompt.txt``."""
    system, _, instruction = PROMPT_FILE.read_text(encoding="utf-8").partition("\n---\n")
    return system.strip(), instruction.strip()


def messages(problem_prompt: str) -> list[SystemMessage | HumanMessage]:
    """The one request: the system line, then the instruction and the problem in a fence."""
    system, instruction = prompt_parts()
    user = f"{instruction}\n\n```python\n{problem_prompt}```"
    return [SystemMessage(system), HumanMessage(user)]


def fenced_program(reply: str) -> str:
    """The reply's code: its first python (or untagged) fence; the whole reply without one."""
    match = _FENCE.search(reply)
    return match.group(1) if match else reply


def solve(model: Any, task: Task) -> dict[str, Any]:
    """Ask once, grade the fenced code with the task's hidden check."""
    if task.stub is None:
        raise ValueError(f"task {task.id} has no problem prompt (stub) to ask the plain model")
    started = time.monotonic()
    answer = model.invoke(messages(task.stub))
    wall = time.monotonic() - started
    program = fenced_program(str(answer.content))
    report = run_check(task.check, {**task.files, task.path: program}, task.path)
    usage = answer.usage_metadata or {}
    return {
        "id": task.id,
        "correct": bool(report["passed"]),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "wall_s": round(wall, 2),
        "evidence": str(report.get("evidence", ""))[:300],
        "program": program,
    }


def plain_model(base_url: str, name: str, *, timeout_s: float = 600.0) -> ChatOpenAI:
    """The same OpenAI-compatible server and model deepreflect's pass uses, sampled greedily."""
    return ChatOpenAI(
        model=name,
        base_url=base_url,
        api_key="local-llama-server",  # type: ignore[arg-type]
        temperature=0,
        max_tokens=MAX_TOKENS,  # type: ignore[call-arg]
        timeout=timeout_s,
        max_retries=0,
    )


def run_plain(model: Any, tasks: Sequence[Task]) -> dict[str, Any]:
    """Every task asked once; a request that fails is recorded with its error, not dropped."""
    started = time.monotonic()
    records: list[dict[str, Any]] = []
    for task in tasks:
        try:
            records.append(solve(model, task))
        except Exception as exc:  # one failed request must not lose the other tasks
            records.append({"id": task.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
        print(f"plain {len(records)}/{len(tasks)}", flush=True)
    return {"wall_time_s": round(time.monotonic() - started, 2), **summary(records)}


def summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals of the plain pass in the shape ``real_eval.columns`` reads."""
    ok = [r for r in records if "error" not in r]
    return {
        "tasks": len(records),
        "errors": len(records) - len(ok),
        "correct": sum(1 for r in ok if r["correct"]),
        "input_tokens": sum(r["input_tokens"] for r in ok),
        "output_tokens": sum(r["output_tokens"] for r in ok),
        "wall_s": round(sum(r["wall_s"] for r in ok), 2),
        "records": list(records),
    }
