"""The run settings the command line gives: Context fields, databases, MCP tools, files.

Each is checked before any work starts, so that a bad flag or ``DEEPREFLECT_*`` value is
a usage error (exit 2) that names it, not a run that fails halfway.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.cli.flags import CONTEXT_FLAGS, MCP_ENV
from agent.cli.output import warn

if TYPE_CHECKING:
    from agent.context import Context


def _context_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The Context fields the command line sets (a flag wins over DEEPREFLECT_*)."""
    overrides = {
        field: getattr(args, dest)
        for dest, field in CONTEXT_FLAGS.items()
        if getattr(args, dest, None) is not None
    }
    if getattr(args, "database", None):
        overrides["databases"] = _declared_databases(args.database)
    return overrides


def _declared_databases(flags: Sequence[str]) -> str:
    """``--database NAME=PATH`` flags as ``Context.databases`` text, each file checked and
    its path made absolute now (a usage error naming the flag otherwise)."""
    from agent.checks.databases import DatabaseError, declare_databases, format_databases
    from agent.errors import ConfigError

    given: dict[str, str] = {}
    try:
        for flag in flags:
            name, equals, path = flag.partition("=")
            if not equals or not name.strip() or not path.strip():
                msg = f"{flag!r} is not NAME=PATH"
                raise DatabaseError(msg)
            if name.strip() in given:
                msg = f"database {name.strip()!r} is given twice"
                raise DatabaseError(msg)
            given[name.strip()] = path.strip()
        return format_databases(declare_databases(given))
    except DatabaseError as exc:
        msg = f"--database: {exc}"
        raise ConfigError(msg) from exc


def with_flags(ctx: Context, args: argparse.Namespace) -> Context:
    """``ctx`` with the command line's settings; set after construction so that a flag
    equal to a field's default still wins over the environment."""
    for name, value in _context_overrides(args).items():
        setattr(ctx, name, value)
    return ctx


def check_models(ctx: Context) -> None:
    """Fail before any work when the configuration or a model string cannot be used
    (exit code 2): a bad ``DEEPREFLECT_*`` value is named here too."""
    from agent.errors import ConfigError
    from agent.models.factory import load_model

    if problems := ctx.validate():
        msg = "; ".join(problems)
        raise ConfigError(msg)
    roles = (
        ctx.model,
        ctx.planner_model,
        ctx.subagent_model,
        ctx.judge_model,
        ctx.reflection_model,
    )
    for spec in set(roles) - {None}:
        load_model(spec)  # type: ignore[arg-type]


def mcp_tools(args: argparse.Namespace) -> Mapping[str, Sequence[Any]] | None:
    """``--mcp-config`` / ``$DEEPREFLECT_MCP_CONFIG``: its servers' tools by role."""
    path = getattr(args, "mcp_config", None) or os.environ.get(MCP_ENV)
    if not path:
        return None
    from agent.tools.mcp import tools_from_config

    return tools_from_config(path)


def loaded_files(args: argparse.Namespace) -> dict[str, str] | None:
    """``--file PATH ...`` read from disk (a usage error, exit 2, names a bad one); what a
    folder held but was left out is said on stderr."""
    if not getattr(args, "files", None):
        return None
    from agent.vfs.host_disk import load_files

    skipped: list[str] = []
    files = load_files(args.files, skipped=skipped)
    for note in skipped:
        warn(f"--file: skipped {note}")
    return files
