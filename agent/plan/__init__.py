"""Planning: a goal becomes an executable plan.

:mod:`agent.plan.steps` holds the step and plan models, :mod:`agent.plan.validation` says
what is wrong with a plan (after :mod:`agent.plan.same_outputs` merged the steps that write
one file), :mod:`agent.plan.progress` finds the done and ready steps and replans,
:mod:`agent.plan.diff` compares the plan with what was produced, and
:mod:`agent.plan.planner` asks the planner model for a plan.
"""

from agent.plan.diff import plan_actual_diff

__all__ = ["plan_actual_diff"]
