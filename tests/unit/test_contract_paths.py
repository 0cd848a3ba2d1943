"""Every name design.md marks **contract** imports from the path it gives, whatever folder
of ``agent/`` its code lives in (issue 24 moved the modules into stage folders)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONTRACT = [
    ("agent", "build_graph"),
    ("agent", "Context"),
    ("agent", "resume"),
    ("agent", "run"),
    ("agent.models", "ScriptedChatModel"),
    ("agent.plan", "plan_actual_diff"),
    ("agent.checks", "run_check"),
    ("agent.controller", "revise_loop"),
    ("agent.vfs", "summarize_files"),
    ("agent.sandbox", "isolation_level"),
    ("agent.errors", "ErrorClass"),
    ("agent.cli", "main"),
]


@pytest.mark.parametrize(("module", "name"), CONTRACT, ids=lambda v: str(v))
def test_each_contract_name_imports_from_its_documented_path(module, name):
    assert callable(getattr(importlib.import_module(module), name))


def test_the_console_script_and_the_served_graph_are_where_the_product_card_says():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["deepreflect"] == "agent.cli:main"
    served = (ROOT / "langgraph.json").read_text()
    assert '"deep_agent": "./graphs/deep_agent.py:graph"' in served


def test_the_contract_names_are_the_objects_the_code_uses():
    """A path is not a copy: each package exports the very object its module defines."""
    from agent.controller.revise import revise_loop
    from agent.models.scripted import ScriptedChatModel
    from agent.plan.diff import plan_actual_diff
    from agent.vfs.entries import summarize_files

    assert importlib.import_module("agent.controller").revise_loop is revise_loop
    assert importlib.import_module("agent.models").ScriptedChatModel is ScriptedChatModel
    assert importlib.import_module("agent.plan").plan_actual_diff is plan_actual_diff
    assert importlib.import_module("agent.vfs").summarize_files is summarize_files
