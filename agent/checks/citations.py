"""The ``citations`` kind: every source URL the artifact cites came back from the step's tools.

Grounded evidence against invented sources (seed 001: "missing citations or evidence that
does not support a claim"). ``run_check`` lends the check the text of every tool result the
step's tools returned (:func:`agent.checks.registry.current_tool_outputs`); the artifact
passes when it cites at least one URL, at least ``min`` distinct ones, and every one of them
is among the URLs found in those results. Nothing is fetched: the verdict is a comparison of
two sets of URLs, so the model cannot talk its way past it.

What counts as a citation: every ``http(s)://`` URL and every ``www.`` address anywhere in
the artifact, in markdown links ``[t](url)``, autolinks ``<url>``, reference definitions,
bare text and code blocks alike (a reader can follow each one, so each one must be real; a
check that skipped code blocks would be a place to hide an invented source).

What counts as the same source (:func:`normalise_url`): the comparison ignores what does not
change the document a URL names, and nothing else. Ignored: the scheme (``http``/``https``),
the case of the host, a leading ``www.``, a trailing dot of the host, a default port, user
info, the fragment, a trailing slash, dot segments (``/a/./b``, ``/a/x/../b``), the spelling of
percent-escapes, the order of query parameters and tracking parameters (``utm_*``,
``fbclid``, ``gclid``, ...). Kept: the host exactly (``a.com.evil.net`` and ``evila.com`` are
not ``a.com``), the path exactly and case-sensitively (``/x/evil`` is not ``/x``: a URL that
extends or shortens a returned one is a different source) and every other query parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from agent.checks.registry import current_tool_outputs, register_check
from agent.checks.report import CheckReport, clip, make_report

__all__ = ["TRACKING_PARAMS", "cited_urls", "extract_urls", "normalise_url"]

# A URL runs from its scheme (or "www.") to the first character no URL contains unencoded:
# white space, quotes, angle brackets, backticks, square brackets (IP literals aside, they
# are reserved: an IPv6 host is the one place they may appear), a pipe (markdown tables) or
# a backslash (an escape in a JSON or repr dump).
_URL_CHARS = r"""[^\s<>"'`\[\]|\\\x00-\x1f\x7f]"""
_URL = re.compile(
    rf"https?://(?:\[[0-9a-f:.]+\]{_URL_CHARS}*|{_URL_CHARS}+)"  # an IP literal, or a name
    rf"|(?<![\w.@/-])www\.{_URL_CHARS}+",
    re.IGNORECASE,
)
_HOSTED = re.compile(r"(?:https?://|www\.)[^/?#.:]", re.IGNORECASE)
_ENTITIES = {"&quot;": '"', "&#34;": '"', "&#39;": "'", "&#x27;": "'", "&lt;": "<", "&gt;": ">"}
_TRAILING = ".,;:!?*_~"  # sentence punctuation and markdown emphasis after a URL
_CLOSERS = {")": "(", "}": "{"}
TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "igshid", "mc_cid"}
    | {"mc_eid", "_ga", "_gl", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "srsltid"}
)
"""Query parameters that only track who clicked: dropped (with every ``utm_*``) when URLs
are compared."""
_PATH_SAFE = "/!$&'()*+,;=:@-._~"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN = 8  # URLs named in the evidence, at most


def _trim(candidate: str) -> str:
    """``candidate`` without what follows a URL in prose: trailing punctuation and emphasis,
    and closing brackets the URL did not open (``(see https://a.com/x)``, ``[t](url)``);
    balanced ones stay (``https://en.wikipedia.org/wiki/Mercury_(planet)``)."""
    while candidate:
        last = candidate[-1]
        if last in _TRAILING:
            candidate = candidate[:-1]
        elif last in _CLOSERS and candidate.count(last) > candidate.count(_CLOSERS[last]):
            candidate = candidate[:-1]
        else:
            break
    return candidate


