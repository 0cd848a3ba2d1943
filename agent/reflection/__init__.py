"""Reflection: the rules that decide continue, replan, end or escalate, in order
(:mod:`agent.reflection.rules`), the budgets they read (:mod:`agent.reflection.budget`) and
the human answers that resume an escalation (:mod:`agent.reflection.answers`)."""
