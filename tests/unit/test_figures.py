"""bench/figures.py rebuilds docs/performance.md's figures section from the benchmarks' output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

spec = importlib.util.spec_from_file_location("figures", ROOT / "bench" / "figures.py")
assert spec and spec.loader
figures = importlib.util.module_from_spec(spec)
sys.modules["figures"] = figures
spec.loader.exec_module(figures)


def block(name: str, text: str) -> str:
    return f"<!-- figure:{name} -->\n```\n{text}\n```\n<!-- /figure -->\n"


def test_fresh_blocks_replace_their_old_ones_and_the_others_are_kept():
    readme = (
        "intro\n"
        + figures.section({"storage": block("storage", "old"), "parallel": block("parallel", "p")})
        + "\noutro\n"
    )
    out = figures.rewrite(readme, {"storage": block("storage", "new")})
    assert out.startswith("intro\n") and out.endswith("\noutro\n")
    assert "new" in out and "old" not in out and block("parallel", "p") in out


def test_blocks_follow_the_benchmarks_order_whatever_order_they_ran_in():
    names = list(figures.BENCHMARKS)
    text = figures.section({n: block(n, n) for n in reversed(names)})
    assert [text.index(f"figure:{n} ") for n in names] == sorted(
        text.index(f"figure:{n} ") for n in names
    )


def test_a_page_without_the_section_is_a_clear_error():
    with pytest.raises(SystemExit, match=r"docs/performance\.md has no <!-- figures:begin -->"):
        figures.rewrite("no section here", {})


def test_the_performance_page_has_a_figures_section_with_every_benchmark():
    assert figures.PAGE == ROOT / "docs" / "performance.md"
    page = figures.PAGE.read_text(encoding="utf-8")
    start, stop = page.find(figures.BEGIN), page.find(figures.END)
    assert 0 <= start < stop
    shown = page[start:stop]
    for name in figures.BENCHMARKS:
        assert f"<!-- figure:{name} -->" in shown and f"$ python bench/{name}.py" in shown


def test_the_readme_holds_no_figures_any_more():
    """One place for the figures: a block left in README.md would go stale unseen."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert figures.BEGIN not in readme and "<!-- figure:" not in readme
