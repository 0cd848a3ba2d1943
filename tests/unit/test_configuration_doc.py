"""docs/configuration.md's table is the Context (issue 24: one source per fact): it lists every
field once with its real default, and the rows of the workload and the modes name every value
of their vocabulary, with the depth cap each workload sets."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from agent import Context
from agent.context import DEPTH_CAP_BY_WORKLOAD
from agent.vocabulary import STRUCTURED_OUTPUT_SETTINGS, ToolCalling, Workload

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def table() -> dict[str, tuple[str, str]]:
    """field -> (default as written, meaning), from the page's first table."""
    rows: dict[str, tuple[str, str]] = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`(\w+)`", cells[0]):
            assert name not in rows, f"{name} is listed twice"
            rows[name] = (cells[1].strip("`"), cells[2])
    return rows


def written(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_the_table_lists_every_context_field_and_nothing_else():
    assert sorted(table()) == sorted(f.name for f in fields(Context))


@pytest.mark.parametrize("f", fields(Context), ids=lambda f: f.name)
def test_each_default_is_the_fields_default(f):
    assert f.default is not MISSING, f"{f.name} has no default"
    assert table()[f.name][0] == written(f.default)


def test_the_workload_row_gives_each_workloads_depth_cap():
    meaning = table()["workload"][1]
    assert set(DEPTH_CAP_BY_WORKLOAD) == set(Workload)
    for workload in Workload:
        assert f"{workload.value} {DEPTH_CAP_BY_WORKLOAD[workload]}" in meaning, workload


@pytest.mark.parametrize(
    ("name", "values"),
    [("structured_output", STRUCTURED_OUTPUT_SETTINGS), ("tool_calling", tuple(ToolCalling))],
)
def test_each_mode_row_names_every_value(name, values):
    meaning = table()[name][1]
    assert [v for v in values if f"`{v}`" not in meaning] == []
