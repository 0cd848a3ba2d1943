"""Which model plays which role: one lookup for the planner, reflection, the judge and the
subagents, from ``build_graph(models=...)``, the subagent's own model and the run's Context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.context import Context
from agent.controller.subagents import SubAgent
from agent.models.factory import JUDGE, Metered, load_model
from agent.models.profiles import Profile, profile_for

__all__ = ["Roles"]


class Roles:
    """The models ``build_graph`` got and the registered subagents."""

    def __init__(
        self,
        registry: Mapping[str, SubAgent],
        models: Mapping[str, BaseChatModel | str] | None = None,
    ) -> None:
        self.registry = dict(registry)
        self.models = dict(models or {})

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
        self, role: str, ctx: Context, metadata: Mapping[str, Any] | None = None
    ) -> Metered:
        """The role's model, counting the tokens it reports; its calls carry ``role`` and
        ``metadata``."""
        return Metered(self.model_for(role, ctx), role, ctx.structured_output, metadata)

    def profile(self, role: str, ctx: Context) -> Profile:
        """The model profile in force for ``role`` (``Context.profile``; ``auto`` goes by
        the name of the role's model)."""
        return profile_for(ctx.profile, self.model_for(role, ctx))
