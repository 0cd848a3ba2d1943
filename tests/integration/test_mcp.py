"""MCP servers: the config file, its validation, the tools of a real FastMCP server over stdio
(tests/mcp_server.py) and streamable HTTP, and full runs where a subagent calls one."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from importlib.util import find_spec
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from agent import build_graph, run
from agent.errors import ConfigError
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config
from agent.tools.mcp import atools_from_config, read_config, tools_from_config
from tests.fakes import END, ROOT, ctx, models, sqlite_graph, step

SERVER = str(Path(ROOT) / "tests" / "mcp_server.py")
FACT = "deepreflect's reflection loop was measured at 0.731 convergence"  # tests/mcp_server.py
needs_mcp = pytest.mark.skipif(
    find_spec("langchain_mcp_adapters") is None or find_spec("mcp") is None,
    reason="needs the mcp extra: pip install -e '.[mcp]'",
)


def write_config(tmp_path: Path, servers: dict, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def stdio_server(tmp_path: Path, **extra) -> dict:
    """The test server over stdio, counting its calls in ``tmp_path/calls.txt``."""
    env = {"MCP_TEST_CALLS": str(tmp_path / "calls.txt"), **extra.pop("env", {})}
    return {"command": sys.executable, "args": [SERVER], "env": env, **extra}


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.txt"
    return path.read_text().split() if path.exists() else []


def text_of(output) -> str:
    """The text of an MCP tool's result (a list of content blocks)."""
    return "".join(block["text"] for block in output if block.get("type") == "text")


# -- the config file -------------------------------------------------------------------------


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        tools_from_config(tmp_path / "nope.json")


def test_a_file_that_is_not_json_is_a_config_error(tmp_path):
    (tmp_path / "bad.json").write_text("{mcpServers: }")
    with pytest.raises(ConfigError, match="not valid JSON"):
        tools_from_config(tmp_path / "bad.json")


@pytest.mark.parametrize(
    ("servers", "words"),
    [
        ([], 'needs an object "mcpServers"'),
        ({"s": {"args": ["x"]}}, "server 's': needs \"command\""),
        ({"s": {"transport": "stdio"}}, '"command" must be a non-empty string'),
        ({"s": {"transport": "sse"}}, '"url" must be a non-empty string'),
        ({"s": {"transport": "pigeon", "url": "http://x"}}, "unknown transport 'pigeon'"),
        ({"s": {"url": "ftp://x"}}, "http:// or https://"),
        ({"s": {"command": "x", "args": "y"}}, '"args" must be a list of strings'),
        ({"s": {"command": "x", "env": {"A": 1}}}, '"env" must be an object of strings'),
        ({"s": {"command": "x", "roles": []}}, '"roles" must be a non-empty list'),
        ({"s": {"command": "x", "roles": ["not a role"]}}, '"roles" must name subagents'),
        ({"s": "python server.py"}, "must be an object"),
    ],
)
def test_a_bad_server_entry_is_a_config_error_naming_it(tmp_path, servers, words):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace("[", r"\[")):
        read_config(path)


