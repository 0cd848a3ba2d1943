"""What counts as a citation: every URL a text cites, read as a renderer and a browser read it
(:func:`extract_urls`).

A citation is the destination of every Markdown link, image, autolink and reference definition
(markdown-it-py, entities decoded, used or not, in code too), every URL attribute of every
HTML tag anywhere (``href``, ``src``, ``srcset``, ``action``, ``<base href>``, a refresh's
``url=``, ...: values decoded as HTML5 decodes an attribute), and every ``http(s):``,
``www.`` or ``host/path`` address anywhere in the text, code and comments included, looked
for with entities decoded, with Markdown escapes removed, and with invisible format
characters removed and compatibility forms folded (a check that skipped any of these would
be a place to hide an invented source).

A link the check cannot verify is a citation that fails
(:class:`agent.checks.source_identity.UnverifiableURL`): a
protocol-relative ``//host`` link (resolved against nothing), a ``javascript:``, ``data:``,
``file:``, ``ftp:`` or any other scheme but http(s), an unparsable URL, a host that is not
valid IDNA 2008, a relative link hiding ``//``. Not citations: ``mailto:`` and ``tel:`` links
(a person, not a document; URLs written inside them still count), and relative links
(``#part``, ``notes.md``, ``../x``), which name the document's own files, unless a
``<base href>`` makes them absolute.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from ada_url import join_url
from markdown_it import MarkdownIt
from markdown_it.token import Token

from agent.checks.source_identity import HOSTLIKE, link_scheme, protocol_relative, whatwg_trim

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
_NOT_A_DOCUMENT = frozenset({"mailto", "tel"})


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


def _destination(value: str, base: str | None) -> str | None:
    """The link ``value`` is, when it is one to check (the addresses written inside it,
    ``mailto:x?body=https://...``, are read as text)."""
    link = whatwg_trim(value)
    scheme = link_scheme(link)
    if not link or scheme in _NOT_A_DOCUMENT:
        return None
    if scheme is not None or protocol_relative(link) or HOSTLIKE.match(link):
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
    base = next((b for b in bases if re.match(r"https?:", whatwg_trim(b), re.I)), None)
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
