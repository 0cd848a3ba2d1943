"""The user's files on every path a user takes: ``run(files=...)``, ``arun``, the graph's
input ``{"files": {...}}``, ``deepreflect run --file`` and ``export`` of an edited file."""

from __future__ import annotations

import asyncio
import json
import re
import uuid

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent import UserFileError, arun, build_graph, run
from agent.models.scripted import tool_call
from agent.runs.export import MANIFEST, export_files
from agent.runs.runner import thread_config
from tests.fakes import END, cli, ctx, models, sqlite_graph, step

CSV = "city,people\nOslo,700000\nBergen,290000\n"
BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def reader(source: str, output: str):
    """A subagent that reads ``source`` with read_file, then writes what it read (upper
    case) to ``output``: the artifact can only hold the text if the read worked."""

    def respond(messages, metadata):
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == "read_file":
            return tool_call("write_file", path=output, content=str(last.content).upper())
        if isinstance(last, ToolMessage):
            return "written"
        return tool_call("read_file", path=source)

    return respond


def fixer(messages, metadata):
    """A subagent that patches the user's calc.py in place with edit_file."""
    if isinstance(messages[-1], ToolMessage):
        return "fixed"
    return tool_call("edit_file", path="calc.py", old="a - b", new="a + b")


def memory_graph(roles):
    return build_graph(models=roles, checkpointer=InMemorySaver(), retry_policy=None)


def read_plan():
    return [step("S1", "summary.md", check={"kind": "contains", "all": ["OSLO"]})]


def test_run_with_files_gives_every_step_the_users_file_to_read():
    roles = models(read_plan(), [END], reader("data/cities.csv", "summary.md"))
    graph = memory_graph(roles)
    result = run(graph, "Summarise the cities", context=ctx(), files={"data/cities.csv": CSV})
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    files = graph.get_state(thread_config(result["thread_id"])).values["files"]
    assert files["summary.md"]["content"] == CSV.upper()
    given = files["data/cities.csv"]
    assert (given["origin"], given["status"], given["content"]) == ("user", "active", CSV)
    planner_prompt = roles["planner"].calls[0][-1].content
    assert "- data/cities.csv (" in planner_prompt and "| city,people" in planner_prompt
    # reflection sees the file like any other, marked as the user's, never its content
    shown = graph.get_state(thread_config(result["thread_id"])).values["file_summaries"]
    assert shown["data/cities.csv"]["origin"] == "user"
    for call in roles["reflection"].calls:
        assert "Bergen" not in str(call) and "BERGEN" not in str(call)


def test_a_plan_edits_a_user_file_checked_by_the_users_tests_and_export_writes_it(tmp_path):
    plan = [
        step("S1", "calc.py", action="coder", check={"kind": "pytest", "tests": ["test_calc.py"]})
    ]
    graph, conn = sqlite_graph(tmp_path, models(plan, [END], fixer))
    files = {"calc.py": BUGGY, "test_calc.py": TESTS}
    result = run(graph, "Fix add so the tests pass", context=ctx(), files=files)
    assert (result["status"], result["stop_reason"]) == ("success", "end"), result
    thread_id = result["thread_id"]
    held = graph.get_state(thread_config(thread_id)).values["files"]
    assert held["calc.py"]["content"] == BUGGY.replace("a - b", "a + b")
    assert (held["calc.py"]["origin"], held["calc.py"]["status"]) == ("user", "done")
    assert held["test_calc.py"]["status"] == "active"  # untouched: not an artifact

    out = tmp_path / "out"
    written = export_files(held, out)
    assert [p.name for p in written] == ["calc.py"]  # the edited one, not the untouched tests
    assert (out / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
    export_files(held, tmp_path / "all", include_all=True)
    manifest = json.loads((tmp_path / "all" / MANIFEST).read_text())
    assert (
        manifest["test_calc.py"]["origin"] == "user"
        and (tmp_path / "all" / "test_calc.py").exists()
    )
    conn.close()

    # the CLI's export reads the same thread from the database and writes the same bytes
    done = cli("export", thread_id, str(tmp_path / "cli-out"), db=tmp_path / "threads.sqlite")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cli-out" / "calc.py").read_bytes() == (out / "calc.py").read_bytes()
    assert not (tmp_path / "cli-out" / "test_calc.py").exists()


def test_the_graph_input_takes_files_as_the_sdk_and_studio_send_them():
    roles = models(read_plan(), [END], reader("cities.csv", "summary.md"))
    graph = memory_graph(roles)
    config = thread_config("t-input")
    graph.invoke(
        {"messages": [("user", "Summarise")], "files": {"./cities.csv": CSV}}, config, context=ctx()
    )
    values = graph.get_state(config).values
    assert values["status"] == "success"
    assert set(values["files"]) == {"cities.csv", "summary.md"}  # normalised, converted
    assert values["files"]["cities.csv"]["origin"] == "user"
    assert values["files"]["summary.md"]["content"] == CSV.upper()


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"../escape.py": "x"}, "../escape.py"),
        ({"/etc/passwd": "x"}, "/etc/passwd"),
        ({"ok.py": "fine", "bin.dat": "a\x00b"}, "bin.dat"),
        ({"big.txt": "x" * 1_000_001}, "big.txt"),
        ({"n.py": 42}, "n.py"),
        ("not a mapping", "files"),
    ],
)
def test_refused_graph_input_files_fail_the_run_as_invalid_input(files, named):
    roles = models(read_plan(), [END])
    graph = memory_graph(roles)
    config = thread_config(f"t-{uuid.uuid4()}")
    if isinstance(files, str):  # the channel refuses it, with what it expects
        with pytest.raises(ValueError, match="files must map paths to text contents, not str"):
            graph.invoke({"messages": [("user", "go")], "files": files}, config, context=ctx())
        graph.invoke({"messages": [("user", "go")], "files": {"a.md": "x"}}, config, context=ctx())
        assert graph.get_state(config).values["files"]["a.md"]["origin"] == "user"  # still works
        return
    graph.invoke({"messages": [("user", "go")], "files": files}, config, context=ctx())
    values = graph.get_state(config).values
    assert (values["status"], values["stop_reason"]) == ("failed", "invalid_input")
    assert named in values["decisions"][-1]["reason"]
    assert named in values["messages"][-1].content
    assert values.get("files", {}) == {}  # nothing of a refused input stays
    assert roles["planner"].calls == []  # no model was asked


