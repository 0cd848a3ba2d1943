"""Tools as users write them: ``BaseTool``s, ``@tool`` functions, plain callables (sync or
async) and coroutine-only tools (every MCP tool), checked once when the graph is built.

A tool that needs the step's workspace declares a parameter ``workspace`` annotated
``Annotated[Workspace, InjectedToolArg]`` (a plain callable may just annotate it
``Workspace``): LangChain hides it from the model's schema and the worker passes the step's
:class:`~agent.vfs.entries.Workspace` in (:func:`inject_workspace`), so the tool writes through
``workspace.write(path, content)`` within the step's write scope.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from agent.errors import ConfigError
from agent.store.journal import IDEMPOTENCY_KEY_ARG
from agent.vfs.entries import Workspace

__all__ = [
    "VFS_TOOL_NAMES",
    "WORKSPACE_ARG",
    "as_tool",
    "coerce_tools",
    "declares_injected",
    "declares_workspace",
    "inject_workspace",
    "output_text",
]

WORKSPACE_ARG = "workspace"
INJECTED = (WORKSPACE_ARG, IDEMPOTENCY_KEY_ARG)
"""The hidden arguments deepreflect fills in (``agent.store.journal`` for the key)."""
"""The parameter through which a tool receives the step's ``Workspace``."""
VFS_TOOL_NAMES = frozenset({"ls", "glob", "grep", "read_file", "write_file", "edit_file"})
"""The filesystem tools every subagent has (``agent.tools.filesystem.vfs_tools``); no tool may reuse
their names."""
# What OpenAI's and Anthropic's APIs accept as a tool name (Anthropic allows 128 characters):
# a bad name is a configuration error at build time rather than a 400 in the middle of a run.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INJECTED_WORKSPACE = Annotated[Workspace, InjectedToolArg]


def as_tool(obj: Any) -> BaseTool:
    """``obj`` as a LangChain tool a subagent can bind and call, or a ConfigError saying why
    it cannot be one.

    ``BaseTool``s (``@tool`` functions and MCP tools are ones) are used as they are; a plain
    function or coroutine function is wrapped with ``StructuredTool.from_function``, its
    name, signature and docstring becoming the tool's name, arguments and description.
    """
    if isinstance(obj, BaseTool):
        tool = obj
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        tool = _wrap_callable(obj)
    else:
        kind = "a class" if isinstance(obj, type) else type(obj).__name__
        msg = (
            f"cannot use {_shown(obj)} ({kind}) as a tool: give a BaseTool, an @tool function, "
            "or a named function (def or async def)"
        )
        raise ConfigError(msg)
    _check_tool(tool)
    return tool


def coerce_tools(role: str, tools: Iterable[Any]) -> list[BaseTool]:
    """Every tool of ``role`` as a ``BaseTool``, with names the role can tell apart: unique,
    and none of the filesystem tools' names. Errors name the role."""
    if isinstance(tools, str | bytes | Mapping | BaseTool) or not isinstance(tools, Iterable):
        msg = f"tools of role {role!r} must be a list of tools, got {_shown(tools)}"
        raise ConfigError(msg)
    coerced: list[BaseTool] = []
    seen: set[str] = set()
    for item in tools:
        try:
            tool = as_tool(item)
        except ConfigError as exc:
            raise ConfigError(f"role {role!r}: {exc}") from exc
        if tool.name in VFS_TOOL_NAMES:
            msg = (
                f"role {role!r}: tool {tool.name!r} clashes with a built-in filesystem tool "
                f"({', '.join(sorted(VFS_TOOL_NAMES))}); give it another name"
            )
            raise ConfigError(msg)
        if tool.name in seen:
            msg = f"role {role!r} has two tools named {tool.name!r}; tool names must be unique"
            raise ConfigError(msg)
        seen.add(tool.name)
        coerced.append(tool)
    return coerced


def declares_workspace(tool: BaseTool) -> bool:
    """Whether ``tool`` takes the step's workspace: a ``workspace`` argument hidden from the
    model (``InjectedToolArg``). A model-visible argument of that name (an MCP server's
    Slack workspace, say) is the tool's own business."""
    return declares_injected(tool, WORKSPACE_ARG)


def declares_injected(tool: BaseTool, arg: str) -> bool:
    """Whether ``tool`` has a parameter ``arg`` hidden from the model (``InjectedToolArg``),
    which deepreflect fills in: the step's workspace, a call's idempotency key."""
    schema = tool.args_schema
    if isinstance(schema, dict):  # JSON-schema tools (MCP) cannot declare injected arguments
        return False
    fields = _fields(tool.get_input_schema())
    return arg in fields and arg not in _fields(tool.tool_call_schema)


def inject_workspace(
    tool: BaseTool, args: Mapping[str, Any], workspace: Workspace
) -> dict[str, Any]:
    """The arguments to call ``tool`` with: the model's, plus the step's ``workspace`` when
    the tool declares it, in place of any ``workspace`` the model tried to supply. A new
    dict: the model's arguments (which the trajectory records) are left as they were."""
    call_args = dict(args)
    if declares_workspace(tool):
        call_args[WORKSPACE_ARG] = workspace
    return call_args


