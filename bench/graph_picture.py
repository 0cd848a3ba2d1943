"""Draw the compiled graph as docs/images/graph.png, offline.

The Mermaid text is ``build_graph().get_graph().draw_mermaid()`` (the same text the README
and docs/architecture.md hold, tested in tests/integration/test_graph_picture.py); it is
rendered by mermaid's own bundle in headless Chromium (``tests/js/render_mermaid.mjs``), and
the PNG keeps the sha256 of the text it was drawn from in a ``tEXt`` chunk, so a test can tell
a stale picture. Needs Node, Debian's Chromium, and a folder whose ``node_modules`` holds
``playwright-core`` and ``mermaid``::

    python bench/graph_picture.py --modules DIR [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "docs" / "images" / "graph.png"
KEY = b"deepreflect-mermaid-sha256"


def mermaid_text() -> str:
    sys.path.insert(0, str(ROOT))
    from agent import build_graph

    return build_graph().get_graph().draw_mermaid()


def source_digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()


def with_text_chunk(png: bytes, key: bytes, value: str) -> bytes:
    """``png`` with a ``tEXt`` chunk ``key=value`` right after its header chunk."""
    data = key + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF)
    end_of_header = 8 + 4 + 4 + 13 + 4  # signature, then IHDR's length, type, data and CRC
    return png[:end_of_header] + chunk + png[end_of_header:]


def text_chunks(png: bytes) -> dict[bytes, bytes]:
    """The ``tEXt`` chunks of a PNG, key to value."""
    found, at = {}, 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            found[key] = value
        at += 12 + length
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", required=True, help="folder with node_modules/mermaid")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    text = mermaid_text()
    with tempfile.TemporaryDirectory() as tmp:
        source, drawn = Path(tmp) / "graph.mmd", Path(tmp) / "graph.png"
        source.write_text(text)
        script = ROOT / "tests" / "js" / "render_mermaid.mjs"
        subprocess.run(
            ["node", str(script), args.modules, args.chromium, str(source), str(drawn)], check=True
        )
        PICTURE.write_bytes(with_text_chunk(drawn.read_bytes(), KEY, source_digest(text)))
    print(f"{PICTURE.relative_to(ROOT)} drawn from {source_digest(text)[:12]}")


if __name__ == "__main__":
    main()
