"""What is wrong with a threads database, as a usage error that names it (never with its
password) and says what is wrong: damaged, not a database, read-only, unreachable, empty."""

from __future__ import annotations

import sqlite3
import sys

from agent.errors import ConfigError
from agent.store.pg_url import redact, scrub

NOT_SQLITE = "it is not a SQLite database"
_DAMAGED = "it is damaged (truncated or corrupt)"


class NoThreads(ConfigError):
    """A reader (``write=False``) found no threads database there: nothing was created."""


def is_database_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the threads database (SQLite or PostgreSQL)."""
    if isinstance(exc, sqlite3.Error):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.Error)


def is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the SQLite file is not a database or is corrupt: no resume helps."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.DatabaseError) and name.startswith(
        ("SQLITE_NOTADB", "SQLITE_CORRUPT")
    )


# SQLite's error names (Python 3.11+: ``exc.sqlite_errorname``) and what they mean here;
# True where the file itself is bad, so moving it aside is the way out.
_SQLITE_PROBLEMS = (
    ("SQLITE_NOTADB", NOT_SQLITE, True),
    ("SQLITE_CORRUPT", _DAMAGED, True),
    ("SQLITE_READONLY", "this process may not write it", False),
    ("SQLITE_PERM", "this process may not write it", False),
    ("SQLITE_CANTOPEN", "it cannot be opened", False),
)


def database_problem(location: str, exc: BaseException) -> ConfigError:
    """The usage error for a database failure: which database, and what is wrong with it."""
    if not isinstance(exc, sqlite3.Error):
        return postgres_problem(location, exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    what, bad_file = next(
        ((what, bad) for prefix, what, bad in _SQLITE_PROBLEMS if name.startswith(prefix)),
        ("it cannot be used", False),
    )
    return unusable(location, f"{what} (SQLite: {exc})", bad_file=bad_file)


def postgres_problem(location: str, exc: BaseException) -> ConfigError:
    """The usage error for a PostgreSQL failure, with the URL's password taken out."""
    msg = f"cannot use PostgreSQL at {redact(location)}: {scrub(str(exc).strip(), location)}"
    return ConfigError(msg)


def unusable(location: str, what: str, *, bad_file: bool = True) -> ConfigError:
    """The usage error for a threads database that cannot serve: which one, and why."""
    msg = f"the threads database {location} is unusable: {what}"
    if bad_file:
        msg += "; move it aside or use another"
    return ConfigError(msg)
