"""`langgraph dev` for the server tests (Python SDK and JavaScript SDK): a free port, and its
log and state in a temporary folder, never in the checkout.

The server keeps its state in `.langgraph_api/` under its working folder, so it runs in a
temporary folder with a copy of the project's config whose paths point back at the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STATE = ".langgraph_api"  # where `langgraph dev` pickles its threads: its working folder


def langgraph_missing() -> str | None:
    """Why `langgraph dev` cannot run here, or None."""
    if shutil.which("langgraph") is None:
        return "langgraph-cli is not installed (pip install -e '.[dev]')"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _absolute(spec: str) -> str:
    """A config path (``./graphs/x.py:graph``, ``.``) as an absolute path into the checkout."""
    path, sep, attr = spec.partition(":")
    if not path.startswith(".") and not path.startswith("/"):
        return spec  # a module name or package, not a path
    return str((ROOT / path).resolve()) + sep + attr


def served_config(name: str, folder: Path) -> Path:
    """The checkout's config ``name`` written into ``folder``, every path made absolute."""
    config: dict[str, Any] = json.loads((ROOT / name).read_text())
    config["dependencies"] = [_absolute(d) for d in config.get("dependencies", [])]
    config["graphs"] = {
        graph: _absolute(spec)
        if isinstance(spec, str)
        else {**spec, "path": _absolute(spec["path"])}
        for graph, spec in config.get("graphs", {}).items()
    }
    if isinstance(config.get("env"), str):  # a .env file
        config["env"] = _absolute(config["env"])
    for key, field in (("checkpointer", "path"), ("store", "path"), ("auth", "path")):
        if isinstance(config.get(key), dict) and isinstance(config[key].get(field), str):
            config[key] = {**config[key], field: _absolute(config[key][field])}
    if isinstance(config.get("http"), dict) and isinstance(config["http"].get("app"), str):
        config["http"] = {**config["http"], "app": _absolute(config["http"]["app"])}
    target = folder / Path(name).name
    target.write_text(json.dumps(config, indent=2))
    return target


def _ready(url: str) -> bool:
    """The server answers and serves the ``deep_agent`` graph."""
    request = urllib.request.Request(
        f"{url}/assistants/search",
        data=json.dumps({"graph_id": "deep_agent"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return bool(json.load(response))
    except (OSError, urllib.error.URLError, ValueError):
        return False


@contextmanager
def dev_server(
    log: Path, config: str = "langgraph.json", env_extra: Mapping[str, str] | None = None
) -> Iterator[str]:
    """`langgraph dev --no-browser --no-reload` on a free port; yields its URL.

    Its state and the copy of ``config`` live in a temporary folder removed afterwards, so
    the checkout gains no `.langgraph_api/` (checked on the way out); the host's model keys
    are not passed on (the tests use scripted models).
    """
    langgraph = shutil.which("langgraph")
    if langgraph is None:
        raise RuntimeError(langgraph_missing())
    checkout_state = ROOT / STATE
    had_state = checkout_state.exists()
    workdir = Path(tempfile.mkdtemp(prefix="deepreflect-langgraph-dev-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(env_extra or {})
    command = [
        langgraph,
        "dev",
        "--no-browser",
        "--no-reload",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--config",
        str(served_config(config, workdir)),
    ]
    with open(log, "w") as handle:
        server = subprocess.Popen(
            command,
            cwd=workdir,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while not _ready(url):
            if server.poll() is not None or time.monotonic() > deadline:
                msg = "langgraph dev did not start:\n" + log.read_text()[-3000:]
                raise RuntimeError(msg)
            time.sleep(0.5)
        yield url
    finally:
        _stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
        if not had_state and checkout_state.exists():  # leave the checkout as it was found
            shutil.rmtree(checkout_state, ignore_errors=True)
            raise AssertionError(f"langgraph dev wrote {checkout_state} into the checkout")


def _stop(server: subprocess.Popen) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=20)
