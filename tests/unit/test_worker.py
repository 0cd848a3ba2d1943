"""A subagent step without a graph: tools, scope, the revise loop and what it reports."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from agent.controller.prompting import DIRECT_INPUT_CHARS
from agent.controller.records import StepRun, defect_signature
from agent.controller.sources import CitationSources, search_first
from agent.controller.text_recovery import recover_text_calls
from agent.controller.worker import StepWorker
from agent.errors import AgentError
from agent.models.factory import Metered
from agent.models.scripted import ScriptedChatModel, tool_call
from agent.tools.filesystem import vfs_tools
from agent.tools.search import local_search_tool
from agent.vfs.entries import Workspace
from tests.fakes import call_tool, prompt_values, step_worker

STEP = {
    "step_id": "S1",
    "depends_on": [],
    "action": "coder",
    "instructions": "Write out.txt containing OK.",
    "expected_output": "out.txt",
    "done_when": {"kind": "contains", "all": ["OK"]},
}


# a first draft that fails its check, then the patch that passes it
FAIL_THEN_PATCH = [
    tool_call("write_file", path="out.txt", content="nope"),
    "done",
    tool_call("edit_file", path="out.txt", old="nope", new="OK"),
    "fixed",
]


def worker(responses, *, step=STEP, **options):
    return step_worker(responses, step=step, **options)


def execute(w: StepWorker) -> StepRun:
    """The step as the subagent node runs it (awaited; no sync twin)."""
    return asyncio.run(w.aexecute())


def test_a_passing_first_draft_is_done_with_its_check():
    w, _ = worker([tool_call("write_file", path="out.txt", content="OK"), "done"])
    run = execute(w)
    entry = run.files["out.txt"]
    assert entry["status"] == "done" and entry["check"]["passed"] is True
    assert entry["stop_reason"] == "pass" and entry["rounds"] == 0
    assert run.usage["coder"]["calls"] == 2
    assert [e["action"] for e in run.trajectory] == ["write_file", "check", "result"]


def test_failing_evidence_reaches_the_revision_and_the_patch_passes():
    w, model = worker(FAIL_THEN_PATCH)
    run = execute(w)
    revision_prompt = str(model.calls[2][1].content)
    # a revision is asked directly: the draft and its evidence in the prompt
    values = prompt_values("subagent_direct_revision", revision_prompt)
    assert values and values["draft"] == "nope\n" and "lacks" in values["issues"]
    assert run.files["out.txt"]["status"] == "done" and run.files["out.txt"]["rounds"] == 1


def test_a_turn_repeating_the_last_turn_s_calls_ends_the_draft():
    same = tool_call("write_file", path="out.txt", content="OK")
    w, model = worker([same, tool_call("write_file", path="out.txt", content="OK"), "never"])
    run = execute(w)
    assert len(model.calls) == 2  # the repeat is not run again, and nothing more is asked
    assert [e["action"] for e in run.trajectory] == [
        "write_file",
        "repeated_call",
        "check",
        "result",
    ]
    assert run.files["out.txt"]["status"] == "done"


def test_the_same_call_after_another_one_is_no_repeat():
    write = tool_call("write_file", path="out.txt", content="OK")
    read = tool_call("read_file", path="out.txt")
    w, model = worker([write, read, tool_call("write_file", path="out.txt", content="OK"), "done"])
    execute(w)
    assert len(model.calls) == 4


def test_a_revision_answered_with_the_file_in_a_fence_is_the_new_draft():
    w, model = worker(
        [tool_call("write_file", path="out.txt", content="nope"), "done", "```text\nOK\n```"]
    )
    run = execute(w)
    assert run.files["out.txt"]["status"] == "done" and run.files["out.txt"]["content"] == "OK\n"
    assert len(model.calls) == 3  # the fence is the answer: no "one short line" asked for


def test_a_draft_too_big_for_a_prompt_is_revised_through_the_tools():
    big = "x" * DIRECT_INPUT_CHARS + "nope"
    w, model = worker(
        [tool_call("write_file", path="out.txt", content=big), "done", *FAIL_THEN_PATCH[2:]]
    )
    run = execute(w)
    assert prompt_values("subagent_revision", str(model.calls[2][1].content))
    assert run.files["out.txt"]["status"] == "done"  # patched by edit_file


def test_an_unresolved_artifact_leaves_a_critique_with_its_open_issues():
    w, _ = worker([tool_call("write_file", path="out.txt", content="no")] + ["x"], max_revisions=0)
    run = execute(w)
    assert run.files["out.txt"]["status"] == "failed"
    critique = run.files["work/S1/critique.json"]
    assert critique["status"] == "active" and critique["kind"] == "critique"
    body = json.loads(critique["content"])
    assert body["open_issues"][0]["severity"] == "blocking"
    assert run.files["out.txt"]["defect"] == critique["defect"] is not None


def test_writes_outside_scope_and_bad_tool_calls_come_back_as_errors():
    w, model = worker(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "../escape", "content": "x"}},
                    {"name": "write_file", "args": {"path": "other.txt", "content": "x"}},
                    {"name": "write_file", "args": {"path": "out.txt"}},
                    {
                        "name": "write_file",
                        "args": {"path": "out.txt", "content": "OK", "mode": "w"},
                    },
                    {"name": "rm_rf", "args": {}},
                ]
            },
            tool_call("write_file", path="out.txt", content="OK"),
            "done",
        ]
    )
    run = execute(w)
    observations = [m.content for m in model.calls[1] if isinstance(m, ToolMessage)]
    assert "climbs out" in observations[0]
    assert observations[1].startswith("permission_denied")
    assert "content" in observations[2] and observations[2].startswith("deterministic_validation")
    assert "mode" in observations[3]
    assert "unknown tool 'rm_rf'" in observations[4]
    assert run.files["out.txt"]["status"] == "done"
    assert set(run.files) == {"out.txt"}


def test_the_step_sees_only_its_inputs():
    tools = {t.name: t for t in vfs_tools(Workspace({"dep.md": "d"}, writable=["out.txt"]))}
    assert call_tool({"name": "ls", "args": {}}, tools) == ("dep.md", True)
    text, ok = call_tool({"name": "read_file", "args": {"path": "secret.md"}}, tools)
    assert not ok and "not found" in text


def test_a_permission_error_from_the_model_is_recorded_not_raised():
    w, _ = worker([AgentError("permission_denied", "401 invalid api key")])
    run = execute(w)
    error = run.trajectory[-1]
    assert error["action"] == "error" and error["error_class"] == "permission_denied"
    assert "401 invalid api key" in error["observation"] and run.files == {}


def test_a_transient_error_is_raised_for_the_retry_policy():
    w, _ = worker([TimeoutError("model timed out")])
    with pytest.raises(TimeoutError):
        execute(w)


def test_defect_signature_ignores_timings_but_not_evidence():
    a = [{"id": "check-pytest", "severity": "blocking", "evidence": "1 failed in 0.02s: x"}]
    b = [{"id": "check-pytest", "severity": "blocking", "evidence": "1 failed in 0.31s: x"}]
    c = [{"id": "check-pytest", "severity": "blocking", "evidence": "1 failed in 0.31s: y"}]
    assert defect_signature("S1", a) == defect_signature("S1", b) != defect_signature("S1", c)
    assert defect_signature("S1", [{"severity": "minor", "evidence": "x"}]) is None


def test_prompt_names_the_step_for_per_step_scripts():
    w, model = worker(
        [tool_call("write_file", path="out.txt", content="OK"), "done"], tool_calling="native"
    )
    execute(w)
    first = model.calls[0][1]
    assert isinstance(first, HumanMessage)
    assert (prompt_values("subagent_task", str(first.content)) or {}).get("step_id") == "S1"


def test_a_step_that_needs_no_tool_is_asked_directly_and_its_fence_is_the_artifact():
    w, model = worker(["```text\nOK\n```"], inputs={"notes.md": "the notes"})
    run = execute(w)
    values = prompt_values("subagent_direct", str(model.calls[0][1].content))
    assert values and "the notes" in values["files"]  # the inputs are in the prompt
    assert run.files["out.txt"]["status"] == "done" and len(model.calls) == 1


def test_every_call_of_a_step_carries_its_role_step_artifact_and_revision_as_metadata():
    w, model = worker(FAIL_THEN_PATCH, inputs={"notes.md": "n"})
    execute(w)
    mine = ("role", "step_id", "expected_output", "instructions", "revision", "inputs")
    seen = [{k: m[k] for k in mine} for m in model.call_metadata]
    first = {
        "role": "coder",
        "step_id": "S1",
        "expected_output": "out.txt",
        "instructions": STEP["instructions"],
        "revision": 0,
        "inputs": ["notes.md"],
    }
    revised = {**first, "revision": 1, "inputs": ["notes.md", "out.txt"]}
    assert seen == [first, first, revised, revised]


def test_the_judge_of_a_rubric_check_is_told_which_step_it_reviews():
    judge = ScriptedChatModel([{"issues": [], "score": 1.0}])
    runnable, _usage = Metered(judge, "judge", "function_calling").observed()
    step = {**STEP, "done_when": {"kind": "rubric", "criteria": ["says OK"]}}
    w, _ = worker(
        [tool_call("write_file", path="out.txt", content="OK"), "done"], step=step, judge=runnable
    )
    execute(w)
    (metadata,) = judge.call_metadata
    assert (metadata["role"], metadata["step_id"], metadata["expected_output"]) == (
        "judge",
        "S1",
        "out.txt",
    )


CITED = {**STEP, "expected_output": "notes.md", "done_when": {"kind": "citations"}}


def test_a_url_the_step_wrote_and_read_back_is_never_a_source():
    body = "Fact [1](https://made.up/source)."
    w, _ = worker(
        [
            tool_call("write_file", path="notes.md", content=body),
            tool_call("read_file", path="notes.md"),
            "done",
        ],
        step=CITED,
        max_revisions=0,
    )
    entry = execute(w).files["notes.md"]
    assert entry["status"] == "failed" and "https://made.up/source" in entry["check"]["evidence"]


def test_a_url_in_an_input_file_the_step_read_is_a_source():
    body = "Fact [1](https://example.org/a)."
    w, _ = worker(
        [
            tool_call("read_file", path="dep.md"),
            tool_call("write_file", path="notes.md", content=body),
            "done",
        ],
        step=CITED,
        inputs={"dep.md": "found at https://example.org/a"},
        max_revisions=0,
    )
    assert execute(w).files["notes.md"]["status"] == "done"


def test_only_successful_results_from_outside_the_step_are_citation_sources():
    sources = CitationSources(CITED, ["dep.md", "notes.md", "work/S1/scratch.md"])

    def read(path):
        return {"name": "read_file", "args": {"path": path}}

    assert sources.is_source(read("dep.md")) and sources.is_source({"name": "search"})
    assert not any(sources.is_source(read(p)) for p in ("notes.md", "work/S1/scratch.md"))
    assert not any(sources.is_source({"name": n}) for n in ("ls", "write_file", "edit_file"))
    sources.offer({"name": "search"}, "error: https://made.up/x", ok=False)
    sources.offer(read("dep.md"), "https://example.org/a", ok=True)
    assert sources.outputs == ["https://example.org/a"]


CORPUS = {"https://example.org/hnsw": "HNSW graphs answer vector queries fast."}


def test_a_step_citing_sources_gets_the_search_made_by_code_before_its_first_draft():
    search = local_search_tool(CORPUS)
    body = "HNSW is fast [1](https://example.org/hnsw)."
    w, model = worker(
        [tool_call("write_file", path="notes.md", content=body), "done"],
        step=CITED,
        goal="Write notes on HNSW vector queries.",
        extra_tools=[search],
        max_revisions=0,
    )
    run = execute(w)
    first = model.calls[0]  # the model's first turn already holds the search and its result
    assert isinstance(first[-1], ToolMessage) and "https://example.org/hnsw" in first[-1].content
    assert first[-2].tool_calls[0]["name"] == search.name
    assert first[-2].tool_calls[0]["args"] == {"query": "Write notes on HNSW vector queries."}
    assert run.files["notes.md"]["status"] == "done"  # the URL came from a real result
    assert [e["action"] for e in run.trajectory][:2] == [search.name, "write_file"]


def test_a_revision_of_a_sourced_draft_is_asked_directly_and_still_traced_to_the_sources():
    # d11 (2026-12-06): one URL no search returned, revised through the tools (14 calls,
    # 24k tokens) until the time budget ran out; asked directly, the evidence lists the URLs
    search = local_search_tool(CORPUS)
    invented = "HNSW is fast [1](https://example.org/hnsw), see [2](https://example.org/ivf)."
    w, model = worker(
        [
            tool_call("write_file", path="notes.md", content=invented),
            "done",
            "```markdown\nHNSW is fast [1](https://example.org/ivf-pq).\n```",
            "```markdown\nHNSW is fast [1](https://example.org/hnsw).\n```",
        ],
        step=CITED,
        goal="Write notes on HNSW vector queries.",
        extra_tools=[search],
        max_revisions=2,
    )
    run = execute(w)
    revision = prompt_values("subagent_direct_revision", str(model.calls[2][-1].content))
    assert revision and "https://example.org/hnsw" in revision["issues"]  # what was returned
    assert len(model.calls) == 4  # each revision one call: no search again
    assert run.files["notes.md"]["rounds"] == 2  # the URL no tool returned still failed
    assert run.files["notes.md"]["status"] == "done"


def test_a_revision_of_a_step_with_tools_but_no_traced_check_keeps_its_tools():
    # sources matter only to a citations check: another step's tools stay in its revision
    search = local_search_tool(CORPUS)
    w, _ = worker(
        [
            tool_call(search.name, query="hnsw"),
            tool_call("write_file", path="out.txt", content="x"),
        ],
        extra_tools=[search],
        max_revisions=0,
    )
    execute(w)
    assert w.sources.outputs  # the search returned something
    assert w.direct_inputs(revising=True) is None


def test_a_check_refusing_invented_urls_only_needs_no_tools():
    # min 0 (the floor's, on all prose): no source is needed, so the draft is asked directly
    no_sources = {"kind": "all", "checks": [{"kind": "non_empty"}, {"kind": "citations", "min": 0}]}
    w, _ = worker(["x"], step={**STEP, "done_when": no_sources}, inputs={"notes.md": "say OK"})
    assert w.direct_inputs() == {"notes.md": "say OK"}
    asking = {**no_sources, "checks": [*no_sources["checks"], {"kind": "citations"}]}
    w, _ = worker(["x"], step={**STEP, "done_when": asking}, inputs={"notes.md": "say OK"})
    assert w.direct_inputs() is None


def test_search_first_needs_a_citations_check_and_a_tool_that_searches():
    search = local_search_tool(CORPUS)
    assert search_first(CITED, {search.name: search}, "g")["args"] == {"query": "g"}
    assert search_first(STEP, {search.name: search}, "g") is None  # nothing to cite

    @tool
    def search_two(query: str, limit: int) -> str:
        """Search with a limit."""
        return ""

    @tool
    def lookup(term: str) -> str:
        """Not named as a search."""
        return ""

    assert search_first(CITED, {"search_two": search_two}, "g")["args"] == {"query": "g"}
    assert search_first(CITED, {"lookup": lookup}, "g") is None
    long_goal = "word " * 200
    query = search_first(CITED, {search.name: search}, long_goal)["args"]["query"]
    assert len(query) <= 300 and query.startswith("word word")


def test_a_fenced_file_is_the_artifact_only_while_the_draft_may_write_it_that_way():
    answer = AIMessage("Here it is:\n```\nOK\n```")
    kwargs = {"path": "out.txt", "id_prefix": "text-S1-0-0-"}
    made, parsed = recover_text_calls(answer, ["write_file"], fence_counts=True, **kwargs)
    assert parsed and made.tool_calls[0]["args"] == {"path": "out.txt", "content": "OK\n"}
    same, parsed = recover_text_calls(answer, ["write_file"], fence_counts=False, **kwargs)
    assert not parsed and same is answer


def test_a_tool_call_written_as_text_runs_and_is_recorded_as_parsed_from_text():
    written = (
        '```json\n{"name": "write_file", "arguments": {"path": "out.txt", "content": "OK"}}\n```'
    )
    w, _ = worker([written, "done"])
    run = execute(w)
    assert run.files["out.txt"]["status"] == "done"
    call = next(e for e in run.trajectory if e["action"] == "write_file")
    assert call["ok"] is True and call["parsed_from_text"] is True


def test_a_reply_that_calls_no_tool_is_told_once_which_tool_and_path_to_use():
    w, model = worker(
        ["I would write OK.", tool_call("write_file", path="out.txt", content="OK"), "ok"]
    )
    run = execute(w)
    assert run.files["out.txt"]["status"] == "done"
    assert [e["action"] for e in run.trajectory][:2] == ["no_tool_call", "write_file"]
    reminder = model.calls[1][-1]
    assert isinstance(reminder, HumanMessage) and "out.txt" in str(reminder.content)


def test_a_model_that_never_calls_a_tool_is_reminded_once_per_draft_not_forever():
    w, model = worker(["nothing", "still nothing"], max_revisions=0)
    run = execute(w)
    assert len(model.calls) == 2 and "out.txt" not in run.files
    assert [e["action"] for e in run.trajectory].count("no_tool_call") == 1


def test_a_revision_answered_with_the_file_in_a_fence_replaces_the_draft():
    responses = [
        "```\nnope\n```",  # the first draft, as a fence (the whole file): its answer
        "Fixed:\n```\nOK\n```",  # the revision, as a fence too: it is this draft's file
    ]
    w, model = worker(responses)
    run = execute(w)
    assert len(model.calls) == 2  # one call per draft: no "one short line" after a fence
    entry = run.files["out.txt"]
    assert entry["content"] == "OK\n" and entry["status"] == "done" and entry["rounds"] == 1
    writes = [e for e in run.trajectory if e["action"] == "write_file"]
    assert len(writes) == 2 and all(e.get("parsed_from_text") for e in writes)


CODE_STEP = {
    **STEP,
    "instructions": "Complete add.",
    "expected_output": "solution.py",
    "done_when": {"kind": "non_empty"},
}
STUB = 'def add(a, b):\n    """Return a + b."""\n'
FULL = STUB + "    return a + b\n"


def test_a_draft_that_left_a_function_unimplemented_is_reminded_once_in_the_same_draft():
    w, model = worker(
        [
            tool_call("write_file", path="solution.py", content=STUB),
            "written",
            f"```python\n{FULL}```",  # the rewrite, as a fenced module
            "done",
        ],
        step=CODE_STEP,
    )
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == FULL
    reminder = str(model.calls[2][-1].content)
    assert prompt_values("subagent_unimplemented", reminder)["names"] == "add"
    assert [e["action"] for e in w.records.run.trajectory].count("unimplemented") == 1


def test_the_reminder_is_not_repeated_when_the_rewrite_is_still_a_stub():
    w, model = worker(
        [
            tool_call("write_file", path="solution.py", content=STUB),
            "written",
            tool_call("write_file", path="solution.py", content=STUB),
            "still",
        ],
        step=CODE_STEP,
    )
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == STUB and len(model.calls) == 4  # one reminder, then the draft stands


def test_a_draft_answered_with_the_file_in_a_fence_ends_with_that_answer():
    w, model = worker(["Here:\n```\nOK\n```"])
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == "OK\n" and len(model.calls) == 1
    (write,) = [e for e in w.records.run.trajectory if e["action"] == "write_file"]
    assert write["ok"] is True and write["parsed_from_text"] is True


def test_a_fenced_stub_is_still_reminded_once_and_the_fenced_rewrite_ends_the_draft():
    w, model = worker([f"```python\n{STUB}```", f"```python\n{FULL}```"], step=CODE_STEP)
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == FULL and len(model.calls) == 2
    assert prompt_values("subagent_unimplemented", str(model.calls[1][-1].content))


def test_a_tool_call_written_as_text_still_gets_its_result_and_another_turn():
    written = '{"name": "write_file", "arguments": {"path": "out.txt", "content": "OK"}}'
    w, model = worker([written, "done"])
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == "OK" and len(model.calls) == 2
    assert isinstance(model.calls[1][-1], ToolMessage)


# --- a step asked directly: no tool schemas, its small inputs in the prompt ---------------


def direct_prompt(model, call=0):
    return prompt_values("subagent_direct", str(model.calls[call][-1].content))


def test_without_tool_schemas_a_small_step_is_asked_directly_with_its_inputs_inlined():
    w, model = worker(["```\nOK\n```"], inputs={"notes.md": "say OK"}, tool_calling="text")
    run = execute(w)
    assert run.files["out.txt"]["status"] == "done" and len(model.calls) == 1
    values = direct_prompt(model)
    assert values is not None and values["expected_output"] == "out.txt"
    assert "notes.md" in values["files"] and "say OK" in values["files"]
    assert prompt_values("subagent_task", str(model.calls[0][-1].content)) is None


def test_a_direct_first_draft_of_a_file_that_exists_shows_it_as_it_is_now():
    # the user's stats.py to fix: a 1.5B never shown it rewrote it without its mean
    given = "def mean(v):\n    return sum(v) / len(v)\n"
    w, model = worker(["```\nOK\n```"], inputs={"out.txt": given}, tool_calling="text")
    execute(w)
    values = direct_prompt(model)
    assert values is not None
    current = prompt_values("subagent_direct_current", values["files"])
    assert current is not None and current["path"] == "out.txt" and current["content"] == given
    fresh, model = worker(["```\nOK\n```"], tool_calling="text")
    execute(fresh)
    assert direct_prompt(model)["files"] == ""


def test_with_tool_schemas_bound_the_step_is_asked_through_its_tools():
    w, model = worker(
        [tool_call("write_file", path="out.txt", content="OK"), "done"],
        inputs={"notes.md": "say OK"},
        tool_calling="native",
    )
    execute(w)
    assert direct_prompt(model) is None
    assert prompt_values("subagent_task", str(model.calls[0][-1].content))


@pytest.mark.parametrize(
    ("inputs", "step", "extra"),
    [
        ({"big.txt": "x" * 20_000}, STEP, False),
        ({f"f{i}.md": "x" for i in range(9)}, STEP, False),
        ({}, {**STEP, "done_when": {"kind": "citations", "min": 1}}, False),
        ({}, STEP, True),
    ],
    ids=["large input", "many inputs", "citations check", "extra tools"],
)
def test_a_step_that_needs_its_tools_keeps_the_tool_path_without_schemas(inputs, step, extra):
    from langchain_core.tools import tool

    @tool
    def search(query: str) -> str:
        """Search."""
        return "nothing"

    w, model = worker(
        [tool_call("write_file", path="out.txt", content="OK"), "done"],
        step=step,
        inputs=inputs,
        tool_calling="text",
        extra_tools=[search] if extra else None,
    )
    assert w.direct_inputs() is None
    asyncio.run(w.agenerate("task", None))
    assert prompt_values("subagent_task", str(model.calls[0][-1].content))


def test_a_direct_revision_shows_the_draft_and_its_evidence_and_takes_the_whole_file():
    w, model = worker(["```\nnope\n```", "Fixed:\n```\nOK\n```"], tool_calling="text")
    run = execute(w)
    assert run.files["out.txt"]["content"] == "OK\n" and run.files["out.txt"]["rounds"] == 1
    values = prompt_values("subagent_direct_revision", str(model.calls[1][-1].content))
    assert values is not None and values["draft"] == "nope\n"
    assert "lacks" in values["issues"] and "out.txt" not in values["files"]
    assert len(model.calls) == 2


def test_a_direct_draft_without_a_fence_is_reminded_to_reply_with_one():
    w, model = worker(["I would write OK.", "```\nOK\n```"], tool_calling="text")
    draft, _ = asyncio.run(w.agenerate("task", None))
    assert draft == "OK\n" and len(model.calls) == 2
    assert prompt_values("subagent_no_fence", str(model.calls[1][-1].content))


def test_a_revision_asked_again_is_told_its_answer_repeated_a_failed_draft():
    from agent.controller.prompting import direct_messages, task_messages
    from agent.prompts import render

    step_ = {"step_id": "S1", "instructions": "Fix it.", "expected_output": "stats.py"}
    feedback = {"mode": "rewrite", "draft": "x = 1\n", "issues": [{"evidence": "bad"}]}
    note = render("subagent_repeated", expected_output="stats.py").strip()
    for repeated in (False, True):
        fb = {**feedback, "repeated": True} if repeated else feedback
        direct = direct_messages(
            step_, goal="g", system_prompt="s", files={}, draft="x = 1\n", feedback=fb
        )
        tooled = task_messages(step_, goal="g", system_prompt="s", inputs=[], feedback=fb)
        for messages in (direct, tooled):
            assert (note in messages[-1].content) is repeated


STATS = (
    "def mean(v):\n    return sum(v) / len(v)\n\n\n"
    "def median(v):\n    s = sorted(v)\n    m = len(s) // 2\n"
    "    return (s[m] + s[m + 1]) / 2 if len(s) % 2 == 0 else s[m]\n"
)
MEDIAN_FIXED = (
    "def median(v):\n    s = sorted(v)\n    m = len(s) // 2\n"
    "    return (s[m - 1] + s[m]) / 2 if len(s) % 2 == 0 else s[m]\n"
)
FIX_STEP = {
    **STEP,
    "instructions": "Fix median in stats.py.",
    "expected_output": "stats.py",
    "done_when": {
        "kind": "python",
        "code": (
            "got = median([1, 2, 3, 4])\nassert got == 2.5, f'median([1, 2, 3, 4]) returned {got}'"
        ),
    },
}


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_revision_of_the_user_s_file_is_asked_for_the_failing_function_only():
    # the 1.5B sent the whole given stats.py back on every revision; asked for median alone,
    # it fixed the index, and the rest of the file is kept as it was
    echo = f"```python\n{STATS}```"
    w, model = worker(
        [echo, f"Fixed:\n```python\n{MEDIAN_FIXED}```"],
        step=FIX_STEP,
        inputs={"stats.py": STATS},
        tool_calling="text",
    )
    run = execute(w)
    assert run.files["stats.py"]["status"] == "done"
    assert run.files["stats.py"]["content"] == STATS.replace("s[m] + s[m + 1]", "s[m - 1] + s[m]")
    values = prompt_values("subagent_focused_revision", str(model.calls[1][-1].content))
    assert values is not None and "median" in values["names"] and "mean" not in values["names"]
    assert values["current"].startswith("def median(v):") and "def mean" not in values["current"]
    assert "returned 3.5" in values["issues"]
    assert any(e["action"] == "focus" and e["ok"] for e in run.trajectory)


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_focused_reply_without_a_function_falls_back_to_the_whole_file():
    echo = f"```python\n{STATS}```"
    whole = STATS.replace("s[m] + s[m + 1]", "s[m - 1] + s[m]")
    w, model = worker(
        [echo, "I would change the index.", f"```python\n{whole}```"],
        step=FIX_STEP,
        inputs={"stats.py": STATS},
        tool_calling="text",
    )
    run = execute(w)
    assert run.files["stats.py"]["status"] == "done" and run.files["stats.py"]["content"] == whole
    assert prompt_values("subagent_direct_revision", str(model.calls[2][-1].content))
    assert any(e["action"] == "focus" and not e["ok"] for e in run.trajectory)


@pytest.mark.slow  # runs checks in sandboxed processes
def test_a_new_file_is_revised_whole_even_when_its_evidence_names_a_function():
    w, model = worker(
        [
            f"```python\n{STATS}```",
            f"```python\n{STATS.replace('s[m] + s[m + 1]', 's[m - 1] + s[m]')}```",
        ],
        step=FIX_STEP,
        tool_calling="text",
    )
    run = execute(w)
    assert run.files["stats.py"]["status"] == "done"
    assert prompt_values("subagent_direct_revision", str(model.calls[1][-1].content))


def test_a_fresh_draft_is_asked_as_the_first_was_with_the_user_s_file_not_the_failed_draft():
    # shown its failed draft, the 1.5B sends it back; a fresh draft sees the file as given
    w, model = worker(
        ["```\nnope\n```", "```\nnope\n```", "```\nOK\n```"],
        inputs={"out.txt": "given text\n"},
        tool_calling="text",
        fresh_drafts=2,
    )
    run = execute(w)
    assert run.files["out.txt"]["status"] == "done" and run.files["out.txt"]["content"] == "OK\n"
    fresh = str(model.calls[2][-1].content)
    assert prompt_values("subagent_direct", fresh) is not None
    assert "given text" in fresh and "nope" not in fresh
    assert len(model.calls) == 3


def test_a_check_whose_runner_is_missing_stops_the_step_before_any_draft(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pytest" else real(name, *a)
    )
    step = {**STEP, "done_when": {"kind": "pytest", "tests": ["test_out.py"]}}
    w, model = worker([tool_call("write_file", path="out.txt", content="OK"), "done"], step=step)
    run = execute(w)
    assert [e["action"] for e in run.trajectory] == ["error"]
    event = run.trajectory[0]
    assert event["error_class"] == "invalid_input" and event["fix"] == "pip install pytest"
    assert model.calls == []


HALF_STEP = {
    "step_id": "S1",
    "depends_on": [],
    "action": "coder",
    "instructions": "Fix the bug in m.py.",
    "expected_output": "m.py",
    "done_when": {"kind": "syntax"},
}
GIVEN_MODULE = "def half(x):\n    return x // 2\n"


@pytest.mark.parametrize("unchanged_fails", [True, False])
def test_a_users_module_handed_back_as_given_is_revised_only_where_the_profile_says(
    unchanged_fails,
):
    as_written = "def half(x):\n\n    return x // 2  # fine\n"  # the same code, laid out anew
    fixed = "def half(x):\n    return x / 2\n"
    responses = [f"```python\n{as_written}```", f"```python\n{fixed}```"]
    w, model = worker(
        responses,
        step=HALF_STEP,
        inputs={"m.py": GIVEN_MODULE},
        unchanged_fails=unchanged_fails,
        as_given=GIVEN_MODULE,
    )
    run = execute(w)
    entry = run.files["m.py"]
    assert entry["status"] == "done" and entry["check"]["passed"] is True
    if not unchanged_fails:  # the check's own verdict stands: the file as given is done
        assert len(model.calls) == 1 and "x // 2" in entry["content"]
        return
    first = [e for e in run.trajectory if e["action"] == "check"][0]
    assert first["check"]["passed"] is False and "as this step found it" in first["observation"]
    assert len(model.calls) == 2 and entry["content"].strip() == fixed.strip()
    revision_prompt = str(model.calls[1][1].content)
    assert "as this step found it" in revision_prompt  # the evidence reached the revision


def test_a_file_an_earlier_step_wrote_may_be_handed_back_as_it_was():
    # not the user's: it was written and checked before, and may already be right
    w, model = worker(
        [f"```python\n{GIVEN_MODULE}```"],
        step=HALF_STEP,
        inputs={"m.py": GIVEN_MODULE},
        unchanged_fails=True,
        as_given=None,
    )
    run = execute(w)
    assert run.files["m.py"]["status"] == "done" and len(model.calls) == 1
