"""What counts as the same source: one key per URL, for both the artifact's side and the
tools' side of the ``citations`` check (:func:`normalise_url`).

The URL is parsed by the WHATWG URL standard (ada-url: what a browser fetches, so ``\\`` is
``/``, ``https:/host`` and ``https:host`` name ``host``, tabs and newlines vanish, ``%2e%2e`` is
``..``, the last ``@`` ends the user info), each internationalised label of its host must be
valid IDNA 2008 (``idna``; UTS 46 non-transitional, so ``faß.de`` is ``xn--fa-hia.de``, never
``fass.de``), then RFC 3986 normalisation (``rfc3986``): escapes of unreserved characters
decoded, hex in upper case, characters outside RFC 3986 escaped, dot segments removed; ``%2F``
stays distinct from ``/``. Kept: everything that changes which server is asked — the scheme
(``http`` is not ``https``), the user info, the host exactly (``www.a.com`` is not ``a.com``), a
non-default port — and the path exactly, case-sensitively, and every query parameter other than
tracking ones. Ignored: the fragment, a default port, one trailing dot of the host, trailing
slashes of the path, an empty query, the order of query parameters, tracking parameters
(``utm_*``, ``fbclid``, ``gclid``, ...). An address without a scheme (``www.a.com/x``) matches
either scheme.
"""

from __future__ import annotations

import re
import string

import idna
from ada_url import URL
from rfc3986 import misc as rfc3986_chars
from rfc3986 import normalizers as rfc3986_norm

TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "igshid", "mc_cid"}
    | {"mc_eid", "_ga", "_gl", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "srsltid"}
)
"""Query parameters that only track who clicked: dropped (with every ``utm_*``) when URLs
are compared."""


class UnverifiableURL(ValueError):
    """A link that cannot be any URL a tool returned; its message says why."""


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
HOSTLIKE = re.compile(r"www\.[^/?#\s]|(?:[^\W_][\w-]*\.)+[^\W\d_]{2,}(?::\d+)?[/?#]", re.IGNORECASE)
"""An address written without a scheme: ``www.`` or a host name, then a path, query or
fragment."""
_C0_OR_SPACE = "".join(map(chr, range(0x21)))


def whatwg_trim(url: str) -> str:
    """``url`` as the WHATWG parser first cleans it: no leading or trailing control
    characters or spaces, no tab or newline anywhere."""
    return re.sub(r"[\t\n\r]", "", url.strip(_C0_OR_SPACE))


def link_scheme(link: str) -> str | None:
    """The scheme of ``link`` in lower case, None without one (``www.a.com:8080/x`` is a
    host and a port, not the scheme ``www.a.com``)."""
    match = _SCHEME.match(link)
    if match is None or (HOSTLIKE.match(link) and link[match.end() : match.end() + 1].isdigit()):
        return None
    return match.group(0)[:-1].lower()


def protocol_relative(link: str) -> bool:
    """Whether ``link`` starts ``//`` (a browser reads ``\\`` as ``/``): a host, no scheme."""
    return link[:2].replace("\\", "/") == "//"


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
    link = whatwg_trim(url)
    scheme = link_scheme(link)
    if protocol_relative(link):
        raise UnverifiableURL("protocol-relative: resolved against nothing")
    if scheme is not None and scheme not in ("http", "https"):
        raise UnverifiableURL(f"a {scheme}: link, not a web source a tool returns")
    if scheme is None and not HOSTLIKE.match(link):
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
