"""Threads in a real PostgreSQL server (pausing in one process and resuming from another is
tests/test_cli.py's escalation test, run against both SQLite and PostgreSQL).

The server comes from ``tests/postgres.py`` (``$DEEPREFLECT_TEST_PG`` or a throwaway local
cluster); without one these tests are skipped with the reason.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip(
    "langgraph.checkpoint.postgres",
    reason="PostgreSQL threads need `pip install -e '.[postgres]'` (langgraph-checkpoint-postgres)",
)

from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402

from agent import Context, build_graph, open_checkpointer, run  # noqa: E402
from agent.cli import main  # noqa: E402
from agent.runs.runner import thread_config  # noqa: E402

pytest_plugins = ["tests.postgres"]

DEMO_FILES = {"notes/requirements.md", "test_slugify.py", "slugify.py", "README.md"}


def test_a_fresh_saver_sees_every_file_of_a_finished_thread(postgres_url):
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        graph = build_graph(checkpointer=saver)
        result = run(graph, "demo goal", context=Context(model="scripted:demo"))
        first = graph.get_state(thread_config(result["thread_id"])).values
    assert result["status"] == "success" and result["plan_version"] == 2
    assert set(result["artifacts"]) == DEMO_FILES

    # A new connection and a new graph rebuild the DeltaChannel keys from stored writes only.
    with open_checkpointer(postgres_url.replace("postgresql://", "postgres://", 1)) as saver:
        assert isinstance(saver, PostgresSaver)
        again = build_graph(checkpointer=saver).get_state(thread_config(result["thread_id"]))
    values = again.values
    assert {path: entry["status"] for path, entry in values["files"].items()} == dict.fromkeys(
        DEMO_FILES, "done"
    )
    for key in ("files", "trajectory", "decisions", "plan_history", "plan", "status"):
        assert values[key] == first[key], key
    assert "def slugify" in values["files"]["slugify.py"]["content"]
    assert [d["decision"] for d in values["decisions"]][-1] == "end"


def test_deepreflect_db_selects_postgres(postgres_url, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DEEPREFLECT_DB", postgres_url)
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--scenario", "happy", "--json"]) == 0
    thread_id = json.loads(capsys.readouterr().out)["thread_id"]
    assert main(["show", thread_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "success"
    assert not (tmp_path / ".deepreflect").exists()  # nothing went to the SQLite default


def test_an_unreachable_server_is_a_usage_error_without_the_password(capsys, monkeypatch):
    # Port 1 on the loopback refuses at once; no server needed for this one.
    monkeypatch.setenv("COLUMNS", "500")  # rich would wrap the URL
    assert main(["threads", "--db", "postgresql://bob:s3cret@127.0.0.1:1/deepreflect"]) == 2
    err = capsys.readouterr().err
    assert "cannot use PostgreSQL at postgresql://bob:***@127.0.0.1:1/deepreflect" in err
    assert "s3cret" not in err


@pytest.mark.parametrize("mode", ["after_call", "in_call"])
def test_a_side_effect_is_journaled_in_postgres_across_a_crash(postgres_url, tmp_path, mode):
    """The tool journal lives in the server too (agent.store.journal.PostgresJournal): killed after
    the call, the resume reuses its result; killed inside it, the resume asks, with the key."""
    from agent import resume
    from tests.integration.test_side_effects import crash
    from tests.side_effects import email_tool, emailer, roles_for

    thread = f"crash-{mode}-{tmp_path.name}"
    outbox = crash(postgres_url, tmp_path / "outbox", mode, thread)
    with open_checkpointer(postgres_url) as saver:
        graph = build_graph(
            models=roles_for(emailer()), checkpointer=saver, tools={"coder": [email_tool(outbox)]}
        )
        result = resume(graph, thread, None, context=Context(model="scripted:happy"))
        if mode == "after_call":
            assert result["status"] == "success"
        else:
            request = result["escalation"]["action_requests"][0]
            assert result["status"] == "awaiting_input"
            assert request["kind"] == "unknown_outcome"
            assert request["idempotency_key"].startswith("dr-")
    assert len(outbox.sent()) == 1


def test_postgres_lease_tokens_grow_with_every_acquisition_across_savers(postgres_url):
    from agent.store.lease import hold
    from tests.postgres import fresh_database

    url = fresh_database(postgres_url)
    tokens = []
    with PostgresSaver.from_conn_string(url) as first, PostgresSaver.from_conn_string(url) as other:
        for saver, thread_id in [(first, "t"), (other, "t"), (first, "u"), (other, "t")]:
            with hold(saver, thread_id) as lease:
                tokens.append(lease.token)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
