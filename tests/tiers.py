"""Which tier is running, for the tests whose cost is a number of generated cases.

The fast tier (``-m "not slow"``, tests/conftest.py) tries fewer Hypothesis examples of each
property; the full suite tries them all. The assertions are the same in both.
"""

from __future__ import annotations

FAST = False
"""Set by tests/conftest.py when the mark expression deselects ``slow``."""
FAST_EXAMPLES = 20
"""Examples per property in the fast tier (Hypothesis' default is 100)."""


def examples(full: int) -> int:
    """The examples a property tries: ``full`` in the full suite, a fifth of it (at least
    ``FAST_EXAMPLES``) in the fast tier."""
    return max(FAST_EXAMPLES, full // 5) if FAST else full
