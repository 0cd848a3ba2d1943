"""A real MCP server for the tests, written with the ``mcp`` package's FastMCP.

    python tests/mcp_server.py                # stdio
    python tests/mcp_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

``lookup(term)`` returns a fixed fact, ``broken`` always fails. Each call of a tool appends
its name to the file that ``MCP_TEST_CALLS`` names, so a test can count the calls even though
every call runs in a server process of its own (langchain-mcp-adapters opens a session per
call).
"""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import FastMCP

FACTS = {
    "deepreflect": "deepreflect's reflection loop was measured at 0.731 convergence",
    "mcp": "MCP stands for Model Context Protocol",
}

server = FastMCP("deepreflect-test", log_level="WARNING")


def _record(name: str) -> None:
    path = os.environ.get("MCP_TEST_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as calls:
            calls.write(name + "\n")


@server.tool()
def lookup(term: str) -> str:
    """Look up the one fact this server knows about a term."""
    _record("lookup")
    return FACTS.get(term.lower(), f"no fact about {term}")


@server.tool()
def broken(reason: str) -> str:
    """Always fails, with the reason given."""
    _record("broken")
    raise ValueError(f"broken on purpose: {reason}")


def read_file(path: str) -> str:
    """A tool named like deepreflect's own read_file (served when MCP_TEST_CLASH is set)."""
    _record("read_file")
    return f"server copy of {path}"


if os.environ.get("MCP_TEST_CLASH"):
    server.tool()(read_file)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run(transport="streamable-http")
    else:
        server.run()
