"""The deep-agent graph, wired as the diagram of the design:

START ─► planner ──Send(step)──► subagent (one per ready step, in parallel) ─► reflection
            ▲  ├─(nothing ready)────────────────────────────────────────────► reflection
            │  ├─(paused, resumed without an answer)─► escalate                   │
            │  └─(invalid goal or Context)───────────► finalize                   │
            │                  subagent ◄──Send(step)── continue (steps ready) ◄───┤
            ├──────────────── replan / continue (none ready) ◄─────────────────────┤
            │                                                end / fail ─► finalize ─► END
            └── escalate: interrupt(escalation); answer / continue ◄── escalate ──┘
                          accept / stop ─► finalize

``planner``, ``reflection`` and ``escalate`` route with ``Command``: each returns the one
destination its decision names, from the ``Literal`` its module declares
(``agent.graph.routes``), so ``graph.get_graph()`` and Studio draw every edge. Each node
lives in the module named after it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import RetryPolicy

from agent.checks.databases import DatabaseError, declare_databases
from agent.context import Context
from agent.controller.subagents import SubAgent, build_registry
from agent.coroutines import BothWays
from agent.errors import ConfigError, is_transient
from agent.graph.escalate import escalate
from agent.graph.finalize import finalize
from agent.graph.planner import Planner
from agent.graph.reflection import Reflection
from agent.graph.roles import Roles
from agent.graph.routes import ESCALATE_DESTINATIONS, PLANNER_DESTINATIONS, REFLECTION_DESTINATIONS
from agent.graph.subagent import Subagent
from agent.limits import MAX_TOOL_TURNS
from agent.reflection.rules import RULES, Rule
from agent.state import InputState, State, SubagentTask
from agent.store.int_versions import matched
from agent.tools.approvals import InterruptOn, interrupt_config
from agent.tools.search import default_role_tools
from agent.vfs.folder import Folder, FolderError

# Transient model errors (timeouts, 429, 5xx) are retried here and nowhere else.
DEFAULT_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.5, retry_on=is_transient)
# Rounds are bounded by Context.max_steps and the depth cap; this only stops LangGraph's
# own default of 25 supersteps from cutting a long plan short.
RECURSION_LIMIT = 10_000
MAX_CONCURRENCY = 64


def with_default_tools(tools: Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
    """The user's tools per role, after the ones deepreflect adds by itself: web search for
    the researcher when ``TAVILY_API_KEY`` is set (``agent.tools.search``)."""
    merged: dict[str, list[Any]] = {r: list(t) for r, t in default_role_tools().items()}
    for role, added in (tools or {}).items():
        merged[role] = [*merged.get(role, ()), *added]
    return merged


def _declared(databases: Mapping[str, str | os.PathLike[str]] | None) -> dict[str, str]:
    """``build_graph``'s databases, validated now (a bad one is a ``ConfigError``)."""
    try:
        return declare_databases(databases)
    except DatabaseError as exc:
        msg = f"build_graph(databases=...): {exc}"
        raise ConfigError(msg) from exc


def _workspace(path: str | os.PathLike[str] | None) -> str | None:
    """``build_graph``'s workspace folder as an absolute path, checked now."""
    if path is None:
        return None
    try:
        return str(Folder.open(path).root)
    except FolderError as exc:
        msg = f"build_graph(workspace=...): {exc}"
        raise ConfigError(msg) from exc


