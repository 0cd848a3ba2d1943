"""The ``citations`` kind: every source URL the artifact cites came back from the step's tools.

Grounded evidence against invented sources (seed 001: "missing citations or evidence that
does not support a claim"). ``run_check`` lends the check the text of every tool result the
step's tools returned (:func:`agent.checks.registry.current_tool_outputs`); the artifact
passes when it cites at least one URL, at least ``min`` distinct ones, and every one of them
is among the URLs found in those results. Nothing is fetched: the verdict is a comparison of
two sets of URLs, so the model cannot talk its way past it.

What counts as a citation (:func:`extract_urls`), read as a renderer and a browser read it:
the destination of every Markdown link, image, autolink and reference definition
(markdown-it-py, entities decoded, used or not, in code too), every URL attribute of every
HTML tag anywhere (``href``, ``src``, ``srcset``, ``action``, ``<base href>``, a refresh's
``url=``, ...: values decoded as HTML5 decodes an attribute), and every ``http(s):``,
``www.`` or ``host/path`` address anywhere in the text, code and comments included, looked
for with entities decoded, with Markdown escapes removed, and with invisible format
characters removed and compatibility forms folded (a check that skipped any of these would
be a place to hide an invented source).
A link the check cannot verify is a citation that fails (:class:`UnverifiableURL`): a
protocol-relative ``//host`` link (resolved against nothing), a ``javascript:``, ``data:``,
``file:``, ``ftp:`` or any other scheme but http(s), an unparsable URL, a host that is not
valid IDNA 2008, a relative link hiding ``//``. Not citations: ``mailto:`` and ``tel:`` links
(a person, not a document; URLs written inside them still count), and relative links
(``#part``, ``notes.md``, ``../x``), which name the document's own files, unless a
``<base href>`` makes them absolute.

What counts as the same source (:func:`normalise_url`, one function for both sides): the
URL is parsed by the WHATWG URL standard (ada-url: what a browser fetches, so ``\\`` is ``/``,
``https:/host`` and ``https:host`` name ``host``, tabs and newlines vanish, ``%2e%2e`` is
``..``, the last ``@`` ends the user info), each internationalised label of its host must be
valid IDNA 2008 (``idna``; UTS 46 non-transitional, so ``faß.de`` is ``xn--fa-hia.de``, never
``fass.de``), then RFC 3986 normalisation
(``rfc3986``): escapes of unreserved characters decoded, hex in upper case, characters
outside RFC 3986 escaped, dot segments removed; ``%2F`` stays distinct from ``/``. Kept:
everything that changes which server is asked — the scheme (``http`` is not ``https``), the
user info, the host exactly (``www.a.com`` is not ``a.com``), a non-default port — and the
path exactly, case-sensitively, and every query parameter other than tracking ones. Ignored:
the fragment, a default port, one trailing dot of the host, trailing slashes of the path,
an empty query, the order of query parameters, tracking parameters (``utm_*``, ``fbclid``,
``gclid``, ...). An address without a scheme (``www.a.com/x``) matches either scheme.
"""

from __future__ import annotations

import html.entities
import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import idna
from ada_url import URL, join_url
from markdown_it import MarkdownIt
from markdown_it.token import Token
from rfc3986 import misc as rfc3986_chars
from rfc3986 import normalizers as rfc3986_norm

from agent.checks.registry import current_tool_outputs, register_check
from agent.checks.report import CheckReport, clip, make_report

__all__ = [
    "TRACKING_PARAMS",
    "Citation",
    "UnverifiableURL",
    "citations",
    "cited_urls",
    "extract_urls",
    "normalise_url",
]

TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "igshid", "mc_cid"}
    | {"mc_eid", "_ga", "_gl", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "srsltid"}
)
"""Query parameters that only track who clicked: dropped (with every ``utm_*``) when URLs
are compared."""
_SHOWN = 8  # URLs named in the evidence, at most


class UnverifiableURL(ValueError):
    """A link that cannot be any URL a tool returned; its message says why."""


@dataclass(frozen=True)
class Citation:
    """One distinct source an artifact cites: ``url`` as found, ``key`` the normalised form
    it is compared by, or None with the ``reason`` it cannot name a returned source."""

    url: str
    key: str | None
    reason: str = ""


