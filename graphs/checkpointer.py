"""Optional: keep `langgraph dev`'s checkpoints in SQLite instead of its in-memory store.

Used by `langgraph.sqlite.json` (`langgraph dev --config langgraph.sqlite.json`); the file is
`$DEEPREFLECT_SERVER_DB`, by default `.deepreflect/server.sqlite`.
"""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


@asynccontextmanager
async def sqlite_checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    """The server's checkpointer: one SQLite file, opened for the server's lifetime."""
    path = Path(os.environ.get("DEEPREFLECT_SERVER_DB", ".deepreflect/server.sqlite"))
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await saver.setup()
        yield saver
