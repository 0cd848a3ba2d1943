"""Which model plays which role: one lookup for the planner, reflection, the judge and the
subagents, from ``build_graph(models=...)``, the subagent's own model and the run's Context."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.context import Context
from agent.controller.subagents import SubAgent
from agent.errors import ConfigError
from agent.models.factory import JUDGE, Metered, load_model
from agent.models.profiles import DEFAULT, Profile, profile_for
from agent.models.structured_methods import methods_from
from agent.suggestions import did_you_mean

__all__ = ["GRAPH_ROLES", "Roles", "learnt_update", "role_profile"]

GRAPH_ROLES = ("planner", "reflection", JUDGE)
"""The roles that are not subagents; ``default`` names every role not named otherwise."""


class Roles:
    """The models ``build_graph`` got and the registered subagents."""

    def __init__(
        self,
        registry: Mapping[str, SubAgent],
        models: Mapping[str, BaseChatModel | str] | None = None,
    ) -> None:
        self.registry = dict(registry)
        self.models = dict(models or {})

    def check_models(self) -> None:
        """Raise :class:`ConfigError` for a ``models`` role that is none of the graph's, and
        for a model string that cannot be used (no provider, no key): said when the graph
        is built, not halfway through a run."""
        known = (*GRAPH_ROLES, "default", *sorted(self.registry))
        for role, spec in self.models.items():
            if role not in known:
                msg = (
                    f"build_graph(models=...) names unknown role {role!r}"
                    f"{did_you_mean(str(role), known)}; roles: {', '.join(known)}"
                )
                raise ConfigError(msg)
            if isinstance(spec, str):
                load_model(spec, role)
        for name, sub in self.registry.items():
            if isinstance(sub.get("model"), str):
                load_model(sub["model"], name)

    def context_models(self, ctx: Context) -> set[str]:
        """The model strings the run's Context supplies to roles ``build_graph`` left open."""
        if "default" in self.models:
            return set()
        by_role = {"planner": ctx.planner_model, JUDGE: ctx.judge_model}
        by_role["reflection"] = ctx.reflection_model
        chosen = {by_role[r] or ctx.model for r in GRAPH_ROLES if r not in self.models}
        for name, sub in self.registry.items():
            if name not in self.models and sub.get("model") is None:
                chosen.add(ctx.subagent_model or ctx.model)
        return chosen

    def check(self, ctx: Context) -> None:
        """Raise :class:`ConfigError` with the fix when ``ctx`` cannot run on this graph: an
        invalid field, a model string without a provider, a provider without its key."""
        if problems := ctx.validate():
            raise ConfigError("; ".join(problems))
        for spec in sorted(self.context_models(ctx)):
            load_model(spec, timeout=ctx.request_timeout_s)

    def model_for(self, role: str, ctx: Context) -> BaseChatModel:
        """Explicit override, the subagent's own model, ``default``, then the Context; a
        model named by string gets the Context's request timeout and output cap."""
        limits: dict[str, Any] = {
            "timeout": ctx.request_timeout_s,
            "max_tokens": ctx.max_output_tokens,
        }
        if role in self.models:
            return load_model(self.models[role], role, **limits)
        spec = self.registry.get(role)
        if spec and spec.get("model") is not None:
            return load_model(spec["model"], role, **limits)
        if "default" in self.models:
            return load_model(self.models["default"], role, **limits)
        by_role: dict[str, Any] = {
            "planner": ctx.planner_model,
            JUDGE: ctx.judge_model,
            "reflection": ctx.reflection_model,
        }
        chosen = by_role.get(role, ctx.subagent_model) or ctx.model
        return load_model(chosen, role, **limits)

    def metered(
        self,
        role: str,
        ctx: Context,
        metadata: Mapping[str, Any] | None = None,
        *,
        trajectory: Iterable[Mapping[str, Any]] | None = None,
    ) -> Metered:
        """The role's model, counting the tokens it reports; its calls carry ``role`` and
        ``metadata``, and ask for structured answers the way the thread's ``trajectory``
        recorded works for the model (:func:`agent.models.structured_methods.methods_from`)."""
        model = self.model_for(role, ctx)
        methods = methods_from(trajectory)
        return Metered(model, role, ctx.structured_output, metadata, methods=methods)


def role_profile(roles: Roles, role: str, ctx: Context) -> Profile:
    """The profile of the model playing ``role`` in this run (``Context.profile``, or the
    one ``auto`` picks for it). A model that cannot be made did nothing in that role: the
    default profile (the step that needed it failed instead)."""
    try:
        model = roles.model_for(role, ctx)
    except Exception:  # a missing key or provider
        return DEFAULT
    return profile_for(ctx.profile, model)


def learnt_update(metered: Metered) -> dict[str, Any]:
    """The update keeping with the thread what ``metered``'s structured calls taught about
    its model (nothing when they taught nothing new): the next node reads it back."""
    if metered.learnt is None:
        return {}
    return {"trajectory": [{**metered.learnt, "actor": metered.role, "step_id": None}]}
