"""Does reflection help? Run a dataset with reflection off and on, or plant known errors.

``deepreflect eval`` and :func:`evaluate` run one of two measurements over a dataset
(``agent.eval.datasets``) and return the report as plain data; :func:`print_report` prints it.

- ``reflection``: each task through the revise loop, first draft (off) against the revised
  one (on), and the model critic's precision and recall.
- ``seeded``: one error planted per mutation operator (``mutations``) in each reference; the
  catch rate of the checks (and the critic) and the false-flag rate on the references. A
  mutant the check lets through is probed (``probe``, and ``differential``, the part that
  runs in the sandbox) to tell a gap in the tests from an equivalent mutant.
- ``common``: what both share; ``entry``: :func:`evaluate`; ``report``: the printing.
"""

from agent.eval.common import CRITIC_RUBRIC
from agent.eval.entry import evaluate
from agent.eval.reflection import critic_stats, reflect_task, run_reflection_eval
from agent.eval.report import print_report
from agent.eval.seeded import run_seeded_eval, seed_task

__all__ = [
    "CRITIC_RUBRIC",
    "critic_stats",
    "evaluate",
    "print_report",
    "reflect_task",
    "run_reflection_eval",
    "run_seeded_eval",
    "seed_task",
]
