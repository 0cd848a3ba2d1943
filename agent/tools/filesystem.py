"""The tools a subagent works with and how one of its tool calls is executed.

The filesystem tools are bound to one step's ``Workspace``. A tool call's arguments come
from the model, so they are bounded before anything uses them, answered with a tool error
(never an exception), and summarised for the trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import Any, NamedTuple

from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ConfigDict, Field

from agent.errors import ErrorClass, classify, describe
from agent.tools.custom import inject_workspace, output_text
from agent.vfs.entries import PathError, Workspace
from agent.vfs.matching import listed

__all__ = [
    "MAX_ARG_DEPTH",
    "MAX_ARG_VALUES",
    "arguments_problem",
    "defuse",
    "ToolOutcome",
    "execute_tool_call",
    "run_tool_call",
    "invalid_call_error",
    "read_lines",
    "summarise_value",
    "tool_name",
    "vfs_tools",
]

# Tool arguments come from the model. LangGraph serialises what a node returns with msgpack,
# which gives up at a few hundred levels of nesting and on integers beyond 64 bits, and a
# failed write would crash the thread at every resume; so arguments nested deeper than
# MAX_ARG_DEPTH (or holding more than MAX_ARG_VALUES values) are refused as a tool error,
# and the trajectory keeps only a summary bounded by the SUMMARY_* limits.
MAX_ARG_DEPTH = 32
MAX_ARG_VALUES = 100_000
SUMMARY_DEPTH = 3
SUMMARY_ITEMS = 10
SUMMARY_CHARS = 80
MAX_NAME_CHARS = 64
_INT64 = 2**63


class _PathArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Relative POSIX path, e.g. src/app.py")


class _ReadArgs(_PathArgs):
    offset: int = Field(0, ge=0, description="Lines to skip first (0: from the start).")
    limit: int | None = Field(None, ge=1, description="Most lines to read (none: to the end).")


class _GlobArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(description="A glob, e.g. **/*.py, src/*.txt or *.md (any depth).")


class _GrepArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(description="The literal text to find (not a regular expression).")
    path: str | None = Field(None, description="Search only this file or folder.")
    glob: str | None = Field(None, description="Search only files matching this glob.")


class _WriteArgs(_PathArgs):
    content: str = Field(description="The whole new content of the file.")


class _EditArgs(_PathArgs):
    old: str = Field(description="The exact passage to replace; it must occur exactly once.")
    new: str = Field(description="The replacement text.")


class _LsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = Field(None, description="List only this folder's files.")


def vfs_tools(workspace: Workspace) -> list[BaseTool]:
    """The filesystem tools, bound to one subagent's workspace: the thread's files and, when
    the run has one, the workspace folder read in place (``agent.vfs.folder``)."""

    def ls(path: str | None = None) -> str:
        return listed(workspace.listing(path))

    def glob(pattern: str) -> str:
        return listed(workspace.glob(pattern), what="files match")

    def grep(pattern: str, path: str | None = None, glob: str | None = None) -> str:
        return workspace.grep(pattern, path, glob)

    def read_file(path: str, offset: int = 0, limit: int | None = None) -> str:
        return read_lines(workspace.read(path), offset, limit)

    def write_file(path: str, content: str) -> str:
        written = workspace.write(path, content)
        return f"wrote {written} ({_utf8_size(content)} bytes)"

    def edit_file(path: str, old: str, new: str) -> str:
        edited = workspace.edit(path, old, new)
        return f"edited {edited}"

    specs: list[tuple[Callable[..., str], type[BaseModel], str]] = [
        (ls, _LsArgs, "List the files you can read (under a folder, when given)."),
        (glob, _GlobArgs, "List the files whose path matches a glob pattern."),
        (grep, _GrepArgs, "Find the lines that contain a literal text, as path:line: text."),
        (read_file, _ReadArgs, "Read one file (offset and limit: a part of it, in lines)."),
        (write_file, _WriteArgs, "Create or replace a file you may write."),
        (edit_file, _EditArgs, "Replace one exact, unique passage of a file (a targeted patch)."),
    ]
    return [
        StructuredTool.from_function(func=fn, name=fn.__name__, description=doc, args_schema=args)
        for fn, args, doc in specs
    ]


def read_lines(text: str, offset: int = 0, limit: int | None = None) -> str:
    """Lines ``offset`` to ``offset + limit`` of ``text`` (all of it by default).

    Raises:
        PathError: ``offset`` is past the end of the text.
    """
    if offset == 0 and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    if offset and offset >= len(lines):
        msg = f"offset {offset} is past the end: the file has {len(lines)} lines"
        raise PathError(msg)
    return "".join(lines[offset : None if limit is None else offset + limit])


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _children(value: Any) -> Iterable[Any] | None:
    """The values inside a container (a dict's values, a list's items), None for a scalar."""
    if isinstance(value, Mapping):
        return value.values()
    if isinstance(value, list | tuple):
        return value
    return None


def arguments_problem(args: Mapping[str, Any]) -> str | None:
    """Why tool arguments are refused before anything uses them: nested deeper than
    MAX_ARG_DEPTH or holding more than MAX_ARG_VALUES values. Iterative, so arguments nested
    thousands deep cannot exhaust Python's recursion limit here either."""
    stack: list[tuple[Any, int]] = [(args, 1)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_ARG_VALUES:
            return f"they hold more than {MAX_ARG_VALUES} values"
        children = _children(value)
        if children is None:
            continue
        if depth > MAX_ARG_DEPTH:
            return f"they are nested more than {MAX_ARG_DEPTH} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def summarise_value(value: Any, depth: int = 0) -> Any:
    """A bounded, JSON-safe summary of a tool argument for the trajectory: short strings and
    small numbers as they are, long strings as their size, containers cut at SUMMARY_DEPTH
    levels and SUMMARY_ITEMS items, anything else by its type name; never whole contents."""
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else f"<{value.bit_length()}-bit integer>"
    if isinstance(value, str):
        return value if len(value) <= SUMMARY_CHARS else f"<{_utf8_size(value)} bytes>"
    if isinstance(value, Mapping | list | tuple):
        if depth >= SUMMARY_DEPTH:
            kind = "object" if isinstance(value, Mapping) else "list"
            return f"<{kind} of {len(value)} items>"
        more = len(value) - SUMMARY_ITEMS
        if isinstance(value, Mapping):
            summary = {
                _clip(str(key), SUMMARY_CHARS): summarise_value(item, depth + 1)
                for key, item in islice(value.items(), SUMMARY_ITEMS)
            }
            return summary | ({"…": f"<{more} more keys>"} if more > 0 else {})
        items = [summarise_value(item, depth + 1) for item in islice(value, SUMMARY_ITEMS)]
        return items + ([f"<{more} more items>"] if more > 0 else [])
    return f"<{type(value).__name__}>"


def tool_name(call: Mapping[str, Any]) -> str:
    """The name a tool call gives, bounded, for messages and the trajectory ("?" if none)."""
    name = call.get("name")
    return _clip(name if isinstance(name, str) else repr(name), MAX_NAME_CHARS) if name else "?"


class ToolOutcome(NamedTuple):
    """What one tool call gave: the text the model sees, whether it succeeded, and the class
    of the error it raised (``agent.errors``), if it raised one."""

    text: str
    ok: bool
    error_class: str | None = None


async def execute_tool_call(
    call: Mapping[str, Any], tools: Mapping[str, BaseTool], workspace: Workspace | None = None
) -> tuple[str, bool]:
    """:func:`run_tool_call`'s text and success."""
    outcome = await run_tool_call(call, tools, workspace)
    return outcome.text, outcome.ok


async def run_tool_call(
    call: Mapping[str, Any],
    tools: Mapping[str, BaseTool],
    workspace: Workspace | None = None,
    *,
    injected: Mapping[str, Any] | None = None,
) -> ToolOutcome:
    """Run one tool call; errors come back as text for the model, never as an exception.

    Tools are awaited (``ainvoke``), so coroutine-only tools (MCP's) work, and sync tools run
    in a worker thread, off the event loop. A tool that declares a ``workspace`` argument
    gets the step's (``agent.tools.custom``), never one the model made up; ``injected`` adds
    other hidden arguments (the call's idempotency key). Its result reaches the model as
    text (an MCP tool's content blocks joined)."""
    name = call.get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        shown = _clip(repr(name), MAX_NAME_CHARS + 2)
        return ToolOutcome(
            f"invalid_input: unknown tool {shown}; available: {', '.join(tools)}",
            False,
            ErrorClass.INVALID_INPUT.value,
        )
    args = call.get("args")
    if not isinstance(args, Mapping):
        return ToolOutcome(
            f"invalid_input: arguments of {name} must be an object",
            False,
            ErrorClass.INVALID_INPUT.value,
        )
    if problem := arguments_problem(args):
        return ToolOutcome(
            f"invalid_input: the arguments of {name} are refused: {problem}",
            False,
            ErrorClass.INVALID_INPUT.value,
        )
    try:
        call_args = inject_workspace(tool, args, workspace) if workspace else dict(args)
        call_args |= dict(injected or {})
        schema = tool.args_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema.model_validate(call_args)  # langchain skips this for tools without args
        return ToolOutcome(output_text(await tool.ainvoke(call_args)), True)
    except PathError as exc:
        text = str(exc)
        if text.startswith("permission_denied"):
            return ToolOutcome(text, False, ErrorClass.PERMISSION_DENIED.value)
        return ToolOutcome("invalid_input: " + text, False, ErrorClass.INVALID_INPUT.value)
    except GraphBubbleUp:
        raise  # LangGraph's control flow (a tool that calls interrupt()), not a tool error
    except Exception as exc:  # a tool error goes back to the model with its class
        error_class = classify(exc).value
        return ToolOutcome(f"{error_class}: {describe(exc)}", False, error_class)


def defuse(call: ToolCall) -> None:
    """Replace refused arguments by their summary in the conversation the model sees next:
    the provider's client serialises them again (json.dumps), and arguments too deep for
    us are too deep for it."""
    args = call.get("args")
    if isinstance(args, Mapping) and arguments_problem(args):
        call["args"] = summarise_value(args)


def invalid_call_error(call: Mapping[str, Any]) -> str:
    """The tool error for a call whose arguments did not parse (``invalid_tool_calls``):
    the parser's reason, never the arguments themselves, which may be huge."""
    raw = call.get("args")
    reason = _clip(" ".join(str(call.get("error") or "they could not be parsed").split()), 200)
    if isinstance(raw, str):
        try:
            json.loads(raw)
        except json.JSONDecodeError as exc:
            reason = str(exc)
        except RecursionError:
            reason = "they are nested too deeply"
    return (
        f"invalid_input: the arguments of {tool_name(call)} are not valid JSON: {reason}; "
        "call the tool again with one JSON object"
    )