def test_a_later_turn_adds_and_replaces_user_files():
    plan = {"steps": [step("S1", "summary.md")]}
    graph = memory_graph(models([plan, plan], [END, END], reader("cities.csv", "summary.md")))
    first = run(graph, "Summarise", context=ctx(), files={"cities.csv": CSV, "notes.md": "n\n"})
    assert first["status"] == "success"
    again = run(
        graph,
        "Summarise the new data",
        thread_id=first["thread_id"],
        context=ctx(),
        files={"cities.csv": "city\nTromsø\n", "more.md": "m\n"},
    )
    assert again["status"] == "success"
    files = graph.get_state(thread_config(first["thread_id"])).values["files"]
    assert files["cities.csv"]["content"] == "city\nTromsø\n"
    assert {p for p, e in files.items() if e.get("origin") == "user"} == {
        "cities.csv",
        "notes.md",
        "more.md",
    }


def test_files_are_taken_in_even_when_the_planner_escalates_instead_of_planning():
    roles = models(["not a plan", "still not a plan"], [END])
    graph = memory_graph(roles)
    paused = run(graph, "go", context=ctx(), files={"cities.csv": CSV})
    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "invalid_plan")
    values = graph.get_state(thread_config(paused["thread_id"])).values
    assert values["files"]["cities.csv"]["origin"] == "user"  # an entry, not the raw string
    assert values["goal"] == "go"


def test_run_refuses_bad_files_before_the_thread_exists():
    graph = memory_graph(models(read_plan(), [END]))
    for bad, why in (({"../x.py": "x"}, "climbs out"), ({"a.py": b"bytes"}, "must be text")):
        with pytest.raises(UserFileError, match=why):
            run(graph, "go", thread_id="never", context=ctx(), files=bad)
        with pytest.raises(ValueError, match=why):
            asyncio.run(arun(graph, "go", thread_id="never", context=ctx(), files=bad))
    assert not graph.get_state(thread_config("never")).values


def test_arun_takes_files_too():
    roles = models(read_plan(), [END], reader("cities.csv", "summary.md"))
    graph = memory_graph(roles)
    result = asyncio.run(arun(graph, "Summarise", context=ctx(), files={"cities.csv": CSV}))
    assert result["status"] == "success"
    files = graph.get_state(thread_config(result["thread_id"])).values["files"]
    assert files["summary.md"]["content"] == CSV.upper()


