"""The databases a user declares for ``sql`` checks: a plan names one, only the user gives its path.

A check's ``db`` is chosen by the planner, i.e. by a model, so it is a name and never a path:
``build_graph(databases={name: path})``, ``Context.databases`` ("name=path,name=path",
``$DEEPREFLECT_DATABASES``) and the CLI's ``--database NAME=PATH`` map names to SQLite files,
resolved to absolute paths when declared. Standard library only: the CLI and ``Context``
import it before anything heavy.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "SQLITE_HEADER",
    "DatabaseError",
    "absolute",
    "database_problem",
    "declare_databases",
    "format_databases",
    "is_database_name",
    "parse_databases",
]

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite 3 database file."""
# Identifier-like and without "." or "/": a declared name never looks like a file path.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
# A comma starts the next declaration only where a name and "=" follow it, so a path with a
# comma in it survives the text form.
_NEXT = re.compile(r",\s*(?=[A-Za-z_][A-Za-z0-9_-]{0,63}\s*=)")


class DatabaseError(ValueError):
    """A declaration that cannot be used; the message names the database."""


def is_database_name(name: object) -> bool:
    """A name a declaration may use: a letter or ``_``, then letters, digits, ``_`` or ``-``."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def parse_databases(text: str) -> dict[str, str]:
    """``"name=path,name=path"`` as ``{name: path}``, paths as written; raises
    :class:`DatabaseError` for an entry without ``=``, a bad name or a name given twice."""
    declared: dict[str, str] = {}
    for entry in _NEXT.split(text.strip()) if text.strip() else []:
        name, equals, path = entry.partition("=")
        name, path = name.strip(), path.strip()
        if not equals or not path:
            msg = f"{entry.strip()!r} is not NAME=PATH"
            raise DatabaseError(msg)
        _check_name(name)
        if name in declared:
            msg = f"database {name!r} is declared twice"
            raise DatabaseError(msg)
        declared[name] = path
    return declared


def format_databases(declared: Mapping[str, str]) -> str:
    """The text form :func:`parse_databases` reads back; raises :class:`DatabaseError`
    when a path would not survive it (it holds ``,name=``)."""
    text = ",".join(f"{name}={path}" for name, path in declared.items())
    if parse_databases(text) != dict(declared):
        msg = f"the paths of {', '.join(declared)} cannot be written as name=path,name=path"
        raise DatabaseError(msg)
    return text


def declare_databases(
    databases: Mapping[str, str | os.PathLike[str]] | str | None,
) -> dict[str, str]:
    """Validated declarations, each path absolute (relative ones are resolved against the
    working directory now, never later); raises :class:`DatabaseError` for the first bad one."""
    if databases is None:
        return {}
    if isinstance(databases, str):
        databases = parse_databases(databases)
    if not isinstance(databases, Mapping):
        msg = f"databases must map names to paths, not {type(databases).__name__}"
        raise DatabaseError(msg)
    declared: dict[str, str] = {}
    for name, path in databases.items():
        _check_name(name)
        if not isinstance(path, str | os.PathLike) or not os.fspath(path):
            msg = f"database {name!r} needs the path of an SQLite file, not {path!r}"
            raise DatabaseError(msg)
        full = absolute(os.fspath(path))
        if problem := database_problem(full):
            msg = f"database {name!r}: {full} {problem}"
            raise DatabaseError(msg)
        declared[name] = full
    return declared


def absolute(path: str) -> str:
    """``path`` made absolute (``~`` expanded, symlinks resolved) without touching the file."""
    return str(Path(path).expanduser().resolve())


def database_problem(path: str) -> str | None:
    """Why ``path`` is not an SQLite file that can be read, as a phrase to follow its name
    ("cannot be read (...)", "is not a file"), or None when it is one."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a file"
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if header != SQLITE_HEADER:
        return "is not an SQLite database (its first bytes are not 'SQLite format 3')"
    return None


def _check_name(name: object) -> None:
    if not is_database_name(name):
        msg = (
            f"database name {name!r} must be a letter or '_' followed by letters, digits, "
            "'_' or '-' (at most 64)"
        )
        raise DatabaseError(msg)
