"""The offline search tool of the citations goal, served over MCP (stdio).

    python bench/goals/search_server.py CORPUS.json [LOG.jsonl]

``search(query)`` is deepreflect's own ``local_search_tool`` over the corpus (URL -> text):
no network. Every answer is appended to the log as one JSON line, so the grader checks the
report's citations against what the search really returned, not against the whole corpus.
``deepreflect run --mcp-config`` starts it (``bench/goals.py`` writes that config).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP

from agent.tools.search import local_search_tool


def main(corpus_path: str, log_path: str | None = None) -> None:
    corpus = json.loads(Path(corpus_path).read_text(encoding="utf-8"))
    tool = local_search_tool(corpus)
    server = FastMCP("goals-search", log_level="WARNING")

    @server.tool()
    def search(query: str) -> str:
        """Search the documents for a query; returns the matching ones, each with its
        source URL. Cite only those URLs."""
        answer = str(tool.invoke({"query": query}))
        if log_path:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"query": query, "result": answer}) + "\n")
        return answer

    server.run()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
