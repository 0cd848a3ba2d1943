"""Suite-wide pytest configuration: the tiers.

``slow`` marks the tests that start processes, servers, sandboxes or browsers: every
integration file but the ones listed in ``IN_PROCESS`` (graphs on scripted models whose checks
run in the test's own process), every test that asks for a PostgreSQL server
(``postgres_url``), and the ones marked by hand (unit tests that run a check in the sandbox,
an input of megabytes).
``python -m pytest -m "not slow"`` is the fast tier a contributor runs before each commit: a
test that starts a process fails there (``no_process_in_the_fast_tier``), and each property
tries fewer generated cases (tests/tiers.py); ``python -m pytest`` runs
everything, in parallel (pytest-xdist, ``addopts`` in pyproject.toml). ``real_model`` marks
the tier that runs a real small model (tests/real_model.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests import tiers

INTEGRATION = Path(__file__).parent / "integration"
IN_PROCESS = frozenset(
    {
        "test_citations_run.py",
        "test_graph_picture.py",
        "test_prompt_wording.py",
        "test_properties.py",
        "test_streaming.py",
        "test_typed_approvals.py",
        "test_user_tools_run.py",
    }
)
"""Integration files that start no process, server, sandbox or browser."""
SERVER_FIXTURES = frozenset({"postgres_url"})
"""Fixtures that start a server for the test."""

settings.register_profile("fast", max_examples=tiers.FAST_EXAMPLES)


def pytest_configure(config: pytest.Config) -> None:
    tiers.FAST = "not slow" in (config.option.markexpr or "")
    if tiers.FAST:
        settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        in_process = path.parent != INTEGRATION or path.name in IN_PROCESS
        if not in_process or SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def no_process_in_the_fast_tier(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """In the fast tier, a test that starts a process fails and says to mark it ``slow``."""
    if not tiers.FAST:
        yield
        return
    started: list[Any] = []
    popen_init = subprocess.Popen.__init__
    fork = os.fork

    def counted_popen(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        started.append(args[0] if args else kwargs.get("args"))
        popen_init(self, *args, **kwargs)

    def counted_fork() -> int:
        started.append("os.fork()")
        return fork()

    monkeypatch.setattr(subprocess.Popen, "__init__", counted_popen)
    monkeypatch.setattr(os, "fork", counted_fork)
    yield
    assert not started, f"{request.node.nodeid} starts a process ({started}): mark it slow"