def output_text(output: Any) -> str:
    """A tool's result as the text of its tool message: LangChain content blocks (what MCP
    tools return) joined by their text, anything else ``str``-ed."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and output:
        parts = [_block_text(block) for block in output]
        if all(part is not None for part in parts):
            return "\n".join(part for part in parts if part is not None)
    return str(output)


def _block_text(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else None
    return None


# -- wrapping plain callables --------------------------------------------------------------


def _wrap_callable(func: Callable[..., Any]) -> BaseTool:
    name = getattr(func, "__name__", "")
    if not name.isidentifier():  # "<lambda>"
        msg = (
            f"cannot use {_shown(func)} as a tool: a lambda has no name to call it by; "
            "define a named function with a docstring, or build a StructuredTool"
        )
        raise ConfigError(msg)
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        msg = f"cannot use generator function {name!r} as a tool: return the result instead"
        raise ConfigError(msg)
    func = _workspace_injected(func)
    doc = inspect.getdoc(func)
    description = None if doc else name.replace("_", " ").strip().capitalize() + "."
    is_async = inspect.iscoroutinefunction(func)
    try:
        return StructuredTool.from_function(
            func=None if is_async else func,
            coroutine=func if is_async else None,
            name=name,
            description=description,
            parse_docstring=bool(doc),
            error_on_invalid_docstring=False,
        )
    except Exception as exc:  # an unusable signature, an annotation pydantic cannot use
        msg = f"cannot use function {name!r} as a tool: {_first_line(exc)}"
        raise ConfigError(msg) from exc


def _workspace_injected(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, or a stand-in whose ``workspace: Workspace`` parameter is marked injected,
    so a plain callable need not spell out ``Annotated[Workspace, InjectedToolArg]``."""
    hints = _type_hints(func)
    if hints.get(WORKSPACE_ARG) is not Workspace:
        return func
    signature = inspect.signature(func)
    parameters = [
        p.replace(annotation=_INJECTED_WORKSPACE) if p.name == WORKSPACE_ARG else p
        for p in signature.parameters.values()
    ]

    async def async_stand_in(*args: Any, **kwargs: Any) -> Any:
        return await func(*args, **kwargs)

    def sync_stand_in(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    stand_in: Callable[..., Any] = (
        async_stand_in if inspect.iscoroutinefunction(func) else sync_stand_in
    )
    # Not functools.wraps: whatever follows __wrapped__ would find the plain annotation.
    stand_in.__name__ = stand_in.__qualname__ = func.__name__
    stand_in.__doc__ = func.__doc__
    stand_in.__module__ = func.__module__
    stand_in.__annotations__ = {**hints, WORKSPACE_ARG: _INJECTED_WORKSPACE}
    stand_in.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return stand_in


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # a forward reference that does not resolve: nothing to rewrite
        return {}


# -- checks every tool passes ---------------------------------------------------------------


def _check_tool(tool: BaseTool) -> None:
    """A name providers accept, a schema the model can be given, and no injected argument
    deepreflect would not know how to supply."""
    name = tool.name
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        msg = (
            f"tool name {name!r} is not usable: providers accept 1 to 64 letters, digits, "
            "'_' or '-'"
        )
        raise ConfigError(msg)
    schema = tool.args_schema
    if not isinstance(schema, dict):
        full = _fields(tool.get_input_schema())
        visible = _fields(tool.tool_call_schema)
        if WORKSPACE_ARG in visible and _is_workspace(visible[WORKSPACE_ARG]):
            msg = (
                f"tool {name!r}: annotate its workspace parameter "
                "Annotated[Workspace, InjectedToolArg] so that the model does not see it"
            )
            raise ConfigError(msg)
        unknown = [
            arg
            for arg, info in full.items()
            if arg not in visible and arg not in INJECTED and info.is_required()
        ]
        if unknown:
            msg = (
                f"tool {name!r} needs injected argument(s) {', '.join(map(repr, unknown))}; "
                f"deepreflect injects only {WORKSPACE_ARG!r} (the step's Workspace) and "
                f"{IDEMPOTENCY_KEY_ARG!r} (the call's idempotency key)"
            )
            raise ConfigError(msg)
        misnamed = [arg for arg, info in visible.items() if _is_workspace(info)]
        if misnamed:
            msg = (
                f"tool {name!r}: name its Workspace parameter {WORKSPACE_ARG!r} "
                f"(not {misnamed[0]!r}) and annotate it Annotated[Workspace, InjectedToolArg]"
            )
            raise ConfigError(msg)
    try:
        convert_to_openai_tool(tool)  # what bind_tools sends; fails on a non-JSON argument type
    except Exception as exc:
        msg = f"tool {name!r} has arguments a model cannot be told about: {_first_line(exc)}"
        raise ConfigError(msg) from exc


def _fields(schema: Any) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return dict(schema.model_fields)
    return {}


def _is_workspace(info: Any) -> bool:
    annotation = getattr(info, "annotation", None)
    return annotation is Workspace or Workspace in typing.get_args(annotation)


def _first_line(exc: BaseException) -> str:
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _shown(obj: Any, limit: int = 80) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[: limit - 1] + "…"
