"""The subagent registry: built-in roles plus the ones a user adds through ``build_graph``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from typing_extensions import TypedDict

from agent.errors import ConfigError
from agent.prompts import load_prompt
from agent.suggestions import did_you_mean
from agent.tools.custom import coerce_tools

BUILTIN_ROLES = ("researcher", "writer", "coder", "critic")


class SubAgent(TypedDict):
    """A subagent a plan step may name in its ``action``."""

    name: str
    """What plan steps call it; a plain identifier."""
    description: str
    """One line the planner reads to choose it."""
    prompt: NotRequired[str]
    """Its system prompt; built-in roles read ``prompts/subagents/<name>.txt``."""
    tools: NotRequired[Sequence[Any]]
    """Extra tools besides the filesystem tools (``ls``, ``read_file``, ``write_file``,
    ``edit_file``): ``BaseTool``s, ``@tool`` functions or plain functions (sync or async),
    which ``build_registry`` turns into ``BaseTool``s (``agent.tools.custom.as_tool``)."""
    model: NotRequired[str | BaseChatModel]
    """Its own model; otherwise ``Context.subagent_model`` or ``Context.model``."""
    graph: NotRequired[Runnable]
    """A compiled LangGraph graph (``create_agent``'s, deepagents', your own) that runs the
    step instead of the tool loop, given the step as a user message and the readable files
    in ``files``; what it returns is checked like any step's
    (:mod:`agent.controller.graph_steps`). It needs no prompt."""


_DESCRIPTIONS = {
    "researcher": "Gathers facts and requirements from the goal and inputs into notes.",
    "writer": "Writes prose artifacts: reports, READMEs, summaries.",
    "coder": "Writes code, tests, queries and structured data that must pass checks.",
    "critic": "Reviews an artifact against a rubric and writes a structured critique.",
}


def builtin_subagents() -> list[SubAgent]:
    """The four roles every graph has."""
    return [
        {
            "name": name,
            "description": _DESCRIPTIONS[name],
            "prompt": load_prompt(f"subagents/{name}"),
        }
        for name in BUILTIN_ROLES
    ]


def build_registry(
    extra: Sequence[SubAgent | Mapping[str, Any]] | None = None,
    tools: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, SubAgent]:
    """Built-ins overlaid with the user's subagents, then ``tools`` added to the roles they
    name (built-in or not) without redefining them; a bad spec or tool fails at build time.
    Every role's tools come out as ``BaseTool``s (``agent.tools.custom.coerce_tools``)."""
    registry: dict[str, SubAgent] = {s["name"]: s for s in builtin_subagents()}
    for spec in extra or ():
        name = spec.get("name") if isinstance(spec, Mapping) else None
        if not isinstance(name, str) or not name.isidentifier():
            msg = f"subagent name must be an identifier, got {name!r}"
            raise ConfigError(msg)
        if not spec.get("description"):
            msg = f"subagent {name!r} needs a description (the planner chooses by it)"
            raise ConfigError(msg)
        inherited = registry[name].get("prompt") if name in registry else None
        graph = spec.get("graph")
        if graph is not None and not callable(getattr(graph, "ainvoke", None)):
            msg = (
                f"subagent {name!r}: graph must be a compiled graph (or a Runnable), got {graph!r}"
            )
            raise ConfigError(msg)
        prompt = spec.get("prompt") or inherited or ("" if graph is None else spec["description"])
        if not prompt:
            msg = f"subagent {name!r} needs a prompt"
            raise ConfigError(msg)
        registry[name] = {**spec, "name": name, "prompt": prompt}  # type: ignore[typeddict-item]
        if "tools" in spec:
            registry[name]["tools"] = coerce_tools(name, spec["tools"] or ())
    for role, added in (tools or {}).items():
        if role not in registry:
            hint = did_you_mean(str(role), registry)
            msg = (
                f"tools given for unknown role {role!r}{hint}; roles: {', '.join(sorted(registry))}"
            )
            raise ConfigError(msg)
        merged = coerce_tools(role, [*registry[role].get("tools", ()), *coerce_tools(role, added)])
        registry[role] = {**registry[role], "tools": merged}
    return registry


def describe_registry(registry: Mapping[str, SubAgent]) -> str:
    """The planner's list of allowed actions."""
    return "\n".join(f"- {name}: {spec['description']}" for name, spec in sorted(registry.items()))