def build_graph(
    *,
    models: Mapping[str, BaseChatModel | str] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    subagents: Sequence[SubAgent | Mapping[str, Any]] | None = None,
    tools: Mapping[str, Sequence[Any]] | None = None,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY,
    max_tool_turns: int = MAX_TOOL_TURNS,
    interrupt_on: InterruptOn | None = None,
    interrupt_after: Sequence[str] = (),
    name: str = "deep_agent",
    state_schema: type[Any] = State,
    reflection_rules: Sequence[Rule] = RULES,
    databases: Mapping[str, str | os.PathLike[str]] | None = None,
    store: BaseStore | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> CompiledStateGraph[Any, Context, InputState, Any]:
    """Build the deepreflect graph.

    Args:
        models: role name (``planner``, ``reflection``, ``judge``, a subagent name or
            ``default``) to a chat model or a ``provider:name`` string; roles not named
            here use the run's ``Context``. ``critic`` names the built-in subagent, never
            the judge.
        checkpointer: any LangGraph checkpointer (SQLite, PostgreSQL, memory); None for
            ``langgraph dev``, which brings its own. A ``SqliteSaver`` on a threads file
            the CLI made writes its integer channel versions (``agent.store.int_versions``).
        subagents: extra subagents (name, description, prompt, tools, model).
        tools: role name to extra tools for that role (built-in or added), e.g.
            ``{"researcher": [search], "coder": [run_sql]}``: ``BaseTool``s, ``@tool``
            functions, plain callables, coroutine-only and MCP tools. With
            ``TAVILY_API_KEY`` set the researcher also gets Tavily web search.
        interrupt_on: tool name to ``True`` or ``{"allowed_decisions": [...],
            "description": ...}``: calls of those tools wait for a human who approves,
            edits the arguments or rejects (``agent.tools.approvals``); the thread pauses on
            every pending call at once. ``Context.interrupt_on`` adds tool names per run.
        retry_policy: how transient model errors are retried (None disables retries).
        state_schema: ``State`` or a subclass adding keys of your own.
        reflection_rules: the rules reflection applies before asking the model, in order.
        databases: name to the path of an SQLite file, e.g. ``{"chinook": "chinook.db"}``:
            the databases a ``sql`` check may query (``{"kind": "sql", "db": "chinook"}``),
            checked and made absolute now; the planner sees the names, never the paths.
            ``Context.databases`` adds more per run (these win on a shared name).
        store: a LangGraph ``BaseStore`` (SQLite, PostgreSQL, in memory) keeping the
            memories threads share (``memories/``, ``agent.store.memories``); None for
            ``langgraph dev`` and LangGraph Server, which bring their own.
        workspace: a folder the agent works in, read in place (``agent.vfs.folder``): steps
            list, glob, grep and read its files where they are, and what they write stays
            in the thread until applied (``agent.runs.apply``). ``Context.workspace`` wins.

    Raises:
        ConfigError: a database name is not an identifier, or its file is not SQLite; the
            workspace is not a folder; a
            role in ``models`` or ``tools`` that is not one; a model string without a
            provider or whose provider has no key.
    """
    declared = _declared(databases)
    folder = _workspace(workspace)
    matched(checkpointer)  # a SqliteSaver on a file whose versions are integers
    attempts = retry_policy.max_attempts if retry_policy is not None else 1
    roles = Roles(build_registry(subagents, with_default_tools(tools)), models)
    roles.check_models()
    builder = StateGraph(state_schema, context_schema=Context, input_schema=InputState)
    wire(
        builder,
        planner=Planner(roles, declared, attempts, folder),
        subagent=Subagent(
            roles, max_tool_turns, interrupt_config(interrupt_on), declared, folder, checkpointer
        ),
        reflection=Reflection(roles, reflection_rules, attempts),
        retry_policy=retry_policy,
    )
    graph = builder.compile(
        checkpointer=checkpointer, store=store, interrupt_after=list(interrupt_after), name=name
    )
    # Under invoke each parallel subagent holds a thread while it waits on the loop; the
    # default pool (CPUs + 4) would cap Context.max_parallel below what it asks for.
    configured = graph.with_config(recursion_limit=RECURSION_LIMIT, max_concurrency=MAX_CONCURRENCY)
    # run() and resume() check a Context against the roles before they start a run
    setattr(configured, ROLES_ATTRIBUTE, roles)
    setattr(configured, WORKSPACE_ATTRIBUTE, folder)  # for apply() when the Context names none
    return configured


WORKSPACE_ATTRIBUTE = "deepreflect_workspace"
"""Where a built graph keeps ``build_graph(workspace=...)``, for ``agent.apply`` on a thread
whose Context named no folder."""
ROLES_ATTRIBUTE = "deepreflect_roles"
"""Where a built graph keeps its :class:`Roles` (a compiled graph has no field of ours)."""


def check_context(graph: Any, ctx: Context) -> None:
    """Raise :class:`ConfigError` with the fix when ``ctx`` cannot run on ``graph`` (a
    graph ``build_graph`` did not make is not checked: its nodes report what they find)."""
    roles = getattr(graph, ROLES_ATTRIBUTE, None)
    if isinstance(roles, Roles):
        roles.check(ctx)


def wire(
    builder: StateGraph[Any, Context, InputState, Any],
    *,
    planner: Planner,
    subagent: Subagent,
    reflection: Reflection,
    retry_policy: RetryPolicy | None,
) -> None:
    """The diagram above, node by node: the edges a node chooses among are its declared
    destinations; the fixed ones are added at the end."""
    # The model-calling nodes are coroutines, run natively by ainvoke/astream and on one
    # background loop by invoke/stream (agent.coroutines), so both work with the same code.
    builder.add_node(
        "planner",
        BothWays(planner.node, "planner"),
        retry_policy=retry_policy,
        destinations=PLANNER_DESTINATIONS,  # subagent (Send), reflection, escalate, finalize
    )
    builder.add_node(
        "subagent",
        BothWays(subagent.node, "subagent"),
        input_schema=SubagentTask,
        retry_policy=retry_policy,
    )
    builder.add_node(
        "reflection",
        BothWays(reflection.node, "reflection"),
        retry_policy=retry_policy,
        destinations=REFLECTION_DESTINATIONS,  # planner, subagent (Send), escalate, finalize
    )
    builder.add_node("escalate", cast(Any, escalate), destinations=ESCALATE_DESTINATIONS)
    builder.add_node("finalize", cast(Any, finalize))

    builder.add_edge(START, "planner")
    builder.add_edge("subagent", "reflection")
    builder.add_edge("finalize", END)
