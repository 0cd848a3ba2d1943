"""File names a reader cannot mistake: one spelling per file, no look-alikes, nothing hidden.

Paths are compared in NFC, so a name typed in decomposed form (``cafe`` + U+0301) and the
composed one are one file. A name is refused when what a reader sees is not what it is:
invisible or bidi-control characters, compatibility forms that fold to other letters
(fullwidth ``ｓｌｕｇｉｆｙ.py``), letters of several scripts in one name (a Cyrillic ``а``
in ``slugify.py``), a non-ASCII name that reads exactly like an ASCII one, digits of two
number systems. The rules follow Unicode's security mechanisms (UTS #39): mixed-script
detection within a word, with its CJK exceptions, and its confusables table for a word
whose every letter has an ASCII look-alike; ``confusable_homoglyphs`` ships both tables.
"""

from __future__ import annotations

import functools
import posixpath
import unicodedata
from collections.abc import Iterable
from typing import Any

import regex

__all__ = ["collision", "fold", "is_test_file", "name_problem", "nfc"]

_INVISIBLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]")
_NEUTRAL_SCRIPTS = frozenset({"COMMON", "INHERITED"})
# UTS #39 "highly restrictive": one script, or Latin with the scripts of one CJK language.
_CJK_SETS = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)


def nfc(path: str) -> str:
    """The one spelling under which a path is stored and looked up."""
    return unicodedata.normalize("NFC", path)


def fold(path: str) -> str:
    """The key two names share when a reader would take them for one: compatibility forms
    folded (NFKC) and letter case ignored."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFKC", path).casefold())


@functools.cache
def _tables() -> tuple[Any, dict[str, list[dict[str, str]]]]:
    """Unicode's script and confusable tables, loaded on the first non-ASCII name only."""
    from confusable_homoglyphs.categories import alias
    from confusable_homoglyphs.confusables import confusables_data

    return alias, confusables_data


def _script(c: str) -> str:
    alias: Any = _tables()[0]
    return str(alias(c))


_UNNAMED = {"Cc": "(a control character)", "Cn": "(unassigned)", "Co": "(private use)"}


def _char(c: str) -> str:
    name = unicodedata.name(c, "") or _UNNAMED.get(unicodedata.category(c), "(a surrogate)")
    return f"U+{ord(c):04X} {name}"


def _ascii_twin(c: str) -> str | None:
    """The ASCII character ``c`` is confusable with, if Unicode's tables name one."""
    for glyph in _tables()[1].get(c, []):
        twin = glyph["c"].strip("\u200e\u200f")
        if len(twin) == 1 and twin.isascii() and twin.isprintable():
            return twin
    return None


def _ascii_reading(name: str) -> str | None:
    """The ASCII name ``name`` would be read as, or None when some letter has no ASCII
    look-alike (then the name is not an imitation of an ASCII one)."""
    out = []
    for c in unicodedata.normalize("NFKC", _INVISIBLE.sub("", name)):
        if not c.isprintable() or c == "\xa0":
            continue
        if c.isascii():
            out.append(c)
        elif (twin := _ascii_twin(c)) is not None:
            out.append(twin)
        elif base := unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode():
            out.append(base)
        else:
            return None
    return "".join(out).strip() or None


# A word: a run of letters, marks and digits. Scripts are compared within a word, so that
# ``отчёт_final.md`` (a Cyrillic word, two Latin ones) is a fine name and ``slugаfy.py``
# (Latin and Cyrillic letters in one word) is not.
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")


def _word_problem(word: str) -> str | None:
    scripts = [_script(c) for c in word]
    distinct = set(scripts) - _NEUTRAL_SCRIPTS
    if len(distinct) > 1 and not any(distinct <= allowed for allowed in _CJK_SETS):
        rarest = min(sorted(distinct), key=scripts.count)
        odd = word[scripts.index(rarest)]
        names = " and ".join(s.title() for s in sorted(distinct))
        return f"mixes {names} letters in one word ({_char(odd)})"
    zeros = {ord(c) - unicodedata.digit(c, 0) for c in word if unicodedata.category(c) == "Nd"}
    if len(zeros) > 1:
        return "mixes digits of different number systems in one word"
    if not word.isascii() and all(c.isascii() or _ascii_twin(c) is not None for c in word):
        odd = next(c for c in word if not c.isascii())
        return f"has a word that reads as ASCII {_ascii_reading(word)!r} but is not ({_char(odd)})"
    return None


def _component_problem(part: str) -> str | None:
    hidden = [c for c in part if _INVISIBLE.match(c)]
    if hidden:
        return f"contains the invisible character {_char(hidden[0])}"
    control = [c for c in part if not (c == " " or c.isprintable())]
    if control:
        return f"contains the non-printing character {_char(control[0])}"
    if part != part.strip():
        return "starts or ends with a space"
    if part.isascii():
        return None
    folded = unicodedata.normalize("NFKC", part)
    if folded != part:
        odd = next(c for c in part if unicodedata.normalize("NFKC", c) != c)
        return f"uses the compatibility form {_char(odd)}, which reads as {folded!r}"
    for c in part:
        if not (c.isascii() or _WORD.match(c)) and _ascii_twin(c) is not None:
            return f"uses {_char(c)}, which reads as ASCII {_ascii_twin(c)!r}"
    for word in _WORD.findall(part):
        if (problem := _word_problem(word)) is not None:
            return problem
    return None


def name_problem(path: str) -> str | None:
    """Why the NFC path ``path`` would mislead a reader, with the name to use instead, or
    None when every component of it is fine."""
    for part in path.split("/"):
        problem = _component_problem(part)
        if problem is None:
            continue
        readings = [_ascii_reading(p) for p in path.split("/")]
        if all(readings):
            advice = f"use the plain name {'/'.join(str(r) for r in readings)!r}"
        else:
            advice = "use visible characters, and the letters of one script in each word"
        return f"the name {part!r} {problem}; {advice}"
    return None


def collision(path: str, existing: Iterable[str]) -> str | None:
    """The existing file ``path`` would be mistaken for (same :func:`fold`), if any."""
    key = fold(path)
    return next((other for other in existing if other != path and fold(other) == key), None)


def is_test_file(path: str) -> bool:
    """A pytest file by its name (``test_x.py``, ``x_test.py``, ``conftest.py``)."""
    name = posixpath.basename(path)
    if not name.lower().endswith(".py"):
        return False
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
