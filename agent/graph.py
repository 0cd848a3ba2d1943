"""The deep-agent graph, wired exactly as the diagram in design.md.

START ─► planner ─Send(step)─► subagent ─► reflection ─┬─ continue / replan ─► planner
             └──(nothing ready)──────────► reflection  ├─ end ─► finalize ─► END
                                                       └─ escalate ─► (pause) ─► planner
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from agent.context import Context
from agent.errors import is_transient
from agent.nodes import Nodes
from agent.reflection import RULES, Rule
from agent.state import InputState, State, SubagentTask
from agent.subagents import SubAgent, build_registry

# Transient model errors (timeouts, 429, 5xx) are retried here and nowhere else.
DEFAULT_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.5, retry_on=is_transient)
# Rounds are bounded by Context.max_steps and the depth cap; this only stops LangGraph's
# own default of 25 supersteps from cutting a long plan short.
RECURSION_LIMIT = 10_000


def build_graph(
    *,
    models: Mapping[str, BaseChatModel | str] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    subagents: Sequence[SubAgent | Mapping[str, Any]] | None = None,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY,
    max_tool_turns: int = 12,
    interrupt_after: Sequence[str] = ("escalate",),
    name: str = "deep_agent",
    state_schema: type[Any] = State,
    reflection_rules: Sequence[Rule] = RULES,
) -> CompiledStateGraph[Any, Context, InputState, Any]:
    """Build the deepreflect graph.

    Args:
        models: role name (``planner``, ``reflection``, ``critic``, a subagent name or
            ``default``) to a chat model or a ``provider:name`` string; roles not named
            here use the run's ``Context``.
        checkpointer: any LangGraph checkpointer (SQLite, PostgreSQL, memory); None for
            ``langgraph dev``, which brings its own.
        subagents: extra subagents (name, description, prompt, tools, model).
        retry_policy: how transient model errors are retried (None disables retries).
        state_schema: ``State`` or a subclass adding keys of your own.
        reflection_rules: the rules reflection applies before asking the model, in order.
    """
    nodes = Nodes(
        registry=build_registry(subagents),
        models=models,
        max_tool_turns=max_tool_turns,
        rules=reflection_rules,
    )

    builder = StateGraph(state_schema, context_schema=Context, input_schema=InputState)
    # add_node's overloads want a TypedDict-like state; planner and reflection take a Mapping
    # on purpose (StateView in agent/nodes.py), hence the two ignores.
    builder.add_node("planner", nodes.planner, retry_policy=retry_policy)  # type: ignore[call-overload]
    builder.add_node(
        "subagent", nodes.subagent, input_schema=SubagentTask, retry_policy=retry_policy
    )
    builder.add_node("reflection", nodes.reflection, retry_policy=retry_policy)  # type: ignore[call-overload]
    builder.add_node("escalate", nodes.escalate)
    builder.add_node("finalize", nodes.finalize)

    builder.add_edge(START, "planner")
    builder.add_conditional_edges(
        "planner", nodes.route_after_planner, ["subagent", "reflection", "escalate", "finalize"]
    )
    builder.add_edge("subagent", "reflection")
    builder.add_conditional_edges(
        "reflection", nodes.route_after_reflection, ["planner", "escalate", "finalize"]
    )
    builder.add_edge("escalate", "planner")
    builder.add_edge("finalize", END)

    graph = builder.compile(
        checkpointer=checkpointer, interrupt_after=list(interrupt_after), name=name
    )
    return graph.with_config(recursion_limit=RECURSION_LIMIT)