def test_refused_files_sent_to_a_paused_thread_keep_it_paused():
    escalate = {"decision": "escalate", "reason": "which city?", "question": "Which city?"}
    roles = models([step("S1", "a.md")], [escalate], reader("cities.csv", "a.md"))
    graph = memory_graph(roles)
    paused = run(graph, "go", context=ctx(), files={"cities.csv": CSV})
    assert paused["status"] == "awaiting_input"
    config = thread_config(paused["thread_id"])
    graph.invoke(
        {"messages": [HumanMessage("Oslo")], "files": {"../up.txt": "x"}}, config, context=ctx()
    )
    values = graph.get_state(config).values
    assert values["status"] == "awaiting_input" and values["escalation"]
    assert "../up.txt" not in values["files"] and "cities.csv" in values["files"]
    notes = [m.content for m in values["messages"] if isinstance(m, AIMessage)]
    assert any("not accepted" in n and "../up.txt" in n for n in notes)


# ---------------------------------------------------------------- the command line


def test_cli_run_with_file_hands_a_folder_to_a_step_that_reads_it(tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "cities.csv").write_text(CSV)
    (data / "sub" / "notes.md").write_text("one\ntwo\n")
    (data / ".gitignore").write_text("*.tmp\n")
    (data / "scratch.tmp").write_text("ignored\n")
    (data / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    db = tmp_path / "t.sqlite"
    goal = "List the files I gave you"
    done = cli("run", goal, "--model", "scripted:files", "--file", str(data), "--json", db=db)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["artifacts"]["INVENTORY.md"]["status"] == "done"
    assert "--file: skipped data/logo.png: binary" in done.stderr
    shown = cli("show", result["thread_id"], "--file", "INVENTORY.md", db=db)
    # outside the CLI's working directory: the folder is named from its parent
    assert "- data/cities.csv: 3 lines" in shown.stdout
    assert "- data/sub/notes.md: 2 lines" in shown.stdout
    assert "scratch.tmp" not in shown.stdout and "logo.png" not in shown.stdout


def test_cli_demo_takes_files_and_names_them_before_it_runs(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    db = tmp_path / "t.sqlite"
    done = cli("demo", "--scenario", "files", "--file", str(tmp_path / "a.py"), db=db)
    assert done.returncode == 0, done.stderr
    assert re.search(r"files: 1 file, 6 bytes: a\.py", done.stdout)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: "missing.py", "missing.py: no such file or folder"),
        (lambda d: (d / "b.bin").write_bytes(b"\x00\x01") and str(d / "b.bin"), "is binary"),
        (lambda d: (d / "big.txt").write_text("x" * 1_000_001) and str(d / "big.txt"), "per file"),
    ],
)
def test_cli_bad_file_is_a_usage_error_naming_it(tmp_path, make, why):
    path = make(tmp_path)
    done = cli(
        "run", "a goal", "--model", "scripted:files", "--file", path, db=tmp_path / "t.sqlite"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert why in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t.sqlite").exists()  # refused before any thread was made


# ---------------------------------------------------------------- LangGraph Server and the SDK


def test_the_sdk_sends_files_in_the_input_and_a_step_reads_them(tmp_path):
    pytest.importorskip("langgraph_sdk")
    from tests.langgraph_server import dev_server, langgraph_missing

    if reason := langgraph_missing():
        pytest.skip(reason)
    from langgraph_sdk import get_sync_client

    with dev_server(tmp_path / "langgraph-dev.log") as url:
        client = get_sync_client(url=url)
        assistant = client.assistants.search(graph_id="deep_agent")[0]
        schema = client.assistants.get_schemas(assistant["assistant_id"])["input_schema"]
        assert schema["properties"]["files"]["type"] == "object"  # Studio's input form has it
        context = {"model": "scripted:files"}
        given = {"cities.csv": CSV, "docs/notes.md": "one\ntwo\n"}
        thread = client.threads.create()
        user = [{"role": "user", "content": "List my files"}]
        final = client.runs.wait(
            thread["thread_id"], "deep_agent", input={"messages": user, "files": given},
            context=context,
        )  # fmt: skip
        assert (final["status"], final["stop_reason"]) == ("success", "end")
        inventory = final["files"]["INVENTORY.md"]["content"]
        assert "- cities.csv: 3 lines" in inventory and "- docs/notes.md: 2 lines" in inventory
        assert final["files"]["cities.csv"]["origin"] == "user"

        bad = client.threads.create()
        refused = client.runs.wait(
            bad["thread_id"], "deep_agent", input={"messages": user, "files": {"../x": "y"}},
            context=context,
        )  # fmt: skip
        assert (refused["status"], refused["stop_reason"]) == ("failed", "invalid_input")
        assert "../x" in refused["messages"][-1]["content"]
