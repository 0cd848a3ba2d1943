"""The distributed deployment, as far as a machine without Docker can check it (issue 23,
item 7): ``langgraph dockerfile`` turns ``langgraph.json`` into a Dockerfile that builds the
LangGraph Server image (PostgreSQL persistence, Redis queue) with this project installed
from its own files, and nothing fetched from elsewhere."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fakes import ROOT


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory) -> str:
    langgraph = shutil.which("langgraph")
    if langgraph is None:
        pytest.skip("the langgraph CLI (langgraph-cli, in the dev extra) is not installed")
    out = tmp_path_factory.mktemp("deploy") / "Dockerfile"
    done = subprocess.run(
        [langgraph, "dockerfile", "-c", str(Path(ROOT) / "langgraph.json"), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return out.read_text()


def test_the_image_is_the_langgraph_server_on_the_projects_python(dockerfile):
    config = json.loads((Path(ROOT) / "langgraph.json").read_text())
    base = re.search(r"^FROM (\S+)", dockerfile, re.MULTILINE)
    assert base is not None
    assert base.group(1) == f"langchain/langgraph-api:{config['python_version']}"


def test_the_project_is_installed_from_its_own_files_only(dockerfile):
    assert re.search(r"^ADD \. /deps/\S+", dockerfile, re.MULTILINE)
    installs = [ln for ln in dockerfile.splitlines() if "pip install" in ln]
    assert any("-e ." in ln for ln in installs)
    for line in installs:  # no package from a URL, a git repository or another index
        assert not re.search(r"(https?://|git\+|--index-url|--extra-index-url)", line), line


def test_the_served_graph_is_the_one_compiled_without_a_checkpointer(dockerfile):
    graphs = re.search(r"LANGSERVE_GRAPHS='([^']+)'", dockerfile)
    assert graphs is not None
    served = json.loads(graphs.group(1))
    assert list(served) == ["deep_agent"]
    module, _, name = served["deep_agent"].rpartition(":")
    assert module.endswith("/graphs/deep_agent.py") and name == "graph"
    # the server brings PostgreSQL persistence: the graph must not bring a saver of its own
    from graphs.deep_agent import graph

    assert graph.checkpointer is None