def test_entries_read_as_the_usual_shape_with_roles_defaulting_to_researcher_and_coder(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("DOCS_TOKEN", "s3cret")
    path = write_config(
        tmp_path,
        {
            "local": {"command": "python", "args": ["s.py"], "env": {"K": "${DOCS_TOKEN}"}},
            "remote": {
                "type": "http",
                "url": "https://mcp.example/mcp",
                "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                "roles": ["researcher"],
            },
            "events": {"transport": "sse", "url": "http://127.0.0.1:1/sse", "roles": ["writer"]},
            "off": {"command": "python", "disabled": True},
        },
    )
    local, remote, events = read_config(path)
    assert local.connection == {
        "transport": "stdio",
        "command": "python",
        "args": ["s.py"],
        "env": {"K": "s3cret"},
    }
    assert local.roles == ("researcher", "coder")
    assert remote.connection["transport"] == "streamable_http"
    assert remote.connection["headers"] == {"Authorization": "Bearer s3cret"}
    assert remote.roles == ("researcher",)
    assert events.connection["transport"] == "sse" and events.roles == ("writer",)
    assert [s.roles for s in read_config(path, default_roles=["coder"])][0] == ("coder",)


def test_vs_codes_servers_key_is_read_too(tmp_path):
    (tmp_path / "mcp.json").write_text(json.dumps({"servers": {"s": {"command": "x"}}}))
    assert [s.name for s in read_config(tmp_path / "mcp.json")] == ["s"]


def test_an_unset_variable_is_a_config_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    path = write_config(tmp_path, {"s": {"command": "x", "env": {"K": "${NOT_SET_ANYWHERE}"}}})
    with pytest.raises(ConfigError, match=r"\$\{NOT_SET_ANYWHERE\}"):
        read_config(path)
    path = write_config(tmp_path, {"s": {"command": "x", "env": {"K": "${NOT_SET_ANYWHERE:-d}"}}})
    assert read_config(path)[0].connection["env"] == {"K": "d"}


def test_without_langchain_mcp_adapters_the_error_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain_mcp_adapters.client", None)
    path = write_config(tmp_path, {"s": {"command": "x"}})
    with pytest.raises(ConfigError, match=r"deepreflect\[mcp\]"):
        tools_from_config(path)


def test_a_config_without_servers_gives_no_tools(tmp_path):
    assert tools_from_config(write_config(tmp_path, {})) == {}


# -- a real server ---------------------------------------------------------------------------


@needs_mcp
def test_the_servers_tools_go_to_the_roles_it_names(tmp_path):
    path = write_config(
        tmp_path,
        {
            "facts": stdio_server(tmp_path),
            "more": stdio_server(tmp_path, roles=["writer"]),
        },
    )
    tools = tools_from_config(path)
    assert {role: [t.name for t in ts] for role, ts in tools.items()} == {
        "researcher": ["lookup", "broken"],
        "coder": ["lookup", "broken"],
        "writer": ["lookup", "broken"],
    }
    assert calls(tmp_path) == []  # listing tools calls none


@needs_mcp
def test_the_tool_works_across_calls_threads_and_event_loops(tmp_path):
    tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))
    lookup = next(t for t in tools["researcher"] if t.name == "lookup")
    assert text_of(asyncio.run(lookup.ainvoke({"term": "deepreflect"}))) == FACT
    assert text_of(asyncio.run(lookup.ainvoke({"term": "mcp"}))).startswith("MCP stands")

    answers: list[str] = []

    def in_a_thread() -> None:  # what sync graph.invoke's worker threads do
        answers.append(text_of(asyncio.run(lookup.ainvoke({"term": "deepreflect"}))))

    threads = [threading.Thread(target=in_a_thread) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [FACT] * 3
    assert calls(tmp_path) == ["lookup"] * 5


@needs_mcp
def test_a_failing_mcp_tool_raises_for_the_worker_to_report(tmp_path):
    tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))
    broken = next(t for t in tools["coder"] if t.name == "broken")
    with pytest.raises(Exception, match="broken on purpose: today"):
        asyncio.run(broken.ainvoke({"reason": "today"}))


@needs_mcp
def test_tools_load_from_inside_a_running_event_loop(tmp_path):
    path = write_config(tmp_path, {"facts": stdio_server(tmp_path)})

    async def notebook_cell():
        return tools_from_config(path)

    assert [t.name for t in asyncio.run(notebook_cell())["researcher"]] == ["lookup", "broken"]


@needs_mcp
def test_async_code_awaits_the_tools(tmp_path):
    path = write_config(tmp_path, {"facts": stdio_server(tmp_path, roles=["coder"])})
    tools = asyncio.run(atools_from_config(path))
    assert [t.name for t in tools["coder"]] == ["lookup", "broken"] and list(tools) == ["coder"]


@needs_mcp
def test_a_server_that_cannot_start_is_a_config_error_naming_it(tmp_path):
    path = write_config(tmp_path, {"ghost": {"command": str(tmp_path / "no-such-server")}})
    with pytest.raises(ConfigError, match="MCP server 'ghost' did not list its tools"):
        tools_from_config(path)


@needs_mcp
def test_a_tool_named_like_a_filesystem_tool_needs_the_prefix(tmp_path):
    clash = stdio_server(tmp_path, env={"MCP_TEST_CLASH": "1"})
    with pytest.raises(ConfigError, match="'read_file'.*tool_name_prefix"):
        tools_from_config(write_config(tmp_path, {"fs": clash}))
    prefixed = tools_from_config(
        write_config(tmp_path, {"fs": {**clash, "tool_name_prefix": True}})
    )
    assert [t.name for t in prefixed["coder"]] == ["fs_lookup", "fs_broken", "fs_read_file"]


@needs_mcp
def test_two_servers_with_one_tool_name_for_a_role_are_a_config_error(tmp_path):
    path = write_config(tmp_path, {"a": stdio_server(tmp_path), "b": stdio_server(tmp_path)})
    with pytest.raises(ConfigError, match="'a' and 'b' both have a tool named 'lookup'"):
        tools_from_config(path)