# -- finding URLs -------------------------------------------------------------------------

# A bare address runs from "http(s):" and its slashes (or "www.") to the first character no
# URL holds unencoded: white space, quotes (an apostrophe inside a word aside), angle
# brackets, backticks, square brackets (an IP literal aside), a pipe (Markdown tables). It
# is read twice, stopping at a backslash (an escape in a JSON or repr dump) and running
# through it (a browser reads "\" as "/").
_STOP = "\\s<>\"'`\\[\\]|\\x00-\\x1f\\x7f"
_START = rf"(?:https?:[/\\]+(?:[^{_STOP}/@]*@)?(?:\[[0-9a-f:.]+\])?|(?<![\w.@/-])www\.)"
_APOSTROPHE = r"'(?=[^\W_])"  # inside a word (Hitchhiker's_Guide); before "," or "}" it ends a dump
_BARE = (
    re.compile(rf"{_START}(?:[^{_STOP}\\]|{_APOSTROPHE})*", re.IGNORECASE),
    re.compile(rf"{_START}(?:[^{_STOP}]|{_APOSTROPHE})*", re.IGNORECASE),
)
# A host and a path written without a scheme (``nature.com/articles/x``): a reader takes it
# for a source, so it is one; a last label that is a file extension is a file (main.py/x).
_FUZZY = re.compile(
    rf"(?<![\w.@/:%&=?#~+-])(?:[^\W_][\w-]*\.)+([^\W\d_]{{2,}})(?::\d+)?/"
    rf"(?:[^{_STOP}\\]|{_APOSTROPHE})*"
)
_FILE_EXTENSIONS = frozenset(
    {"js", "ts", "py", "md", "rs", "go", "sh", "rb", "pl", "txt", "csv", "json", "yaml", "yml"}
    | {"toml", "html", "htm", "css", "pdf", "png", "jpg", "jpeg", "gif", "svg", "xml", "ini"}
    | {"cfg", "log", "zip", "gz", "tar", "exe", "dll", "so", "java", "kt", "cpp", "hpp", "cs"}
)
_PREFIX = re.compile(r"(?:https?:[/\\]*|www\.)", re.IGNORECASE)
_TRAILING = ".,;:!?*_~\\"  # sentence punctuation and emphasis after a URL
_CLOSERS = {")": "(", "}": "{"}
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_NUMERIC = r"#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}"
_ENTITY = re.compile(rf"&(?:({_NUMERIC});?|([A-Za-z][A-Za-z0-9]{{0,31}});)")
_ATTR_ENTITY = re.compile(rf"&(?:({_NUMERIC});?|([A-Za-z][A-Za-z0-9]{{0,31}})(;|(?![=A-Za-z0-9])))")
_TAG = re.compile(r"""<([A-Za-z][^\s/>\x00]*)((?:[^>"']|"[^"]*"|'[^']*')*)>?""")
_ATTRIBUTE = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")
_URL_ATTRIBUTES = frozenset(
    {"href", "src", "cite", "action", "formaction", "data", "poster", "background"}
    | {"longdesc", "usemap", "codebase", "manifest", "icon", "profile", "classid", "lowsrc"}
    | {"dynsrc", "xlink:href", "itemid", "ping", "archive", "srcset", "imagesrcset"}
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_NOT_A_DOCUMENT = frozenset({"mailto", "tel"})
_HOSTLIKE = re.compile(
    r"www\.[^/?#\s]|(?:[^\W_][\w-]*\.)+[^\W\d_]{2,}(?::\d+)?[/?#]", re.IGNORECASE
)
_C0_OR_SPACE = "".join(map(chr, range(0x21)))


def _trim(candidate: str) -> str:
    """``candidate`` without what follows a URL in prose: trailing punctuation and emphasis,
    and closing brackets the URL did not open (``(see https://a.com/x)``, ``[t](url)``);
    balanced ones stay (``https://en.wikipedia.org/wiki/Mercury_(planet)``)."""
    closed = {closer: candidate.count(closer) for closer in _CLOSERS}
    opened = {closer: candidate.count(opener) for closer, opener in _CLOSERS.items()}
    end = len(candidate)
    while end:
        last = candidate[end - 1]
        if last in _CLOSERS and closed[last] > opened[last]:
            closed[last] -= 1
        elif last not in _TRAILING:
            break
        end -= 1
    return candidate[:end]


def _entity(numeric: str) -> str:
    """The character ``#58`` or ``#x3A`` names (U+FFFD for none, as HTML5 decodes it)."""
    code = int(numeric[2:], 16) if numeric[1] in "xX" else int(numeric[1:])
    return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"


def _decode(text: str, attribute: bool = False) -> str:
    """``text`` with character references decoded until none is left (double encoding
    included). Numeric ones with or without ``;`` (as a browser decodes ``https&#58//``);
    named ones with ``;``, or in an attribute one HTML5 decodes bare (``&amp``, never the
    ``&reg`` of ``?a=1&region=eu``)."""
    pattern = _ATTR_ENTITY if attribute else _ENTITY

    def replace(match: re.Match[str]) -> str:
        numeric, name = match.group(1), match.group(2)
        if numeric:
            return _entity(numeric)
        bare = attribute and match.group(3) != ";"
        return html.entities.html5.get(name if bare else name + ";", match.group(0))

    for _ in range(4):  # "&amp;amp;#58;" is three rounds; more is no text a reader reads
        decoded = pattern.sub(replace, text)
        if decoded == text:
            break
        text = decoded
    return text


def _views(text: str, source: bool) -> list[str]:
    """The ways a reader (or a browser) may read ``text``: as rendered (Markdown escapes
    removed, entities decoded), and so with invisible format characters (zero-width, soft
    hyphen) removed and compatibility forms folded (``ｈｔｔｐｓ：／／``); a source also as
    written, entities decoded (a JSON or repr dump escapes nothing for Markdown)."""
    text = text.replace("\\/", "/")  # JSON may escape slashes: https:\/\/a.com\/x
    rendered = _decode(_MD_ESCAPE.sub(r"\1", text))
    visible = "".join(c for c in rendered if unicodedata.category(c) != "Cf")
    views = [rendered, unicodedata.normalize("NFKC", visible)]
    return list(dict.fromkeys(([_decode(text)] if source else []) + views))


def _hosted(url: str) -> bool:
    """Whether ``url`` names something past its scheme: not a bare "https://" or "www."."""
    prefix = _PREFIX.match(url)
    return prefix is not None and any(c.isalnum() for c in url[prefix.end() :])


def _bare(text: str, source: bool) -> list[str]:
    """Every ``http(s):``, ``www.`` and ``host/path`` address in ``text`` in each of its
    readings: through a backslash as a browser reads it, and in a source also up to it."""
    found = []
    for view in _views(text, source):
        for pattern in _BARE if source else _BARE[1:]:
            for match in pattern.finditer(view):
                url = _trim(match.group(0))
                if _hosted(url):
                    found.append(url)
        for match in _FUZZY.finditer(view):
            if match.group(1).lower() not in _FILE_EXTENSIONS:
                found.append(_trim(match.group(0)))
    return found


def _whatwg_trim(url: str) -> str:
    """``url`` as the WHATWG parser first cleans it: no leading or trailing control
    characters or spaces, no tab or newline anywhere."""
    return re.sub(r"[\t\n\r]", "", url.strip(_C0_OR_SPACE))


def _scheme(link: str) -> str | None:
    """The scheme of ``link`` in lower case, None without one (``www.a.com:8080/x`` is a
    host and a port, not the scheme ``www.a.com``)."""
    match = _SCHEME.match(link)
    if match is None or (_HOSTLIKE.match(link) and link[match.end() : match.end() + 1].isdigit()):
        return None
    return match.group(0)[:-1].lower()


def _protocol_relative(link: str) -> bool:
    return link[:2].replace("\\", "/") == "//"


def _destination(value: str, base: str | None) -> str | None:
    """The link ``value`` is, when it is one to check (the addresses written inside it,
    ``mailto:x?body=https://...``, are read as text)."""
    link = _whatwg_trim(value)
    scheme = _scheme(link)
    if not link or scheme in _NOT_A_DOCUMENT:
        return None
    if scheme is not None or _protocol_relative(link) or _HOSTLIKE.match(link):
        return link  # protocol-relative ones fail; an address without a scheme is one
    if base is not None:
        try:
            return join_url(base, link)
        except ValueError:
            return link
    if "//" in link.replace("\\", "/"):
        return link  # "https&#58;//x" decoded once is relative, and hides a host
    return None


def _tag_attributes(text: str) -> list[tuple[str, str, str]]:
    """``(tag, attribute, value)`` of every start tag in ``text``, values decoded as HTML5
    decodes an attribute. Read by a quoted-value-aware pattern rather than ``html.parser``:
    that parser decodes the ``&reg`` of ``?a=1&region=eu`` (a browser does not), skips tags
    inside comments, ``<script>`` and CDATA (a reader of the source still sees them), and
    stops at a malformed declaration; a tag anywhere here is read."""
    found = []
    for tag in _TAG.finditer(text):
        for attribute in _ATTRIBUTE.finditer(tag.group(2)):
            name, value = attribute.group(1).lower(), attribute.group(2)
            if value is None:
                continue
            if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
                value = value[1:-1]
            found.append((tag.group(1).lower(), name, _decode(value, attribute=True)))
    return found


def _attribute_links(name: str, value: str) -> list[str]:
    if name in ("srcset", "imagesrcset"):
        return [part.split()[0] for part in value.split(",") if part.split()]
    if name in ("ping", "archive"):
        return value.split()
    if name == "content":  # <meta http-equiv="refresh" content="0; url=https://...">
        refresh = re.search(r"url\s*=\s*['\"]?([^'\"]+)", value, re.IGNORECASE)
        return [refresh.group(1)] if refresh else []
    return [value] if name in _URL_ATTRIBUTES else []


class _Destinations(MarkdownIt):
    """CommonMark that keeps every destination as written (decoded, never re-encoded) and
    refuses none: a ``javascript:`` link is a link to check, not text."""

    def validateLink(self, url: str) -> bool:
        return True

    def normalizeLink(self, url: str) -> str:
        return url


_MARKDOWN = _Destinations("commonmark").enable(["table", "strikethrough"])


def _markdown_links(text: str, depth: int = 0) -> list[str]:
    """The destinations of every link, image, autolink and reference definition, and of
    those written inside code (``[a](//host)`` shown as code is still a link to a reader)."""
    env: dict[str, Any] = {}
    found: list[str] = []

    def walk(tokens: Sequence[Token]) -> None:
        for token in tokens:
            for name in ("href", "src"):
                value = token.attrGet(name)
                if isinstance(value, str):
                    found.append(value)
            if token.type in ("code_inline", "code_block", "fence") and depth < 2:
                found.extend(_markdown_links(token.content, depth + 1))
            walk(token.children or [])

    walk(_MARKDOWN.parse(text, env))
    found.extend(ref["href"] for ref in env.get("references", {}).values())
    return found


def extract_urls(text: str, *, source: bool = False) -> list[str]:
    """Every URL ``text`` cites, distinct, in the order found (see the module doc): link
    destinations as decoded, then addresses in the text; relative links are left out.
    ``source`` reads a tool's result more ways (a dump's ``\\n`` ends a URL): a reading too
    many there only adds a URL no artifact cites, while in an artifact it would fail one."""
    tags = _tag_attributes(text)
    bases = (v for t, n, v in tags if t == "base" and n == "href")
    base = next((b for b in bases if re.match(r"https?:", _whatwg_trim(b), re.I)), None)
    values = _markdown_links(text) + [
        link for _, name, value in tags for link in _attribute_links(name, value)
    ]
    links = [link for value in values if (link := _destination(value, base)) is not None]
    written = [text] + [value for _, _, value in tags] + values  # what each was read from
    bare = [url for piece in written for url in _bare(piece, source)]
    views = _views(text, source)
    bare = [url for url in dict.fromkeys(bare) if not _short(url, links, views)]
    return list(dict.fromkeys(links + bare))


def _short(url: str, links: Sequence[str], views: Sequence[str]) -> bool:
    """Whether the address ``url`` read in the text is only a link's destination read up to
    a character a bare address stops at (``[a](https://a.com/s?q=[x])``): it is written in
    the text, and wherever it is, that whole destination is, which is checked."""
    longer = [link for link in links if link != url and link.startswith(url)]
    if not longer:
        return False
    seen = [view.count(url) for view in views]
    return any(seen) and any(
        all(count == view.count(link) for count, view in zip(seen, views, strict=True))
        for link in longer
    )


# -- comparing URLs -----------------------------------------------------------------------

# RFC 3986 section 2.3 (rfc3986's own set also counts "!", a sub-delimiter, as unreserved)
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_KEEP = _UNRESERVED | set(rfc3986_chars.RESERVED_CHARS)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _canonical(component: str) -> str:
    """``component`` by RFC 3986 section 6.2.2: every character outside the URI syntax
    escaped (UTF-8), a ``%`` that starts no escape as ``%25``, unreserved escapes decoded,
    hex in upper case; reserved escapes (``%2F``, ``%3F``, ``%26``) stay escaped."""
    out = []
    for index, char in enumerate(component):
        if char == "%" and _ESCAPE.match(component, index):
            out.append(char)
        elif char in _KEEP:
            out.append(char)
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass")))

    def unreserved(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else match.group(0)

    return rfc3986_norm.normalize_percent_characters(_ESCAPE.sub(unreserved, "".join(out)))


def _host(url: URL) -> str:
    """The host a browser asks (WHATWG: UTS 46 non-transitional), accepted only when its
    every Unicode label is valid IDNA 2008: where the two standards part (emoji, symbols),
    which host a reader reaches is not certain."""
    host = url.hostname.removesuffix(".")
    if not host:
        raise UnverifiableURL("names no host")
    if host.startswith("[") or re.fullmatch(r"[0-9.]+", host):
        return host  # an IP address, already canonical (WHATWG reads 0x7f.1 as 127.0.0.1)
    if any(label.startswith("xn--") for label in host.split(".")):
        try:
            if (
                idna.encode(idna.decode(host), uts46=True, transitional=False).decode("ascii")
                != host
            ):
                raise idna.IDNAError("not its own encoding")
        except (idna.IDNAError, UnicodeError) as error:
            msg = f"host {host} is not a valid IDNA 2008 name ({error})"
            raise UnverifiableURL(msg) from None
    return host


def _query(search: str) -> str:
    pairs = []
    for pair in search.removeprefix("?").split("&"):
        name = _canonical(pair.split("=", 1)[0])
        if pair and not _tracking(_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name)):
            pairs.append(_canonical(pair))
    return "&".join(sorted(pairs))


def _tracking(key: str) -> bool:
    key = key.lower()
    return key.startswith("utm_") or key in TRACKING_PARAMS


def normalise_url(url: str) -> str:
    """The key two URLs share when they name the same source (see the module doc):
    ``HTTPS://A.com:443/x/./y/?b=2&utm_source=t&a=1#part`` becomes
    ``https://a.com/x/y?a=1&b=2``; an address without a scheme keys as ``//host/path``.

    Raises:
        UnverifiableURL: ``url`` cannot be any URL a tool returned (protocol-relative, not
            http(s), unparsable, relative, a host outside IDNA 2008).
    """
    link = _whatwg_trim(url)
    scheme = _scheme(link)
    if _protocol_relative(link):
        raise UnverifiableURL("protocol-relative: resolved against nothing")
    if scheme is not None and scheme not in ("http", "https"):
        raise UnverifiableURL(f"a {scheme}: link, not a web source a tool returns")
    if scheme is None and not _HOSTLIKE.match(link):
        if "//" in link.replace("\\", "/"):
            raise UnverifiableURL("a relative link hiding an address: resolved against nothing")
        raise UnverifiableURL("a relative link: it names no source")
    try:
        parsed = URL(link if scheme else "http://" + link)
    except ValueError:
        raise UnverifiableURL("not a URL a browser could open") from None
    host = _host(parsed)
    user = _canonical(parsed.username + (f":{parsed.password}" if parsed.password else ""))
    authority = (f"{user}@" if user else "") + host + (f":{parsed.port}" if parsed.port else "")
    path = rfc3986_norm.remove_dot_segments(_canonical(parsed.pathname)).rstrip("/") or "/"
    query = _query(parsed.search)
    prefix = parsed.protocol if scheme else ""
    return f"{prefix}//{authority}{path}" + (f"?{query}" if query else "")


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
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        return ["kind 'citations' takes 'min': a whole number of distinct sources, at least 1"]
    return []


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
