"""A run's CPU time (``agent.sandbox.processes.CpuTime``): summed over its processes, each
counted from when the run first saw it, a reused pid never taken for the process before it,
and a process that has ended kept in the sum."""

from __future__ import annotations

import pytest

from agent.sandbox import processes
from agent.sandbox.host import run_jobs


def looks(monkeypatch, *samples: dict[int, tuple[int, float]]) -> list[float]:
    """What ``CpuTime.used`` says at each look, ``samples`` being ``{pid: (start, cpu)}``
    of the live processes at that look."""
    cpu = processes.CpuTime()
    said = []
    for sample in samples:
        monkeypatch.setattr(
            processes, "_cpu_of", lambda pid, sample=sample: ((pid, sample[pid][0]), sample[pid][1])
        )
        said.append(cpu.used(list(sample)))
    return said


def test_cpu_is_summed_over_processes_and_kept_after_one_ends(monkeypatch):
    said = looks(monkeypatch, {1: (0, 0.0)}, {1: (0, 1.0), 2: (5, 0.5)}, {1: (0, 1.5)})
    assert said == [0.0, 1.5, 2.0]  # process 2 ended after 0.5 s: still counted


def test_what_a_process_used_before_the_run_first_saw_it_is_not_the_runs(monkeypatch):
    said = looks(monkeypatch, {1: (0, 3.0)}, {1: (0, 3.5)})  # a pooled interpreter's imports
    assert said == [0.0, 0.5]


def test_a_reused_pid_is_a_new_process(monkeypatch):
    said = looks(monkeypatch, {1: (0, 0.0)}, {1: (0, 2.0)}, {1: (9, 1.0)})
    assert said == [0.0, 2.0, 3.0]


def test_a_wall_backstop_shorter_than_the_cpu_time_is_refused():
    with pytest.raises(ValueError, match="wall_s must be a number of seconds of at least"):
        run_jobs([], timeout_s=10, wall_s=5)
