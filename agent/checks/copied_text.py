"""Text an artifact copies from a source: a claim taken from a source cites that source.

A search result names a URL and then what the page says. An artifact repeating a run of
:data:`COPIED_WORDS` words of that text, word for word, took it from that source, whatever
the language; the ``citations`` check then asks for that URL among the artifact's citations.
On the 1.5B a report built from five search results, sentence by sentence, cited none of
them (its goal asked for two citations in words no criterion had read) and the judge passed
it. Words are compared folded (NFKC, case-folded), as runs of letters and digits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator

from agent.checks.link_finding import extract_urls

__all__ = ["COPIED_WORDS", "uncited_copies"]

COPIED_WORDS = 10
"""The shortest run of words, the same in the artifact and a source's text, that counts as
copied (short phrases — names, titles, common wording — do not)."""
MAX_CHARS = 200_000  # of the artifact and of each tool result, compared at most
_WORD = re.compile(r"\w+")


def uncited_copies(
    text: str, outputs: Iterable[str], is_cited: Callable[[str], bool]
) -> list[tuple[str, str]]:
    """``(url, copied words)`` for each source whose text ``text`` copies but that
    ``is_cited`` says the artifact does not cite, once per URL."""
    runs = set(_runs(_words(text)))
    if not runs:
        return []
    found: dict[str, str] = {}
    for output in outputs:
        for url, said in _sources(output[:MAX_CHARS]):
            if url in found or is_cited(url):
                continue
            copied = next((r for r in _runs(_words(said)) if r in runs), None)
            if copied is not None:
                found[url] = " ".join(copied)
    return list(found.items())


def _sources(output: str) -> Iterator[tuple[str, str]]:
    """Each URL a tool's result names, with the text after it up to the next one."""
    at = sorted(
        {(output.find(url), url) for url in extract_urls(output, source=True) if url in output}
    )
    for n, (start, url) in enumerate(at):
        end = at[n + 1][0] if n + 1 < len(at) else len(output)
        yield url, output[start + len(url) : end]


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text[:MAX_CHARS]).casefold())


def _runs(words: list[str]) -> Iterator[tuple[str, ...]]:
    for i in range(len(words) - COPIED_WORDS + 1):
        yield tuple(words[i : i + COPIED_WORDS])
