"""What a tool declares about its effects: read-only, idempotent under a key, or with a
receipt that says whether a call happened; an undeclared tool is a side effect whose
unknown outcome only a human can settle. The journal (``agent.store.journal``) and the
tool executor (``agent.tools.execute``) treat each call by its tool's declaration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool

META_KEY = "deepreflect"
"""``tool.metadata[META_KEY]``: what :func:`declare_tool` declared."""
LOCAL_TOOLS = frozenset({"ls", "glob", "grep", "read_file", "write_file", "edit_file"})
"""The filesystem tools act on the step's own workspace, rebuilt when the step re-runs."""

Receipt = Callable[[str], Any]
"""``receipt(key)``: the result of the call made with ``key``, or None if it never happened
(sync or async)."""


@dataclass(frozen=True)
class ToolPolicy:
    """What a tool's calls may do to the world, and so how a repeated call is treated.

    ``read_only``: no side effect; re-run freely, never journaled (search, reads).
    ``idempotent``: a repeat with the same key is harmless (the API deduplicates on it);
    an unknown outcome is re-run with the same key.
    ``receipt``: asks whether a call with a key happened; an unknown outcome asks it first.
    Anything else is a side effect whose unknown outcome only a human can settle.
    """

    read_only: bool = False
    idempotent: bool = False
    receipt: Receipt | None = None

    @property
    def journaled(self) -> bool:
        return not self.read_only


def declare_tool(
    tool: BaseTool,
    *,
    read_only: bool = False,
    idempotent: bool = False,
    receipt: Receipt | None = None,
) -> BaseTool:
    """Declare what ``tool``'s calls do (see :class:`ToolPolicy`); returns ``tool``.

    Undeclared tools are treated as side-effecting and not idempotent: the safe default."""
    if read_only and (idempotent or receipt is not None):
        msg = f"tool {tool.name!r}: a read-only tool needs no idempotency or receipt"
        raise ValueError(msg)
    declared = {"read_only": read_only, "idempotent": idempotent, "receipt": receipt}
    tool.metadata = {**(tool.metadata or {}), META_KEY: declared}
    return tool


def policy_of(tool: BaseTool) -> ToolPolicy:
    """The tool's declared policy; MCP's ``readOnlyHint`` / ``idempotentHint`` annotations
    count as declarations (langchain-mcp-adapters puts them in the tool's metadata)."""
    if tool.name in LOCAL_TOOLS:
        return ToolPolicy(read_only=True)
    meta = tool.metadata or {}
    declared = meta.get(META_KEY)
    if isinstance(declared, Mapping):
        receipt = declared.get("receipt")
        return ToolPolicy(
            read_only=bool(declared.get("read_only")),
            idempotent=bool(declared.get("idempotent")),
            receipt=receipt if callable(receipt) else None,
        )
    return ToolPolicy(
        read_only=meta.get("readOnlyHint") is True,
        idempotent=meta.get("idempotentHint") is True,
    )
