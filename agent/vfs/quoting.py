"""Text an artifact controls, rendered as data: one line, capped, quoted, labelled.

Evidence lines, exception messages built at run time, pytest output and file names reach
the reflection and planner prompts and the question a human is asked. Whatever they say,
they must read as a quotation, never as an instruction or a prompt section of their own:
escape sequences and invisible characters are removed, newlines collapse (no line of
their own, so no fake ``SYSTEM:`` line), the length is capped with a marker, and the text
is shown as a JSON string literal after a label our code chose, which no quoted text can
close.

Where such text reaches a screen (progress messages, the final message, an escalation's
question, evidence lines: in the chat, in Studio, in the CLI), :func:`screen_text` is the one
neutraliser: the same cleaning and cap, then escaped for markdown and HTML, so nothing in it
renders as a link, an image (a browser fetching a URL the artifact chose is a way out of a
sandbox without network), a tag, emphasis or a fake verdict in bold.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import regex

__all__ = [
    "clean_text",
    "code_span",
    "data_block",
    "fenced_block",
    "quote_data",
    "screen_text",
    "strip_invisible",
]

# ANSI / ECMA-48: CSI (ESC [ or 8-bit 0x9B) ... final byte; OSC, DCS, SOS, PM, APC strings up
# to their terminator (BEL or ST); and the two-byte ESC sequences.
_ESCAPES = regex.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]?",
    regex.DOTALL,
)
# Characters that render as nothing (zero-width, bidi controls, fillers, variation selectors).
_INVISIBLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]")


# What markdown would render as markup, escaped with a backslash: links and images (``[``,
# ``]``), emphasis and strike-through (``*``, ``~``, a ``_`` not inside a word), code (a
# backtick), a heading at the start, autolinks (``scheme://``, ``www.``, ``user@host``) and
# the backslash itself; HTML's ``<``, ``>`` and ``&`` as entities, which markdown renders as
# the characters. Other punctuation (``:``, ``(``, ``-``) is harmless on one line and stays.
_MARKDOWN = regex.compile(
    r"[\\`*\[\]~@]|(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])|:(?=//)|(?<=\bwww)\.|^#",
    regex.IGNORECASE,
)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def strip_invisible(text: str) -> str:
    """``text`` without terminal escape sequences and invisible or bidi control characters
    (newlines and other controls are left to the caller)."""
    return _INVISIBLE.sub("", _ESCAPES.sub(" ", text))


def screen_text(text: object, limit: int = 300, *, markdown: bool = True) -> str:
    """Text the artifact controls, as a screen shows it: :func:`clean_text` (one line, no
    control, escape or bidi code, capped at ``limit``), then, for a screen that renders
    markdown (chat, Studio), escaped so that no part of it is markup: no live link or image,
    no HTML, no emphasis. ``markdown=False`` for the terminal, which renders none."""
    if not markdown:
        return clean_text(text, limit)
    budget = limit
    while True:  # escaping lengthens: cut the text shorter until it fits (or is 16 long)
        line = "".join(_ENTITIES.get(c, c) for c in clean_text(text, budget))
        shown = _MARKDOWN.sub(lambda m: "\\" + m.group(0), line)
        if len(shown) <= limit or budget == 16:
            return shown
        budget = max(16, budget - (len(shown) - limit))


def code_span(text: str) -> str:
    """``text`` on one line as a markdown code span, which shows its characters as they are
    (a path or a label may hold markdown of its own): fenced by one backtick more than the
    longest run of them inside, with no control, escape or bidi code."""
    flat = " ".join(strip_invisible(text).split())
    fence = "`" * (max((len(run) for run in regex.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def fenced_block(text: str, info: str = "text") -> str:
    """Many lines the artifact controls as a markdown code block, which a screen shows as
    they are: no link, image, HTML or emphasis is live inside it. Fenced by one backtick more
    than the longest run of them inside (at least three), so the text cannot close it, with
    no terminal escape, bidi or other control character (tabs and newlines kept)."""
    body = "\n".join(
        "".join(c if c == "\t" or not _control(c) else " " for c in strip_invisible(line))
        for line in text.splitlines()
    )
    fence = "`" * max(3, 1 + max((len(run) for run in regex.findall(r"`+", body)), default=0))
    return f"{fence}{info}\n{body}\n{fence}"


def _control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def _visible(char: str) -> str:
    """One character as a quotation may show it: controls and separators become a space,
    surrogates and private-use characters the replacement character."""
    category = unicodedata.category(char)
    if category in ("Cc", "Zl", "Zp", "Zs"):
        return " "
    if category in ("Cs", "Co", "Cn"):
        return "\ufffd"
    return char


def clean_text(text: object, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters, with no escape sequence, control
    or invisible character; a cut is marked with the number of characters left out."""
    if limit < 16:
        msg = f"limit must be at least 16 characters, not {limit}"
        raise ValueError(msg)
    raw = text if isinstance(text, str) else str(text)
    raw = strip_invisible(raw)
    line = " ".join("".join(_visible(c) for c in raw).split())
    if len(line) <= limit:
        return line
    keep = limit - len(f"…[+{len(line)} chars]")  # the count never has more digits than this
    return line[:keep] + f"…[+{len(line) - keep} chars]"


def quote_data(label: str, text: object, limit: int = 200) -> str:
    """``label="…"``: the cleaned text as a JSON string literal after a label of our own.

    The label is fixed by our code (``evidence``, ``file name``); the literal escapes quotes
    and backslashes, so the quoted text cannot end the quotation and go on as prose.
    """
    return f"{label}={json.dumps(clean_text(text, limit), ensure_ascii=False)}"


def data_block(value: Any) -> str:
    """A JSON document for a prompt: strings escaped (non-ASCII as ``\\uXXXX``) and ``<``,
    ``>``, ``&`` too, so no string inside can close a tag that delimits the block."""
    text = json.dumps(value, indent=1, ensure_ascii=True, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
