"""The ``real_model`` test tier: a real small model served on loopback for the tests.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, assembled and verified by
``bench/local_model.py``) is served by llama.cpp's server from the ``xllamacpp`` wheel, in a
subprocess, on a free 127.0.0.1 port, once per test session.

Whether the tier runs is set by ``DEEPREFLECT_REAL_MODEL``:

- unset: it runs when ``xllamacpp`` is installed (``pip install -e '.[local-model]'``) and
  the model is already assembled (``python bench/local_model.py ensure --size 0.5b``), and
  is skipped with the reason otherwise. Nothing is downloaded.
- ``1``: it must run: the model is assembled if it is missing (a download of ~490 MB),
  and anything missing fails the tier instead of skipping it (CI sets this).
- ``0``: skipped (a quick local run of the suite; or ``pytest -m "not real_model"``).

The server runs one request at a time on one thread (``DEEPREFLECT_REAL_MODEL_THREADS``
sets more; see ``THREADS_ENV`` for why one).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ENV = "DEEPREFLECT_REAL_MODEL"
SIZE = "0.5b"
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "local_model.py"
STARTUP_TIMEOUT_S = 180.0
# one request at a time on a CPU server; room for a subagent's tool turns
N_CTX = 8192
N_PREDICT = 768
"""Most tokens of one answer: a plan of a few steps fits; a model that loops stops there."""
# One thread: with a core taken by anything else, llama.cpp's two threads wait on each
# other and generation collapses (measured on the 2-core machine, one core busy: 2 threads
# 2.8-14 tokens/s, 1 thread 35 tokens/s; with both cores free 2 threads give 50).
THREADS_ENV = "DEEPREFLECT_REAL_MODEL_THREADS"


@dataclass(frozen=True)
class RealModel:
    """The served model, as the tests use it."""

    spec: str  # the model spec for deepreflect: openai:<name>
    base_url: str  # OPENAI_BASE_URL: http://127.0.0.1:<port>/v1
    port: int
    size: str
    path: Path  # the verified GGUF file
    startup_s: float  # from spawning the server to its first healthy answer


def local_model() -> ModuleType:
    """``bench/local_model.py`` as a module (``bench`` is no package)."""
    spec = importlib.util.spec_from_file_location("deepreflect_local_model", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


def mode() -> str:
    """``"auto"``, ``"require"`` or ``"off"``, from ``DEEPREFLECT_REAL_MODEL``."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on", "require"):
        return "require"
    return "auto"


def unavailable(size: str = SIZE) -> str | None:
    """Why the tier cannot run here (the skip reason), or None when it can. With
    ``DEEPREFLECT_REAL_MODEL=1`` a missing model is assembled first."""
    if mode() == "off":
        return f"{ENV}=0: the real-model tier is switched off"
    if importlib.util.find_spec("xllamacpp") is None:
        return (
            "xllamacpp is not installed (pip install -e '.[local-model]'): "
            "the real-model tier needs llama.cpp's server"
        )
    lm = local_model()
    if lm.verified(size) is not None:
        return None
    if mode() == "require":
        lm.ensure(size)  # raises ModelError, which fails the tier
        return None
    return (
        f"the {size} model is not assembled in {lm.cache_dir()}: run "
        f"`python bench/local_model.py ensure --size {size}` (or set {ENV}=1)"
    )


@contextmanager
def served(size: str = SIZE) -> Iterator[RealModel]:
    """Serve the model in a subprocess on a free loopback port until the block exits."""
    lm = local_model()
    path = lm.verified(size)
    if path is None:
        raise RuntimeError(f"the {size} model is not assembled: run {SCRIPT} ensure --size {size}")
    with tempfile.TemporaryDirectory(prefix="deepreflect-llama-") as logs:
        yield from _serve(lm, size, path, Path(logs) / "server.log")


def _serve(lm: ModuleType, size: str, path: Path, log_path: Path) -> Iterator[RealModel]:
    port = lm.free_port()
    threads = os.environ.get(THREADS_ENV, "1")
    command = [sys.executable, str(SCRIPT), "serve", "--size", size, "--port", str(port)]
    command += ["--n-ctx", str(N_CTX), "--n-parallel", "1", "--threads", threads]
    command += ["--n-predict", str(N_PREDICT)]  # a looping answer ends, it does not time out
    start = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        while not lm.healthy(port):
            if process.poll() is not None or time.monotonic() - start > STARTUP_TIMEOUT_S:
                tail = log_path.read_text(errors="replace")[-3000:]
                msg = f"llama.cpp's server did not start on port {port}:\n{tail}"
                raise RuntimeError(msg)
            time.sleep(0.5)
        yield RealModel(
            spec=f"openai:{lm.spec(size).name}",
            base_url=f"http://127.0.0.1:{port}/v1",
            port=port,
            size=size,
            path=path,
            startup_s=time.monotonic() - start,
        )
    finally:
        lm.stop(process)


@contextmanager
def session_server(size: str = SIZE) -> Iterator[RealModel]:
    """What the tier's session fixture does: skip (or, with ``DEEPREFLECT_REAL_MODEL=1``,
    fail) with the reason, else serve the model for the session."""
    reason = unavailable(size)
    if reason is not None:
        if mode() == "require":
            pytest.fail(f"{ENV}=1 but {reason}")
        pytest.skip(reason)
    with served(size) as model:
        yield model


def point_openai_at(model: RealModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """``openai:`` models of this test go to the served model. Per test, never for the
    session: the tests after the tier must not find ``OPENAI_BASE_URL`` set."""
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "local-llama-server")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # never through a proxy
