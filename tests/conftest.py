"""Suite-wide pytest configuration: the tiers.

``slow`` marks the tests that start processes, servers, sandboxes or browsers: every
integration file but the ones listed in ``IN_PROCESS`` (graphs on scripted models whose checks
run in the test's own process). ``python -m pytest -m "not slow"`` is the fast tier a
contributor runs before each commit; ``python -m pytest`` runs everything, in parallel
(pytest-xdist, ``addopts`` in pyproject.toml). ``real_model`` marks the tier that runs a real
small model (tests/real_model.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent == INTEGRATION and path.name not in IN_PROCESS:
            item.add_marker(pytest.mark.slow)
