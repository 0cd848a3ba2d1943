"""Suite-wide pytest configuration: the markers the tiers use, and strict checkpoints.

State is plain data (design.md): with ``LANGGRAPH_STRICT_MSGPACK`` a checkpoint holding any
other object (a ``StrEnum`` member written into state, say) fails to load, so every test that
resumes or reads a thread checks it. Set before LangGraph is imported; servers and
subprocesses the tests start inherit it."""

import os

os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "real_model: runs a real small model on llama.cpp's server (tests/real_model.py); "
        'skipped when it is not installed, deselect with -m "not real_model"',
    )
