"""The bench scripts measure: each figure comes from a run that got where it was meant to."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))  # the bench scripts import their sibling `common` by name
_spec = importlib.util.spec_from_file_location("reflection_calls", BENCH / "reflection_calls.py")
assert _spec is not None and _spec.loader is not None
reflection_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reflection_calls)


def test_reflection_calls_counts_real_calls_and_rules_save_some():
    by_rule, _ = reflection_calls.solve(4, reflection_calls.RULES)
    asked, _ = reflection_calls.solve(4, reflection_calls.ASK_EVERY_TIME)
    assert 0 < by_rule < asked
