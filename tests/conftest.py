"""Suite-wide pytest configuration: the tiers.

``slow`` marks the tests that start processes, servers, sandboxes or browsers: every
integration file but the ones listed in ``IN_PROCESS`` (graphs on scripted models whose checks
run in the test's own process), every test that asks for a PostgreSQL server
(``postgres_url``), and the few marked by hand (an input of megabytes).
``python -m pytest -m "not slow"`` is the fast tier a contributor runs before each commit: it
also tries fewer generated cases per property (tests/tiers.py); ``python -m pytest`` runs
everything, in parallel (pytest-xdist, ``addopts`` in pyproject.toml). ``real_model`` marks
the tier that runs a real small model (tests/real_model.py).
"""

from __future__ import annotations

from pathlib import Path

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
