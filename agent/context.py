"""Run-time configuration: what Studio shows as the assistant's form, and what the CLI sets."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from agent.plan import MAX_PLAN_STEPS

# seed 000: the depth cap follows the workload; 10 is the ceiling for any of them.
DEPTH_CAP_BY_WORKLOAD: dict[str, int] = {
    "qa": 2,
    "research": 3,
    "report": 4,
    "coding": 5,
    "bughunt": 7,
}
MAX_DEPTH_CAP = 10


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
    critic_model: str | None = field(
        default=None,
        metadata={"description": "Judge model for rubric checks and critiques; None uses `model`."},
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
        default=2,
        metadata={"description": "Revisions a subagent may make after its first draft."},
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
    structured_output: str = field(
        default="function_calling",
        metadata={
            "description": "How OpenAI-compatible models return structured answers: "
            "function_calling, json_schema or json_mode (for servers without tools)."
        },
    )

    def depth_cap(self) -> int:
        """The reflection depth cap in force: explicit, else by workload, never above 10."""
        cap = self.max_reflection_depth
        if cap is None:
            cap = DEPTH_CAP_BY_WORKLOAD.get(self.workload, DEPTH_CAP_BY_WORKLOAD["report"])
        return max(1, min(int(cap), MAX_DEPTH_CAP))

    def validate(self) -> list[str]:
        """Configuration errors a caller should see before any model is called."""
        errors = []
        if self.workload not in DEPTH_CAP_BY_WORKLOAD:
            known = ", ".join(DEPTH_CAP_BY_WORKLOAD)
            errors.append(f"unknown workload {self.workload!r}; expected one of {known}")
        for name in ("max_revisions", "max_steps", "max_parallel", "max_plan_steps"):
            if getattr(self, name) < (0 if name == "max_revisions" else 1):
                errors.append(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_plan_steps > MAX_PLAN_STEPS:
            errors.append(
                f"max_plan_steps must be at most {MAX_PLAN_STEPS}, got {self.max_plan_steps}"
            )
        if self.token_budget <= 0 or self.time_budget_s <= 0:
            errors.append("token_budget and time_budget_s must be positive")
        if self.structured_output not in ("function_calling", "json_schema", "json_mode"):
            errors.append(f"unknown structured_output {self.structured_output!r}")
        return errors


def context_fields() -> list[str]:
    """Names of the configurable fields, for the CLI and docs."""
    return [f.name for f in fields(Context)]
