"""The pictures of the graph (the README's and docs/architecture.md's) are what the compiled
graph draws (issue 24: the graph was hand-drawn, and drifted). Regenerate it with
``python -c "from agent import build_graph; print(build_graph().get_graph().draw_mermaid())"``.
"""

from __future__ import annotations

import re

from agent import build_graph
from tests.langgraph_server import ROOT


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```", text, re.M | re.S)


def test_the_architecture_page_draws_the_same_compiled_graph():
    blocks = mermaid_blocks((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert blocks, "docs/architecture.md should draw the graph in a ```mermaid block"
    drawn = build_graph().get_graph().draw_mermaid()
    assert [b.strip() for b in blocks] == [drawn.strip()], "docs/architecture.md's graph is stale"


def test_the_readme_draws_the_compiled_graph():
    blocks = mermaid_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, f"README.md should hold one ```mermaid block, holds {len(blocks)}"
    drawn = build_graph().get_graph().draw_mermaid()
    assert blocks[0].strip() == drawn.strip(), f"README.md's graph is stale; it should be:\n{drawn}"


def test_the_picture_shows_every_node_and_every_route():
    """The comparison above means something only if the drawing names what the code runs."""
    graph = build_graph().get_graph()
    (block,) = mermaid_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    for node in ("planner", "subagent", "reflection", "escalate", "finalize"):
        assert node in graph.nodes and re.search(rf"^\s*{node}\(", block, re.M), node
    for edge in graph.edges:
        arrow = "-.->" if edge.conditional else "-->"
        assert f"{edge.source} {arrow} {edge.target};" in block, edge
