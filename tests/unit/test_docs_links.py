"""The README and docs/ link to each other by relative paths and heading anchors: every link
resolves, the table of contents lists every page and the README links to each (issue 24)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, and a
    ``-1``, ``-2`` suffix on repeats; fenced blocks hold no headings."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", prose, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(page: Path) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)  # code spans hold no links
    return [t for t in LINK.findall(prose) if not re.match(r"[a-z][\w+.-]*:", t)]


def test_the_anchor_rule_matches_githubs():
    text = "# A\n## `langgraph dev`, Studio and chat UIs\n## Install\n## Install\n```\n# no\n```\n"
    assert anchors(text) == {"a", "langgraph-dev-studio-and-chat-uis", "install", "install-1"}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, broken


def test_the_table_of_contents_lists_every_page_and_the_readme_links_each():
    index = DOCS / "README.md"
    listed = {t.partition("#")[0] for t in relative_links(index)}
    from_readme = {t.partition("#")[0] for t in relative_links(ROOT / "README.md")}
    for page in DOCS.glob("*.md"):
        if page != index:
            assert page.name in listed, f"docs/README.md does not list {page.name}"
            assert f"docs/{page.name}" in from_readme, f"README.md does not link {page.name}"
    assert "docs/README.md" in from_readme


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 320, f"README.md has {lines} lines; move the detail to docs/"


def _extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return set(tomllib.load(file)["project"]["optional-dependencies"])


def test_every_extra_a_page_installs_exists():
    named = {
        extra
        for page in PAGES
        for group in re.findall(r"(?:\.|deepreflect)\[([\w,-]+)\]", page.read_text())
        for extra in group.split(",")
    }
    assert named and not named - _extras(), sorted(named - _extras())


def test_the_readme_names_every_extra_a_user_may_pick():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^Extras: (.*?)\n\n", readme, re.M | re.S)
    assert found, "README.md has no 'Extras:' paragraph"
    missing = _extras() - {"test", "dev"} - set(re.findall(r"`([\w-]+)`", found[1]))
    assert not missing, f"README.md's Extras paragraph does not name {sorted(missing)}"
