"""PostgreSQL connection URLs: parsed leniently, passed to psycopg intact, never shown with
their password (in any spelling: raw, percent-encoded, in the query string)."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, urlsplit

_PG_SCHEMES = ("postgresql://", "postgres://")
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)")


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL server rather than a SQLite file."""
    return location.startswith(_PG_SCHEMES)


_USERINFO = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*")
_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[^\s:/?#\[\]@,]*)(?::\d*)?"
_HOSTS = re.compile(rf"{_HOST}(?:,{_HOST})*")


def _well_formed(userinfo: str | None, hosts: str, path: str, query: str) -> bool:
    """Whether a URL split as RFC 3986 says is one its writer meant (see split_pg_url)."""
    return (
        (userinfo is None or bool(_USERINFO.fullmatch(userinfo)))
        and bool(_HOSTS.fullmatch(hosts))
        and "@" not in path
        and all("=" in pair for pair in query.split("&") if pair)
    )


def split_pg_url(url: str) -> tuple[str, str | None, str]:
    """``url`` as (``scheme://``, the user info or None, the hosts and everything after).

    A well-formed URL splits where RFC 3986 says. A password with an unencoded ``@ / ? # %``
    or a space makes the URL malformed: psycopg would read part of the password as a host,
    a port or a database name and quote it in its error. A malformed URL's user info runs to
    its last ``@``, which is what its writer meant unless a database name holds an ``@``.
    """
    scheme, _, rest = url.partition("://")
    head = f"{scheme}://"
    end = next((i for i, char in enumerate(rest) if char in "/?#"), len(rest))
    authority, tail = rest[:end], urlsplit(rest[end:])
    userinfo, at, hosts = authority.rpartition("@")
    if _well_formed(userinfo if at else None, hosts, tail.path, tail.query):
        return (head, userinfo, rest[len(userinfo) + 1 :]) if at else (head, None, rest)
    if "@" not in rest:
        return head, None, rest
    last = rest.rindex("@")
    return head, rest[:last], rest[last + 1 :]


def _encoded(text: str) -> str:
    """``text`` percent-encoded once, whether or not it was already (a raw ``%`` is kept)."""
    return quote(unquote(text), safe="")


def pg_conninfo(url: str) -> str:
    """``url`` with its user info and password parameter percent-encoded as libpq expects.

    An unencoded ``%``, ``@`` or ``/`` in a password otherwise breaks the URL: libpq refuses
    it and quotes the offending text, the password, in its error message.
    """
    head, userinfo, hosts = split_pg_url(url)
    if userinfo is not None:
        user, colon, password = userinfo.partition(":")
        fixed = _encoded(user) + (f":{_encoded(password)}" if colon else "")
        url = f"{head}{fixed}@{hosts}"
    return _QUERY_PASSWORD.sub(lambda m: m.group(1) + _encoded(m.group(2)), url)


def _passwords(url: str) -> list[str]:
    """Every password in ``url``, in each form an error message could quote it."""
    _, userinfo, _ = split_pg_url(url)
    raw = [m.group(2) for m in _QUERY_PASSWORD.finditer(url)]
    if userinfo is not None and ":" in userinfo:
        raw.append(userinfo.partition(":")[2])
    forms = {form for text in raw for form in (text, unquote(text), _encoded(text)) if form}
    return sorted(forms, key=len, reverse=True)


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    head, userinfo, hosts = split_pg_url(url)
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        url = f"{head}{user}{':***' if colon else ''}@{hosts}"
    return _QUERY_PASSWORD.sub(r"\1***", url)


def scrub(text: str, location: str) -> str:
    """``text`` without any password of the database URL ``location`` (psycopg may quote it)."""
    if not is_postgres_url(location):
        return text
    for secret in _passwords(location):
        text = text.replace(secret, "***")
    return text
