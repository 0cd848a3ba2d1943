"""The pictures of the graph (the README's and docs/architecture.md's) are what the compiled
graph draws (issue 24: the graph was hand-drawn, and drifted). Regenerate it with
``python -c "from agent import build_graph; print(build_graph().get_graph().draw_mermaid())"``.
"""

from __future__ import annotations

import importlib.util
import re

from agent import build_graph
from tests.langgraph_server import ROOT


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_the_png_was_drawn_from_the_compiled_graph():
    """docs/images/graph.png keeps the sha256 of the Mermaid text it was drawn from; a
    picture drawn before the graph changed is stale (redraw: bench/graph_picture.py)."""
    picture = _bench("graph_picture")
    png = (ROOT / "docs" / "images" / "graph.png").read_bytes()
    drawn_from = picture.text_chunks(png).get(picture.KEY, b"").decode()
    assert drawn_from == picture.source_digest(build_graph().get_graph().draw_mermaid())


def test_the_png_stamp_is_read_back_and_a_changed_graph_is_told_apart():
    picture = _bench("graph_picture")
    png = (ROOT / "docs" / "images" / "graph.png").read_bytes()
    stamped = picture.with_text_chunk(png, b"probe", "x")
    assert picture.text_chunks(stamped)[b"probe"] == b"x"
    assert picture.source_digest("graph TD;\n a --> b") != picture.source_digest("graph TD;")
