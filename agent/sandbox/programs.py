"""The programs that run inside the sandbox, read as text from this package's own folder.

``bootstrap.py``, ``kernel_rules.py``, ``bridge.py``, ``check_runner.py`` and ``sql_runner.py``
are real modules of ``agent.sandbox`` (linted and type-checked like the rest, installed with
the wheel), but the host never imports them (``kernel_rules`` only in a unit test): their text
is copied into a sandbox and run there, with only the standard library. Reading them from
``Path(__file__).parent`` works from a source tree, an editable install and a wheel alike.
"""

from __future__ import annotations

import functools
from pathlib import Path

PROGRAMS = frozenset(
    {"bootstrap.py", "bridge.py", "check_runner.py", "kernel_rules.py", "sql_runner.py"}
)


@functools.cache
def program(name: str) -> str:
    """The text of the sandbox program ``name`` (read once per process)."""
    if name not in PROGRAMS:
        msg = f"unknown sandbox program {name!r}; known: {', '.join(sorted(PROGRAMS))}"
        raise ValueError(msg)
    return (Path(__file__).parent / name).read_text(encoding="utf-8")