def extract_urls(text: str) -> list[str]:
    """The URLs in ``text`` as written, in order, repeats included (see the module doc)."""
    text = text.replace("\\/", "/")  # JSON may escape slashes: https:\/\/a.com\/x
    for entity, char in _ENTITIES.items():  # HTML-escaped quotes and brackets end a URL too
        text = text.replace(entity, char)
    found = []
    for match in _URL.finditer(text):
        url = _trim(match.group(0))
        if _HOSTED.match(url):  # not a bare "https://" or "www."
            found.append(url)
    return found


def normalise_url(url: str) -> str:
    """The key two URLs share when they name the same source (see the module doc):
    ``HTTPS://WWW.A.com:443/x/?utm_source=t&b=2&a=1#part`` becomes ``a.com/x?a=1&b=2``."""
    url = url.strip().replace("&amp;", "&")
    if not re.match(r"https?://", url, re.IGNORECASE):
        url = "http://" + url  # a "www." address
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # an unreadable port or IP literal: compared as written
        return url.split("#", 1)[0].lower()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        pass  # not a valid IDN: the lowercased text is the key
    host = host.removeprefix("www.")
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal keeps its brackets: [::1]:8080 is not ::1:8080
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = _remove_dot_segments(quote(unquote(parts.path), safe=_PATH_SAFE)).rstrip("/")
    query = urlencode(
        sorted(
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if not _tracking(key)
        )
    )
    return netloc + path + (f"?{query}" if query else "")


def _tracking(key: str) -> bool:
    key = key.lower()
    return key.startswith("utm_") or key in TRACKING_PARAMS


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: the path a browser fetches for ``/a/./b/../c`` is ``/a/c``."""
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
        elif segment == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/".join(out)


def cited_urls(text: str) -> dict[str, str]:
    """The distinct sources ``text`` cites: normalised key -> the URL as first written."""
    cited: dict[str, str] = {}
    for url in extract_urls(text):
        cited.setdefault(normalise_url(url), url)
    return cited


def _returned(outputs: Iterable[str]) -> dict[str, str]:
    returned: dict[str, str] = {}
    for output in outputs:
        returned.update((k, v) for k, v in cited_urls(output).items() if k not in returned)
    return returned


def _validate_citations(spec: dict[str, Any]) -> list[str]:
    minimum = spec.get("min", 1)
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        return ["kind 'citations' takes 'min': a whole number of distinct sources, at least 1"]
    return []


def _named(urls: Sequence[str]) -> str:
    shown = ", ".join(clip(u, 120) for u in urls[:_SHOWN])
    return shown + (f" (and {len(urls) - _SHOWN} more)" if len(urls) > _SHOWN else "")


def _check_citations(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    minimum = int(spec.get("min", 1))
    cited = cited_urls(files[path])
    returned = _returned(current_tool_outputs())
    invented = [url for key, url in cited.items() if key not in returned]
    grounded = len(cited) - len(invented)
    if not returned:
        sources = "the step's tools returned no URL"
    else:
        sources = f"the step's tools returned {len(returned)}: {_named(list(returned.values()))}"
    if not cited:
        evidence = f"{path} cites no source URL (at least {minimum} needed); {sources}"
        return make_report("citations", False, 0.0, evidence)
    if invented:
        evidence = (
            f"{len(invented)} of {len(cited)} URLs cited in {path} did not appear in any "
            f"result of the step's tools: {_named(invented)}; {sources}"
        )
        return make_report("citations", False, grounded / len(cited), evidence)
    if len(cited) < minimum:
        evidence = (
            f"{path} cites {len(cited)} distinct source URL(s), fewer than the {minimum} "
            f"required: {_named(list(cited.values()))}"
        )
        return make_report("citations", False, len(cited) / minimum, evidence)
    evidence = (
        f"all {len(cited)} distinct source URL(s) cited in {path} appeared in the step's "
        f"tool results: {_named(list(cited.values()))}"
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
