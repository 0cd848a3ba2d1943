"""The ``citations`` kind: every source URL the artifact cites came back from the step's tools.

Grounded evidence against invented sources ("missing citations or evidence that
does not support a claim"). ``run_check`` lends the check the text of every tool result the
step's tools returned (:func:`agent.checks.registry.current_tool_outputs`); the artifact
passes when it cites at least ``min`` distinct URLs (one unless said; ``min`` 0 asks for
none), every one of them is among the URLs found in those results or the goal's text, and
every source whose words it copies is among them (:mod:`agent.checks.copied_text`).
Nothing is fetched: the verdict is a comparison of two sets of URLs, so the model cannot talk
its way past it.

The two halves live beside this module: :mod:`agent.checks.link_finding` (what counts as a
citation) and :mod:`agent.checks.source_identity` (what counts as the same source).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.checks.copied_text import uncited_copies
from agent.checks.link_finding import extract_urls
from agent.checks.registry import current_tool_outputs, register_check
from agent.checks.report import CheckReport, clip, make_report
from agent.checks.source_identity import UnverifiableURL, normalise_url

__all__ = ["Citation", "citations", "cited_urls", "needs_sources"]

_SHOWN = 8  # URLs named in the evidence, at most


@dataclass(frozen=True)
class Citation:
    """One distinct source an artifact cites: ``url`` as found, ``key`` the normalised form
    it is compared by, or None with the ``reason`` it cannot name a returned source."""

    url: str
    key: str | None
    reason: str = ""


def citations(text: str, *, source: bool = False) -> list[Citation]:
    """The distinct sources ``text`` cites, each with its key (or why it has none);
    ``source``: ``text`` is a tool's result (see :func:`extract_urls`)."""
    found: dict[str, Citation] = {}
    for url in extract_urls(text, source=source):
        try:
            key = normalise_url(url)
        except UnverifiableURL as error:
            found.setdefault(f"\0{url}", Citation(url, None, str(error)))
        else:
            found.setdefault(key, Citation(url, key))
    return list(found.values())


def cited_urls(text: str, *, source: bool = False) -> dict[str, str]:
    """The distinct verifiable sources ``text`` cites: normalised key -> the URL as found."""
    return {c.key: c.url for c in citations(text, source=source) if c.key is not None}


def needs_sources(spec: Any) -> bool:
    """Whether a ``done_when`` spec asks for cited sources (a ``citations`` part whose
    ``min`` is 1 or more): a step that must find them needs its tools. One with ``min`` 0
    only refuses invented URLs, which a draft asked without tools can meet."""
    if not isinstance(spec, Mapping):
        return False
    if spec.get("kind") == "all" and isinstance(spec.get("checks"), list):
        return any(needs_sources(part) for part in spec["checks"])
    return spec.get("kind") == "citations" and spec.get("min", 1) != 0


def _returned(outputs: Iterable[str]) -> dict[str, str]:
    returned: dict[str, str] = {}
    for output in outputs:
        for key, url in cited_urls(output, source=True).items():
            returned.setdefault(key, url)
    return returned


def _grounded(key: str, returned: Mapping[str, str]) -> bool:
    """Whether ``key`` is among the returned keys; an address without a scheme on either
    side matches the same address under either scheme."""
    if key in returned:
        return True
    if key.startswith("//"):
        return f"http:{key}" in returned or f"https:{key}" in returned
    return "//" + key.split("//", 1)[1] in returned


# -- the check ----------------------------------------------------------------------------


def _validate_citations(spec: dict[str, Any]) -> list[str]:
    minimum = spec.get("min", 1)
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        return [
            "kind 'citations' takes 'min': a whole number of distinct sources, at least 0 "
            "(0: none needed, but every URL cited must be one a tool returned)"
        ]
    return []


def _uncited_copies(text: str, cited: Sequence[Citation]) -> list[tuple[str, str]]:
    """The sources ``text`` copies words from without citing them (:mod:`.copied_text`)."""
    keys = {c.key: c.url for c in cited if c.key is not None}

    def is_cited(url: str) -> bool:
        try:
            return _grounded(normalise_url(url), keys)
        except UnverifiableURL:
            return True  # a source no citation could name is not asked for

    return uncited_copies(text, current_tool_outputs(), is_cited)


def _named(urls: Sequence[str]) -> str:
    shown = ", ".join(clip(u, 160) for u in urls[:_SHOWN])
    return shown + (f" (and {len(urls) - _SHOWN} more)" if len(urls) > _SHOWN else "")


def _check_citations(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    minimum = int(spec.get("min", 1))
    cited = citations(files[path])
    returned = _returned(current_tool_outputs())
    invented = [
        c.url if c.key is not None else f"{c.url} ({c.reason})"
        for c in cited
        if c.key is None or not _grounded(c.key, returned)
    ]
    grounded = len(cited) - len(invented)
    if not returned:
        sources = "the step's tools returned no URL"
    else:
        sources = f"the step's tools returned {len(returned)}: {_named(list(returned.values()))}"
    if copies := _uncited_copies(files[path], cited):
        shown = "; ".join(f'{url} ("{clip(words, 120)}")' for url, words in copies[:_SHOWN])
        evidence = (
            f"{path} copies text from {len(copies)} source(s) without citing them: {shown}; "
            f"cite each source whose words it takes"
        )
        return make_report("citations", False, 0.0, evidence)
    if not cited and minimum == 0:
        return make_report("citations", True, 1.0, f"{path} cites no URL (none needed)")
    if not cited:
        evidence = f"{path} cites no source URL (at least {minimum} needed); {sources}"
        return make_report("citations", False, 0.0, evidence)
    if invented:
        evidence = (
            f"{len(invented)} of {len(cited)} URLs cited in {path} did not appear in any "
            f"result of the step's tools or the goal: {_named(invented)}; {sources}"
        )
        return make_report("citations", False, grounded / len(cited), evidence)
    if len(cited) < minimum:
        evidence = (
            f"{path} cites {len(cited)} distinct source URL(s), fewer than the {minimum} "
            f"required: {_named([c.url for c in cited])}"
        )
        return make_report("citations", False, len(cited) / minimum, evidence)
    evidence = (
        f"all {len(cited)} distinct source URL(s) cited in {path} appeared in the step's "
        f"tool results: {_named([c.url for c in cited])}"
    )
    return make_report("citations", True, 1.0, evidence)


def register() -> None:
    """Register the ``citations`` kind; ``agent.checks`` calls this once."""
    register_check(
        "citations",
        _check_citations,
        validate=_validate_citations,
        describe=(
            '{"kind": "citations", "min": 2} (for research steps: the artifact must cite at'
            " least min distinct source URLs, and only URLs the step's own tools, e.g. web"
            " search, returned; an invented source fails)"
        ),
    )
