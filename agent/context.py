"""Run-time configuration: what Studio shows as the assistant's form, and what the CLI sets.

A field left at its default takes ``DEEPREFLECT_<FIELD>`` (:mod:`agent.env_defaults`);
``Context.validate`` checks each value against its field's type (:mod:`agent.field_types`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from agent.env_defaults import apply_environment, parsed, variable
from agent.field_types import field_types, is_int, type_problem
from agent.limits import FRESH_DRAFTS, MAX_REVISIONS, TOOL_RESULT_CHARS
from agent.vocabulary import STRUCTURED_OUTPUT_SETTINGS, Planning, ProfileChoice, ToolCalling

# the depth cap follows the workload; 10 is the ceiling for any of them.
DEPTH_CAP_BY_WORKLOAD: dict[str, int] = {
    "qa": 2,
    "research": 3,
    "report": 4,
    "coding": 5,
    "bughunt": 7,
}
MAX_DEPTH_CAP = 10
MEMORY_SCOPES = ("user", "assistant", "off")
MIN_TOOL_RESULT_CHARS = 500  # below this a result's head could not say where the rest is


@dataclass(kw_only=True)
class Context:
    """Configuration of one deepreflect run; every field is described for Studio."""

    model: str = field(
        default="openai:gpt-4.1-mini",
        metadata={
            "description": "Default model for every role, as provider:name "
            "(openai:<name> or scripted:<scenario>)."
        },
    )
    planner_model: str | None = field(
        default=None,
        metadata={"description": "Model for the planner; None uses `model`."},
    )
    subagent_model: str | None = field(
        default=None,
        metadata={"description": "Model for the subagents; None uses `model`."},
    )
    judge_model: str | None = field(
        default=None,
        metadata={"description": "Judge model for rubric checks and critiques; None uses `model`."},
    )
    reflection_model: str | None = field(
        default=None,
        metadata={"description": "Model for reflection's decisions; None uses `model`."},
    )
    workload: str = field(
        default="report",
        metadata={
            "description": "qa, research, report, coding or bughunt: sets the default "
            "reflection depth cap (2, 3, 4, 5, 7)."
        },
    )
    max_reflection_depth: int | None = field(
        default=None,
        metadata={
            "description": "Model-consulted reflections per user turn before a forced "
            "escalation; None follows `workload`. Never above 10."
        },
    )
    max_revisions: int = field(
        default=MAX_REVISIONS,
        metadata={"description": "Revisions a subagent may make after its first draft."},
    )
    fresh_drafts: int = field(
        default=FRESH_DRAFTS,
        metadata={
            "description": "Fresh drafts (the step asked anew, sampled) a subagent may try "
            "once a revision repeats a failed draft or gains less than min_gain; 0: none."
        },
    )
    min_gain: float = field(
        default=0.05,
        metadata={
            "description": "A revision gaining less than this on two consecutive rounds "
            "counts as stalled."
        },
    )
    token_budget: int = field(
        default=200_000,
        metadata={"description": "Tokens (all roles) one user turn may spend before escalating."},
    )
    time_budget_s: float = field(
        default=900.0,
        metadata={"description": "Wall-clock seconds one user turn may take before escalating."},
    )
    max_steps: int = field(
        default=60,
        metadata={"description": "Planner rounds (dispatches) one user turn may take."},
    )
    max_parallel: int = field(
        default=4,
        metadata={"description": "Subagents run at once in one round."},
    )
    max_plan_steps: int = field(
        default=50,
        metadata={"description": "Largest plan the planner may return."},
    )
    strict_end: bool = field(
        default=True,
        metadata={
            "description": "`end` needs every expected artifact done, not just one "
            "(otherwise it is overridden to replan)."
        },
    )
    request_timeout_s: float = field(
        default=120.0,
        metadata={
            "description": "Seconds one model request may take before it fails as a timeout "
            "(and is retried as a transient error)."
        },
    )
    max_output_tokens: int | None = field(
        default=None,
        metadata={
            "description": "Most tokens one model answer may have, for every role of a model "
            "named by string (none: the provider's default). A small local model can ramble "
            "for thousands of tokens (the 1.5B once did in a plan); a cap ends that answer."
        },
    )
    chat_progress: bool = field(
        default=True,
        metadata={
            "description": "Tell the run's progress in the chat: the plan, each check's verdict "
            "with its evidence, each decision, one short tagged AI message each, kept in the "
            "thread (false: only the stream's custom events and the final message)."
        },
    )
    planning: str = field(
        default=Planning.UPFRONT.value,
        metadata={
            "description": "upfront: plan every step at once; rolling: commit only to the steps "
            "that can run now and plan the next segment after reflection has seen their "
            "results (for goals whose later steps depend on what earlier ones find)."
        },
    )
    interrupt_on: str | None = field(
        default=None,
        metadata={
            "description": "Tools whose calls wait for a human's approval before they run, "
            "comma-separated (e.g. send_email,run_migration); the human approves, edits the "
            "arguments or rejects. Adds to build_graph(interrupt_on=...)."
        },
    )
    databases: str | None = field(
        default=None,
        metadata={
            "description": "SQLite databases that sql checks may query, as name=path pairs, "
            "comma-separated (e.g. chinook=/data/chinook.db); the planner sees the names, "
            "never the paths, and a check opens no other file of the host. Python callers may "
            "pass {name: path}. Adds to build_graph(databases=...)."
        },
    )
    tool_calling: str = field(
        default="auto",
        metadata={
            "description": "How subagents get their tools: auto (as tool schemas, until a "
            "model keeps answering with calls written as text, as small local models do; "
            "then in the prompt only), native (always as schemas) or text (never)."
        },
    )
    profile: str = field(
        default="auto",
        metadata={
            "description": "Model profile: auto (by the model's name: small local models get "
            "small-local), default (the whole loop: the planner plans, its checks run as "
            "written, the judge reviews prose, reflection asks its model) or small-local "
            "(plans made in code when the goal names its files, plan repairs, fresh drafts "
            "first, data files printed by a program)."
        },
    )
    tool_result_chars: int = field(
        default=TOOL_RESULT_CHARS,
        metadata={
            "description": "A tool result longer than this many characters goes to a scratch "
            "file (work/<step_id>/tool_results/); the subagent sees its first lines and the "
            "path, and reads on with read_file(path, offset, limit)."
        },
    )
    memory: str = field(
        default="user",
        metadata={
            "description": "Whose memories a thread reads and writes (files under memories/, "
            "kept in the store across threads): user (the server's authenticated user, else "
            "user_id), assistant (shared by every thread of the assistant) or off."
        },
    )
    user_id: str | None = field(
        default=None,
        metadata={
            "description": "Whose memories these are when memory=user and the server has no "
            "authenticated user (the CLI uses your login name); None: no memories."
        },
    )
    execute_roles: str = field(
        default="coder",
        metadata={
            "description": "Roles whose subagents get the execute tool, comma-separated: they "
            "run python and pytest commands in the sandbox on their step's files and keep "
            "what the commands write within their write scope (empty: no role). Only where a "
            "kernel-enforced sandbox works, or DEEPREFLECT_SANDBOX=process opts in."
        },
    )
    execute_timeout_s: float = field(
        default=60.0,
        metadata={
            "description": "CPU seconds one execute command may use, summed over its "
            "processes, before it is killed; it is also stopped after five times that of "
            "wall-clock time (a loaded machine slows a command without failing it)."
        },
    )
    workspace: str | None = field(
        default=None,
        metadata={
            "description": "A folder on this machine the agent works in, read in place: its "
            "files are listed, globbed, grepped and read where they are (its .gitignore "
            "honoured, nothing copied into the thread); what steps write stays in the thread "
            "until `deepreflect apply THREAD` writes it back. None: build_graph(workspace=...) "
            "if given, else no folder."
        },
    )
    structured_output: str = field(
        default="auto",
        metadata={
            "description": "How models return structured answers (plans, decisions): auto "
            "(learn per model: tool calling, then json_schema, then JSON read from the reply's "
            "text, as small local models need), function_calling, json_schema or json_mode."
        },
    )

    def __post_init__(self) -> None:
        """Fields left at their default take ``DEEPREFLECT_<FIELD>`` from the environment
        (so ``langgraph.json``'s ``env`` or a shell sets the served graph's and the CLI's
        defaults)."""
        apply_environment(self)
        _absolute_databases(self)
        _absolute_workspace(self)

    def approval_tools(self) -> list[str]:
        """The tool names of ``interrupt_on`` (none when it is not a string)."""
        if not isinstance(self.interrupt_on, str):
            return []
        return [name.strip() for name in self.interrupt_on.split(",") if name.strip()]

    def execute_role_names(self) -> list[str]:
        """The roles of ``execute_roles`` (none when it is not a string)."""
        if not isinstance(self.execute_roles, str):
            return []
        return [name.strip() for name in self.execute_roles.split(",") if name.strip()]

    def declared_databases(self) -> dict[str, str]:
        """``databases`` as ``{name: absolute path}``; never raises (``validate`` names what
        is wrong): text that does not parse declares nothing."""
        from agent.checks.databases import DatabaseError, absolute, parse_databases

        if not isinstance(self.databases, str):
            return {}
        try:
            return {name: absolute(path) for name, path in parse_databases(self.databases).items()}
        except DatabaseError:
            return {}

    def depth_cap(self) -> int:
        """The reflection depth cap in force: explicit, else by workload, never above 10.

        Never raises: a value of the wrong type (which ``validate`` reports) falls back to
        the workload's cap, and an unknown workload to ``report``'s.
        """
        cap = self.max_reflection_depth
        if not is_int(cap):
            workload = self.workload if isinstance(self.workload, str) else "report"
            cap = DEPTH_CAP_BY_WORKLOAD.get(workload, DEPTH_CAP_BY_WORKLOAD["report"])
        return max(1, min(cap, MAX_DEPTH_CAP))

    def validate(self) -> list[str]:
        """Configuration errors a caller should see before any model is called, each naming
        its field. Types first (Studio, the SDK and ``Context(**dict)`` pass values through
        unchecked), then ranges, only for the fields whose type is right.

        Every node of every round asks, so values found valid once are remembered."""
        values = _values_key(self)
        if values is not None and values in _VALID:
            return []
        errors: list[tuple[str, str]] = []
        typed: set[str] = set()
        for name, hint in field_types(Context).items():
            problem = type_problem(getattr(self, name), hint)
            if problem is None:
                typed.add(name)
            else:
                errors.append((name, f"{name} must be {problem}"))
        errors += self._range_errors(typed)
        if not errors and values is not None and len(_VALID) < _VALID_MAX:
            _VALID.add(values)
        return [message + self._source(name) for name, message in errors]

    def _source(self, name: str) -> str:
        """`` (from $DEEPREFLECT_X)`` when the field's value came from the environment."""
        raw = os.environ.get(variable(name))
        if raw is None:
            return ""
        value = parsed(raw, field_types(Context)[name])
        if name == "databases" and isinstance(value, str):
            value = _absolute_text(value)  # as __post_init__ stored it
        if value != getattr(self, name):
            return ""
        return f" (from ${variable(name)})"

    def _range_errors(self, typed: set[str]) -> list[tuple[str, str]]:
        """Values of the right type that are still impossible, each with its field."""
        from agent.plan.steps import MAX_PLAN_STEPS

        errors = []
        if "workload" in typed and self.workload not in DEPTH_CAP_BY_WORKLOAD:
            known = ", ".join(DEPTH_CAP_BY_WORKLOAD)
            msg = f"unknown workload {self.workload!r}; expected one of {known}"
            errors.append(("workload", msg))
        counts = ("max_revisions", "fresh_drafts", "max_steps", "max_parallel", "max_plan_steps")
        for name in counts:
            least = 0 if name in ("max_revisions", "fresh_drafts") else 1
            if name in typed and getattr(self, name) < least:
                bound = "0 or more" if least == 0 else "positive"
                errors.append((name, f"{name} must be {bound}, got {getattr(self, name)}"))
        if "max_plan_steps" in typed and self.max_plan_steps > MAX_PLAN_STEPS:
            msg = f"max_plan_steps must be at most {MAX_PLAN_STEPS}, got {self.max_plan_steps}"
            errors.append(("max_plan_steps", msg))
        if "tool_result_chars" in typed and self.tool_result_chars < MIN_TOOL_RESULT_CHARS:
            msg = (
                f"tool_result_chars must be at least {MIN_TOOL_RESULT_CHARS}, "
                f"got {self.tool_result_chars}"
            )
            errors.append(("tool_result_chars", msg))
        if "max_output_tokens" in typed and self.max_output_tokens is not None:
            if self.max_output_tokens < 1:
                msg = f"max_output_tokens must be positive, got {self.max_output_tokens}"
                errors.append(("max_output_tokens", msg))
        for name in ("token_budget", "time_budget_s", "request_timeout_s", "execute_timeout_s"):
            if name in typed and getattr(self, name) <= 0:
                errors.append((name, f"{name} must be positive, got {getattr(self, name)}"))
        if "planning" in typed and self.planning not in PLANNING:
            msg = f"unknown planning {self.planning!r}; expected one of {', '.join(PLANNING)}"
            errors.append(("planning", msg))
        if "memory" in typed and self.memory not in MEMORY_SCOPES:
            msg = f"unknown memory {self.memory!r}; expected one of {', '.join(MEMORY_SCOPES)}"
            errors.append(("memory", msg))
        if "tool_calling" in typed and self.tool_calling not in tuple(ToolCalling):
            known = ", ".join(ToolCalling)
            msg = f"unknown tool_calling {self.tool_calling!r}; expected one of {known}"
            errors.append(("tool_calling", msg))
        if "profile" in typed and self.profile not in [str(c) for c in ProfileChoice]:
            known = ", ".join([str(c) for c in ProfileChoice])
            errors.append(("profile", f"unknown profile {self.profile!r}; expected one of {known}"))
        settings = STRUCTURED_OUTPUT_SETTINGS
        if "structured_output" in typed and self.structured_output not in settings:
            known = ", ".join(settings)
            msg = f"unknown structured_output {self.structured_output!r}; expected one of {known}"
            errors.append(("structured_output", msg))
        if "workspace" in typed and self.workspace is not None:
            if not os.path.isdir(self.workspace):
                what = "does not exist" if not os.path.exists(self.workspace) else "is no folder"
                errors.append(("workspace", f"workspace {self.workspace!r} {what}"))
        if "databases" in typed and self.databases is not None:
            errors += [("databases", f"databases: {p}") for p in _database_problems(self.databases)]
        return errors


