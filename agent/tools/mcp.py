"""Tools from MCP servers, read from a config file in the usual ``mcpServers`` shape.

    {"mcpServers": {
        "docs": {"command": "python", "args": ["docs_server.py"], "env": {"KEY": "${KEY}"}},
        "search": {"transport": "streamable_http", "url": "https://…/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}, "roles": ["researcher"]}}}

``roles`` (deepreflect's addition) names the subagents that get a server's tools (default:
researcher and coder); ``tool_name_prefix: true`` names its tools ``<server>_<tool>``;
``disabled: true`` skips it. ``${VAR}`` in a string is read from the environment. The tools
come from ``langchain-mcp-adapters`` (the ``mcp`` extra): each call opens its own session,
so they work from any thread and event loop the worker runs them in.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.tools import BaseTool

from agent.env_defaults import MCP_CONFIG_VAR
from agent.errors import ConfigError, describe
from agent.tools.custom import VFS_TOOL_NAMES

__all__ = [
    "DEFAULT_ROLES",
    "ENV_VAR",
    "MCPServer",
    "atools_from_config",
    "read_config",
    "tools_from_config",
]

ENV_VAR = MCP_CONFIG_VAR
"""The environment variable naming the config file (read by ``graphs/deep_agent.py``)."""
DEFAULT_ROLES = ("researcher", "coder")
LOAD_TIMEOUT_S = 60.0
"""How long a server may take to start and list its tools."""
# The transport names clients use, to the adapters' own.
_TRANSPORTS = {
    "stdio": "stdio",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
T = TypeVar("T")


@dataclass(frozen=True)
class MCPServer:
    """One server of the config file, validated."""

    name: str
    connection: dict[str, Any]
    """What ``MultiServerMCPClient`` takes for it (``transport`` and its settings)."""
    roles: tuple[str, ...]
    """The subagents that get its tools."""
    tool_name_prefix: bool = False


def tools_from_config(
    path: str | Path, *, default_roles: Sequence[str] = DEFAULT_ROLES
) -> dict[str, list[BaseTool]]:
    """The tools of every server in the config file at ``path``, by the role that gets them:
    what ``build_graph(tools=...)`` takes. Starts each server once to list its tools; from
    sync code, and from inside a running event loop too (then in a worker thread)."""
    servers = read_config(path, default_roles=default_roles)
    return _run_sync(lambda: _tools_by_role(servers))


async def atools_from_config(
    path: str | Path, *, default_roles: Sequence[str] = DEFAULT_ROLES
) -> dict[str, list[BaseTool]]:
    """:func:`tools_from_config` for async code."""
    return await _tools_by_role(read_config(path, default_roles=default_roles))


def read_config(
    path: str | Path, *, default_roles: Sequence[str] = DEFAULT_ROLES
) -> list[MCPServer]:
    """The enabled servers of the config file, or a ConfigError saying what is wrong."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"MCP config {str(file)!r} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"MCP config {str(file)!r} cannot be read: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"MCP config {str(file)!r} is not valid JSON: {exc}") from exc
    entries = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        msg = f'MCP config {str(file)!r} needs an object "mcpServers": {{name: server, ...}}'
        raise ConfigError(msg)
    servers = []
    for name, entry in entries.items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            continue
        try:
            servers.append(_server(name, entry, tuple(default_roles)))
        except ConfigError as exc:
            raise ConfigError(f"MCP config {str(file)!r}, server {name!r}: {exc}") from exc
    return servers


# -- validation -----------------------------------------------------------------------------


def _server(name: str, entry: Any, default_roles: tuple[str, ...]) -> MCPServer:
    if not name.strip():
        raise ConfigError("a server needs a non-empty name")
    if not isinstance(entry, dict):
        raise ConfigError("a server must be an object")
    given = entry.get("transport", entry.get("type"))
    if given is None:
        given = "stdio" if "command" in entry else "streamable_http" if "url" in entry else None
    if given is None:
        raise ConfigError('needs "command" (a local server) or "url" (a remote one)')
    transport = _TRANSPORTS.get(given) if isinstance(given, str) else None
    if transport is None:
        known = ", ".join(sorted(_TRANSPORTS))
        raise ConfigError(f"unknown transport {given!r}; known: {known}")
    connection: dict[str, Any] = {"transport": transport}
    if transport == "stdio":
        connection["command"] = _string(entry, "command", required=True)
        connection["args"] = _strings(entry.get("args", []), "args")
        if "env" in entry:
            connection["env"] = _string_map(entry["env"], "env")
        if "cwd" in entry:
            connection["cwd"] = _string(entry, "cwd")
    else:
        url = _string(entry, "url", required=True)
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f'"url" must be an http:// or https:// URL, got {url!r}')
        connection["url"] = url
        if "headers" in entry:
            connection["headers"] = _string_map(entry["headers"], "headers")
    roles = entry.get("roles", default_roles)
    if not isinstance(roles, list | tuple) or not roles:
        raise ConfigError('"roles" must be a non-empty list of subagent names')
    for role in roles:
        if not isinstance(role, str) or not role.isidentifier():
            raise ConfigError(f'"roles" must name subagents, got {role!r}')
    prefix = entry.get("tool_name_prefix", False)
    if not isinstance(prefix, bool):
        raise ConfigError('"tool_name_prefix" must be true or false')
    return MCPServer(name, connection, tuple(dict.fromkeys(roles)), prefix)


