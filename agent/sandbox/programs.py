"""The programs that run inside the sandbox, read as text from this package's own folder.

``bootstrap.py``, ``kernel_rules.py``, ``check_runner.py``, ``command_runner.py``,
``sql_runner.py`` and the
``bridge`` package are real modules of ``agent.sandbox`` (linted and type-checked like the
rest, installed with the wheel), but the host never imports them (``kernel_rules`` and
``bridge`` only in unit tests): their text is copied into a sandbox and run there, with only
the standard library. Reading them from ``Path(__file__).parent`` works from a source tree, an
editable install and a wheel alike.
"""

from __future__ import annotations

import functools
from pathlib import Path

PROGRAMS = frozenset(
    {"bootstrap.py", "check_runner.py", "command_runner.py", "kernel_rules.py", "sql_runner.py"}
)
PACKAGES = frozenset({"bridge"})


@functools.cache
def program(name: str) -> str:
    """The text of the sandbox program ``name`` (read once per process)."""
    if name not in PROGRAMS:
        msg = f"unknown sandbox program {name!r}; known: {', '.join(sorted(PROGRAMS))}"
        raise ValueError(msg)
    return (Path(__file__).parent / name).read_text(encoding="utf-8")


def program_package(name: str, shipped_as: str) -> dict[str, str]:
    """The modules of the sandbox package ``name``, keyed by their path in a sandbox folder
    where it is imported as ``shipped_as`` (they import each other relatively, so any name
    works)."""
    return {f"{shipped_as}/{module}": text for module, text in _package_texts(name)}


@functools.cache
def _package_texts(name: str) -> tuple[tuple[str, str], ...]:
    """Each module's file name and text (read once per process)."""
    if name not in PACKAGES:
        msg = f"unknown sandbox package {name!r}; known: {', '.join(sorted(PACKAGES))}"
        raise ValueError(msg)
    folder = Path(__file__).parent / name
    return tuple(
        (path.name, path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.py"))
    )
