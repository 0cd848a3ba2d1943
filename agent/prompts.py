"""Prompts live as text files in ``prompts/``; this module is the one way to read them."""

from __future__ import annotations

import functools
from pathlib import Path

_CANDIDATES = (
    Path(__file__).resolve().parent / "_prompts",  # installed wheel: shipped as package data
    Path(__file__).resolve().parent.parent / "prompts",  # source tree / editable install
)


def prompts_dir() -> Path:
    """Return the folder holding the prompt files."""
    for candidate in _CANDIDATES:
        if candidate.is_dir():
            return candidate
    msg = f"prompt folder not found; looked in {', '.join(str(c) for c in _CANDIDATES)}"
    raise FileNotFoundError(msg)


@functools.cache
def load_prompt(name: str) -> str:
    """Read ``prompts/<name>.txt`` once; ``name`` may contain a sub-folder (``subagents/coder``)."""
    path = prompts_dir() / f"{name}.txt"
    if not path.is_file():
        msg = f"unknown prompt {name!r}: {path} does not exist"
        raise FileNotFoundError(msg)
    return path.read_text(encoding="utf-8")


def render(name: str, **values: object) -> str:
    """Fill a prompt's named ``{placeholders}``; a missing value is an error, not a blank."""
    template = load_prompt(name)
    try:
        return template.format_map(values)
    except KeyError as exc:
        msg = f"prompt {name!r} needs a value for {exc.args[0]!r}"
        raise KeyError(msg) from None
