"""What both harnesses share: the critic's rubric and call, the pool that runs the tasks, and
the small arithmetic of a report."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent.checks.critique import ChatModelLike, Critique, Issue, blocking, ground, run_critic
from agent.errors import classify, describe
from agent.eval.datasets import Task
from agent.models.factory import merge_usage

Progress = Callable[[int, int], None]
"""Called with (tasks done, tasks in all) after each task."""

CRITIC_RUBRIC = [
    "the artifact does everything the task asks, edge cases included",
    "the code runs: no syntax errors, no undefined names, the requested signature is kept",
]
_EVIDENCE_CHARS = 300


def review(
    critic: ChatModelLike, task: Task, draft: str, report: Mapping[str, Any]
) -> tuple[Critique | None, list[Issue], int]:
    """The model critic on one draft: its critique (None when malformed, which is never
    approval), the blocking issues that survive grounding, as the loop counts them, and the
    tokens spent."""
    reviewed, tokens = run_critic(critic, task.prompt, task.path, draft, report, CRITIC_RUBRIC)
    issues = blocking(ground(reviewed)) if reviewed is not None else []
    return reviewed, issues, tokens


def map_tasks(
    fn: Callable[[Task], dict[str, Any]],
    tasks: Sequence[Task],
    workers: int,
    progress: Progress | None,
) -> tuple[list[dict[str, Any]], float]:
    """Run ``fn`` over the tasks on a small thread pool, in order, reporting progress; return
    the records and the wall time in seconds.

    A task that raises becomes a failed record: one bad task must not lose the others'.
    """
    started = time.monotonic()

    def guarded(task: Task) -> dict[str, Any]:
        try:
            return fn(task)
        except Exception as exc:
            return {"id": task.id, "error": describe(exc), "error_class": classify(exc).value}

    done = 0
    out: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for record in pool.map(guarded, tasks):
            out.append(record)
            done += 1
            if progress is not None:
                progress(done, len(tasks))
    return out, round(time.monotonic() - started, 2)


def sha(text: str) -> str:
    """A draft's identity (lone surrogates a model wrote must not crash the hash)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def ratio(part: int, whole: int) -> float | None:
    """``part / whole`` to four places; None when there is nothing to divide by."""
    return round(part / whole, 4) if whole else None


def clip(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    """Evidence on one line and at most ``limit`` characters, so a report stays readable."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def calls(usage: Mapping[str, Mapping[str, int]]) -> int:
    """Model calls over every role."""
    return sum(int(counts.get("calls", 0)) for counts in usage.values())


def summed_usage(
    usages: Iterable[Mapping[str, Mapping[str, int]] | None],
) -> dict[str, dict[str, int]]:
    """The per-role usage of many tasks, added up."""
    total: dict[str, dict[str, int]] = {}
    for usage in usages:
        total = merge_usage(total, usage)
    return total
