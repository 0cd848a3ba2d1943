"""A PostgreSQL server for the tests: ``$DEEPREFLECT_TEST_PG``, or a throwaway local cluster.

Use it from a test module with ``pytest_plugins = ["tests.postgres"]`` and the ``postgres_url``
fixture. Without ``$DEEPREFLECT_TEST_PG`` the fixture runs the installed server binaries
(Debian's ``/usr/lib/postgresql/<version>/bin``, or ``initdb`` on ``PATH``): ``initdb`` a
fresh cluster in a temporary directory and start it with ``pg_ctl`` on a free port, listening
on 127.0.0.1 only, its unix socket inside that directory. ``initdb`` refuses to run as root,
so as root the server runs as the ``postgres`` system user (created by Debian's package).
The server is stopped and the directory removed when the session ends. When no server can
be started, the tests that need one are skipped with the reason.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV_URL = "DEEPREFLECT_TEST_PG"


class Unavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def find_bindir() -> Path | None:
    """A directory holding ``initdb`` and ``pg_ctl``, newest Debian version first."""

    def version(path: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path))

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    candidates += ["/usr/local/pgsql/bin"]
    if initdb := shutil.which("initdb"):
        candidates.append(os.path.dirname(initdb))
    for directory in candidates:
        if all(os.access(os.path.join(directory, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            return Path(directory)
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalPostgres:
    """One throwaway cluster: :meth:`start` returns its URL, :meth:`stop` removes it."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.as_user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                self.as_user = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable(
                    "running as root and there is no 'postgres' user to run initdb as"
                ) from None
        # As root, the server user must reach the directory: /tmp rather than a private TMPDIR.
        base = "/tmp" if self.as_user and os.path.isdir("/tmp") else None
        self.root = Path(tempfile.mkdtemp(prefix="deepreflect-pg-", dir=base))
        if self.as_user:
            os.chown(self.root, self.as_user.pw_uid, self.as_user.pw_gid)
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.started = False

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        kwargs: dict = {}
        if self.as_user:
            env["HOME"] = str(self.root)
            kwargs = {
                "user": self.as_user.pw_uid,
                "group": self.as_user.pw_gid,
                "extra_groups": [],
            }
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            **kwargs,
        )

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-5:])
        except OSError:
            return ""

    def start(self) -> str:
        init = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )
        if init.returncode != 0:
            raise Unavailable(f"initdb failed: {(init.stderr or init.stdout).strip()[-500:]}")
        problem = ""
        for _attempt in range(3):  # a free port may be taken before the server binds it
            port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {self.root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            ctl = self._run(
                *("pg_ctl", "-D", str(self.data), "-l", str(self.log)),
                *("-o", options, "-w", "-t", "30", "start"),
            )
            if ctl.returncode == 0:
                self.started = True
                return f"postgresql://postgres@127.0.0.1:{port}/postgres"
            problem = f"{(ctl.stderr or ctl.stdout).strip()[-300:]} {self._log_tail()}"
        raise Unavailable(f"pg_ctl could not start the server: {problem}")

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A ``postgresql://`` URL of a running server; skips the test when none can start."""
    if url := os.environ.get(ENV_URL):
        yield url
        return
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) found: "
            f"`apt-get install postgresql` or set ${ENV_URL}"
        )
    try:
        server = LocalPostgres(bindir)
    except Unavailable as exc:
        pytest.skip(f"cannot start PostgreSQL: {exc}")
    try:
        url = server.start()
    except (Unavailable, OSError, subprocess.SubprocessError) as exc:
        server.stop()
        pytest.skip(f"cannot start PostgreSQL from {bindir}: {exc}")
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def threads_db(request, tmp_path) -> str:
    """Where threads live, once per backend: a SQLite file, then a real PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.sqlite")
    if importlib.util.find_spec("langgraph.checkpoint.postgres") is None:
        pytest.skip("PostgreSQL threads need `pip install -e '.[postgres]'`")
    return fresh_database(request.getfixturevalue("postgres_url"))


def fresh_database(server_url: str) -> str:
    """A new, empty database on the server, so a test sees only the threads it made."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
