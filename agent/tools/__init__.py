"""A subagent's tools: the filesystem tools, how one call runs (approvals, the journal),
calls written as text, the user's own tools, MCP servers and search."""
