"""Reflection: what it looks at (:mod:`agent.reflection.situation`), the rules that decide
continue, replan, end or escalate, in order (:mod:`agent.reflection.rules`), what the model is
shown when no rule decides and how its answer is read (:mod:`agent.reflection.model_view`), the
budgets the rules read (:mod:`agent.reflection.budget`) and the human answers that resume an
escalation (:mod:`agent.reflection.answers`)."""
