"""The flags several commands share: the threads database, the run settings, the files.

Each function adds one group to a command's parser; a flag that sets a ``Context`` field
names, in its help, the ``DEEPREFLECT_*`` variable it overrides.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from agent.env_defaults import MCP_CONFIG_VAR as MCP_ENV
from agent.vocabulary import STRUCTURED_OUTPUT_SETTINGS, ProfileChoice, ToolCalling

# flag dest -> Context field, for the flags that set one
CONTEXT_FLAGS = {
    "model": "model",
    "planner_model": "planner_model",
    "subagent_model": "subagent_model",
    "judge_model": "judge_model",
    "reflection_model": "reflection_model",
    "structured_output": "structured_output",
    "profile": "profile",
    "tool_calling": "tool_calling",
    "request_timeout": "request_timeout_s",
    "max_output_tokens": "max_output_tokens",
    "max_revisions": "max_revisions",
    "fresh_drafts": "fresh_drafts",
    "token_budget": "token_budget",
    "time_budget": "time_budget_s",
    "max_parallel": "max_parallel",
    "workload": "workload",
    "planning": "planning",
    "approve_tools": "interrupt_on",
    "tool_result_chars": "tool_result_chars",
    "execute_roles": "execute_roles",
    "execute_timeout": "execute_timeout_s",
    "workdir": "workspace",
}


def db(p: argparse.ArgumentParser, *, json_flag: bool = False) -> None:
    """``--db`` (and, for the commands that print a Result, ``--json``)."""
    p.add_argument(
        "--db",
        help="threads database (default .deepreflect/threads.sqlite or $DEEPREFLECT_DB; "
        "a postgresql:// URL works too)",
    )
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the Result as JSON")


def user_files(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--file",
        dest="files",
        action="append",
        metavar="PATH",
        help="a file or folder the agent gets to read or edit (repeatable); a folder adds its "
        "text files, skipping .git/ and what .gitignore ignores; paths inside the current "
        "folder keep their relative path, others are named from their parent",
    )


def workdir(p: argparse.ArgumentParser) -> None:
    """``--workdir DIR``: the folder the run works in, read in place."""
    _setting(
        p,
        "--workdir",
        "a folder the agent works in, read in place (ls, glob, grep, read_file; its "
        ".gitignore honoured, nothing copied into the thread); what it writes stays in the "
        "thread until `deepreflect apply THREAD`",
        env=True,
        metavar="DIR",
        type=os.path.abspath,  # a thread resumed from elsewhere reads the same folder
    )


def out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="when the run stops, export its done artifacts to this folder")
    p.add_argument(
        "--force", action="store_true", help="with --out: overwrite files that hold other content"
    )


def _setting(group: Any, flag: str, text: str, *, env: bool, **kwargs: Any) -> None:
    """A flag that sets a Context field; with ``env`` (a new run: a resumed thread keeps
    its own settings) its help names the variable it overrides."""
    dest = flag.removeprefix("--").replace("-", "_")
    if env:
        text += f" (${'DEEPREFLECT_' + CONTEXT_FLAGS.get(dest, dest).upper()})"
    group.add_argument(flag, help=text, **kwargs)


def models(p: argparse.ArgumentParser, note: str = "") -> None:
    """The per-role model flags (Context's model fields); ``note`` for a resume."""
    g = p.add_argument_group("models, as provider:name" + note)
    model: dict[str, Any] = {"metavar": "PROVIDER:NAME", "env": not note}
    _setting(g, "--model", "every role's default, e.g. openai:gpt-4.1-mini", **model)
    _setting(g, "--planner-model", "the planner's", **model)
    _setting(g, "--subagent-model", "the subagents'", **model)
    _setting(g, "--judge-model", "the judge of rubric checks and critiques", **model)
    _setting(g, "--reflection-model", "reflection's", **model)
    _setting(
        g,
        "--structured-output",
        "how models return structured answers: auto (learnt per model), or "
        "function_calling, json_schema, json_mode",
        choices=STRUCTURED_OUTPUT_SETTINGS,
        env=not note,
    )
    _setting(
        g,
        "--profile",
        "what the models need beyond the loop: auto (by the model's name), default (the "
        "whole loop), small-local (plans in code, plan repairs, fresh drafts first)",
        choices=[str(c) for c in ProfileChoice],
        env=not note,
    )
    _setting(
        g,
        "--tool-calling",
        "how subagents get their tools: auto (schemas until a model keeps writing its calls "
        "as text), native, text",
        choices=[mode.value for mode in ToolCalling],  # plain strings: argparse shows reprs
        env=not note,
    )
    _setting(
        g, "--request-timeout", "seconds one model request may take", type=float, metavar="S",
        env=not note,
    )  # fmt: skip
    _setting(
        g, "--max-output-tokens", "most tokens one model answer may have (a small model that "
        "rambles stops there)", type=int, metavar="N", env=not note,
    )  # fmt: skip


def budgets(p: argparse.ArgumentParser, note: str = "") -> None:
    g = p.add_argument_group("budgets" + note)
    env = not note
    _setting(g, "--max-revisions", "revisions after a first draft", type=int, metavar="N", env=env)
    _setting(
        g, "--fresh-drafts", "drafts asked anew once revising stops helping", type=int,
        metavar="N", env=env,
    )  # fmt: skip
    _setting(g, "--token-budget", "tokens one user turn may spend", type=int, metavar="N", env=env)
    _setting(g, "--time-budget", "seconds one user turn may take", type=float, metavar="S", env=env)
    _setting(g, "--max-parallel", "subagents at once", type=int, metavar="N", env=env)


def databases(p: argparse.ArgumentParser, note: str = "") -> None:
    p.add_argument(
        "--database",
        action="append",
        metavar="NAME=PATH",
        help="an SQLite file that sql checks may query by NAME (repeat for more); the planner "
        "sees the names, never the paths ($DEEPREFLECT_DATABASES)" + note,
    )


def mcp(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mcp-config",
        metavar="PATH",
        help=f'MCP servers ({{"mcpServers": ...}}) whose tools the subagents get (${MCP_ENV})',
    )
    p.add_argument(
        "--approve-tools",
        metavar="NAMES",
        help="tools whose calls wait for your approval, comma-separated, e.g. "
        "send_email,run_migration ($DEEPREFLECT_INTERRUPT_ON)",
    )
    _setting(
        p, "--tool-result-chars", "a tool result longer than this goes to a scratch file; the "
        "subagent sees its head and the path", type=int, metavar="N", env=True,
    )  # fmt: skip
    _setting(
        p, "--execute-roles", "roles whose subagents run commands in the sandbox with "
        "execute, comma-separated (default coder; empty: none)", metavar="ROLES", env=True,
    )  # fmt: skip
    _setting(
        p, "--execute-timeout", "CPU seconds one execute command may use", type=float, metavar="S",
        env=True,
    )  # fmt: skip