def _database_problems(text: str) -> list[str]:
    """What is wrong with a ``databases`` text: its form, then each file it names."""
    from agent.checks.databases import DatabaseError, declare_databases

    try:
        declare_databases(text)
    except DatabaseError as exc:
        return [str(exc)]
    return []


def _absolute_databases(ctx: Context) -> None:
    """``databases`` with every path made absolute, so that a thread resumed from another
    working directory opens the same files; a mapping (a Python caller's ``{name: path}``)
    becomes the same text."""
    value: Any = ctx.databases
    if isinstance(value, Mapping):
        from agent.checks.databases import DatabaseError, format_databases

        try:
            value = format_databases({str(n): os.fspath(p) for n, p in value.items()})
        except (DatabaseError, TypeError):
            return  # validate names it: the field takes text
    if isinstance(value, str):
        ctx.databases = _absolute_text(value)


def _absolute_workspace(ctx: Context) -> None:
    """``workspace`` made absolute (a path object becomes text), so that a thread resumed
    from another working directory reads the same folder."""
    value: Any = ctx.workspace
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str) and value.strip():
        ctx.workspace = os.path.abspath(os.path.expanduser(value))


def _absolute_text(text: str) -> str:
    """``name=path,...`` with absolute paths; text that does not parse is kept as it is, for
    ``validate`` to name."""
    from agent.checks.databases import DatabaseError, absolute, format_databases, parse_databases

    try:
        declared = parse_databases(text)
        return format_databases({n: absolute(p) for n, p in declared.items()}) or text
    except DatabaseError:
        return text


_VALID: set[tuple[Any, ...]] = set()
"""Field values (with their types) already found valid; bounded by ``_VALID_MAX``."""
_VALID_MAX = 1024


def _values_key(ctx: Context) -> tuple[Any, ...] | None:
    """The Context's values with their types (``1`` and ``True`` differ), or None when one
    cannot be hashed (a value of the wrong type, which ``validate`` reports)."""
    key = tuple((type(value), value) for value in (getattr(ctx, f.name) for f in fields(ctx)))
    try:
        hash(key)
    except TypeError:
        return None
    return key


PLANNING = tuple(Planning)


def as_context(value: Any) -> Context:
    """The run's Context, whether LangGraph passed a dataclass, a dict or nothing."""
    if isinstance(value, Context):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in fields(Context)}
        given = {k: v for k, v in value.items() if k in known}
        ctx = Context(**given)
        for name, given_value in given.items():  # given wins over the environment, even a
            setattr(ctx, name, given_value)  # value equal to the field's default
        _absolute_databases(ctx)
        _absolute_workspace(ctx)
        return ctx
    return Context()