def _expand(value: str, where: str) -> str:
    """``${VAR}`` (or ``${VAR:-default}``) replaced by the environment's value."""

    def value_of(found: re.Match[str]) -> str:
        name, default = found.group(1), found.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(f"{where} uses ${{{name}}}, which is not set in the environment")

    return _VARIABLE.sub(value_of, value)


def _string(entry: Mapping[str, Any], key: str, *, required: bool = False) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f'"{key}" must be a non-empty string, got {value!r}')
    return _expand(value, f'"{key}"')


def _strings(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f'"{key}" must be a list of strings')
    return [_expand(item, f'"{key}"') for item in value]


def _string_map(value: Any, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f'"{key}" must be an object of strings')
    return {k: _expand(v, f'"{key}.{k}"') for k, v in value.items()}


# -- loading --------------------------------------------------------------------------------


def _client_class() -> Any:
    """``MultiServerMCPClient``, imported by name: the ``mcp`` extra is optional, for mypy
    too."""
    try:
        client = importlib.import_module("langchain_mcp_adapters.client")
    except ImportError as exc:
        msg = f"MCP servers need langchain-mcp-adapters: pip install 'deepreflect[mcp]' ({exc})"
        raise ConfigError(msg) from exc
    return client.MultiServerMCPClient


async def _tools_by_role(servers: Sequence[MCPServer]) -> dict[str, list[BaseTool]]:
    client_class = _client_class() if servers else None
    loaded = await asyncio.gather(
        *(_load(client_class, server) for server in servers), return_exceptions=True
    )
    by_role: dict[str, list[BaseTool]] = {}
    owners: dict[tuple[str, str], str] = {}
    for server, tools in zip(servers, loaded, strict=True):
        if isinstance(tools, BaseException):
            raise tools
        for tool in tools:
            _check_name(server, tool.name)
            for role in server.roles:
                if (other := owners.setdefault((role, tool.name), server.name)) != server.name:
                    msg = (
                        f"MCP servers {other!r} and {server.name!r} both have a tool named "
                        f'{tool.name!r} for role {role!r}; set "tool_name_prefix": true '
                        'on one of them, or give them different "roles"'
                    )
                    raise ConfigError(msg)
                by_role.setdefault(role, []).append(tool)
    return by_role


async def _load(client_class: Any, server: MCPServer) -> list[BaseTool]:
    options: dict[str, Any] = {"tool_name_prefix": server.tool_name_prefix}
    # A tool error comes back as an exception, which the worker answers the model with as a
    # failed call; langchain-mcp-adapters otherwise returns its text as a normal result.
    if "handle_tool_errors" in inspect.signature(client_class).parameters:
        options["handle_tool_errors"] = False
    client = client_class({server.name: server.connection}, **options)
    try:
        tools = await asyncio.wait_for(client.get_tools(), LOAD_TIMEOUT_S)
    except TimeoutError:
        msg = f"MCP server {server.name!r} did not list its tools within {LOAD_TIMEOUT_S:g} s"
        raise ConfigError(msg) from None
    except Exception as exc:
        msg = f"MCP server {server.name!r} did not list its tools: {describe(_leaf(exc))}"
        raise ConfigError(msg) from exc
    return list(tools)


def _check_name(server: MCPServer, name: str) -> None:
    if name in VFS_TOOL_NAMES:
        msg = (
            f"MCP server {server.name!r} has a tool named {name!r}, like a built-in "
            'filesystem tool; set "tool_name_prefix": true on it to name its tools '
            f"{server.name}_<tool>"
        )
        raise ConfigError(msg)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the exception groups anyio's task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to its end from sync code, in a worker thread when this thread
    already runs an event loop (a Jupyter cell, an async server building the graph)."""

    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="deepreflect-mcp") as pool:
        return pool.submit(asyncio.run, main()).result()