@pytest.fixture
def http_server(tmp_path):
    """The test server over streamable HTTP on a free port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"MCP_TEST_CALLS": str(tmp_path / "calls.txt"), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@needs_mcp
def test_a_streamable_http_server_gives_its_tools_too(tmp_path, http_server):
    path = write_config(tmp_path, {"remote": {"url": http_server, "roles": ["researcher"]}})
    tools = tools_from_config(path)
    lookup = next(t for t in tools["researcher"] if t.name == "lookup")
    assert text_of(asyncio.run(lookup.ainvoke({"term": "deepreflect"}))) == FACT
    assert calls(tmp_path) == ["lookup"]


# -- full runs -------------------------------------------------------------------------------


def researcher(messages, metadata):
    """Looks the fact up with the MCP tool, then writes what it returned into its artifact."""
    last = messages[-1]
    if isinstance(last, ToolMessage) and last.name == "lookup":
        path = metadata["expected_output"]
        return tool_call("write_file", path=path, content=f"Fact: {last.content}\n")
    if isinstance(last, ToolMessage):
        return "done"
    return tool_call("lookup", term="deepreflect")


PLAN = [
    step("S1", "notes/fact.md", action="researcher", check={"kind": "contains", "all": ["0.731"]})
]


def lookup_answers(model) -> list[str]:
    """What the ``lookup`` tool messages the subagent received said (each prompt repeats the
    conversation so far: one answer per tool call)."""
    seen = {
        m.tool_call_id: m.content
        for messages in model.calls
        for m in messages
        if isinstance(m, ToolMessage) and m.name == "lookup"
    }
    return list(seen.values())


@needs_mcp
def test_a_subagent_calls_the_config_files_tool_and_writes_what_it_returned(tmp_path):
    tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))
    roles = models(PLAN, [END], subagent=researcher)
    graph, _ = sqlite_graph(tmp_path, roles, tools=tools)
    result = run(graph, "find the fact", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    content = graph.get_state(thread_config("t")).values["files"]["notes/fact.md"]["content"]
    assert FACT in content
    assert calls(tmp_path) == ["lookup"]


@needs_mcp
def test_the_model_reads_the_mcp_tools_text_rather_than_its_content_blocks(tmp_path):
    tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))
    roles = models(PLAN, [END], subagent=researcher)
    graph, _ = sqlite_graph(tmp_path, roles, tools=tools)
    run(graph, "find the fact", context=ctx(), thread_id="t")
    assert lookup_answers(roles["default"]) == [FACT]
    content = graph.get_state(thread_config("t")).values["files"]["notes/fact.md"]["content"]
    assert content == f"Fact: {FACT}\n"


@needs_mcp
def test_mcp_tools_given_through_build_graph_work_under_ainvoke_too(tmp_path):
    mcp_tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))
    roles = models(PLAN, [END], subagent=researcher)
    graph = build_graph(
        models=roles, tools={"researcher": mcp_tools["researcher"]}, retry_policy=None
    )
    payload = {"messages": [{"role": "user", "content": "find the fact"}]}
    final = asyncio.run(graph.ainvoke(payload, context=ctx()))
    assert FACT in final["files"]["notes/fact.md"]["content"]
    assert final["files"]["notes/fact.md"]["status"] == "done"
    assert calls(tmp_path) == ["lookup"]


@needs_mcp
def test_a_failing_mcp_tool_is_a_tool_error_the_subagent_sees(tmp_path):
    tools = tools_from_config(write_config(tmp_path, {"facts": stdio_server(tmp_path)}))

    def subagent(messages, metadata):
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == "broken":
            return tool_call("write_file", path=metadata["expected_output"], content=last.content)
        if isinstance(last, ToolMessage):
            return "done"
        return tool_call("broken", reason="for the test")

    plan = [
        step(
            "S1",
            "notes/error.md",
            action="coder",
            check={"kind": "contains", "all": ["broken on purpose"]},
        )
    ]
    roles = models(plan, [END], subagent=subagent)
    graph, _ = sqlite_graph(tmp_path, roles, tools=tools)
    result = run(graph, "call the broken tool", context=ctx(), thread_id="t")
    assert result["status"] == "success"
    events = graph.get_state(thread_config("t")).values["trajectory"]
    broken = [e for e in events if e.get("action") == "broken"]
    assert broken and broken[0]["ok"] is False and "broken on purpose" in broken[0]["observation"]


@needs_mcp
def test_the_served_graph_reads_the_config_named_by_the_environment(tmp_path):
    path = write_config(tmp_path, {"facts": stdio_server(tmp_path, roles=["researcher"])})
    script = (
        "import graphs.deep_agent as served; "
        "print(sorted((r, [t.name for t in ts]) for r, ts in served.mcp_tools().items()))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ROOT, "DEEPREFLECT_MCP_CONFIG": str(path)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('researcher', ['lookup', 'broken'])]"
    env["DEEPREFLECT_MCP_CONFIG"] = str(tmp_path / "missing.json")
    out = subprocess.run(
        [sys.executable, "-c", "import graphs.deep_agent"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "missing.json' not found" in out.stderr
