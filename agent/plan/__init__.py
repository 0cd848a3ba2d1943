"""Planning: a goal becomes an executable plan.

:mod:`agent.plan.steps` validates plans, finds the ready steps, replans and compares the
plan with what was produced; :mod:`agent.plan.planner` asks the planner model for a plan.
"""

from agent.plan.steps import plan_actual_diff

__all__ = ["plan_actual_diff"]
