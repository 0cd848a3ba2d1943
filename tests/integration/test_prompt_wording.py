"""Rewording a prompt breaks nothing but tests of that prompt's wording (issue 12).

Every file in ``prompts/`` is rewritten: noise (a JSON decoy among it) before and after, and
every word of its text reversed, only the ``{placeholders}`` kept. Scripted models find their
place from the metadata of each call, so the demo, the scenarios, graph runs on the test
fakes and a run over the OpenAI wire still end exactly as they do with the real prompts.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent import Context, ScriptedChatModel, build_graph, prompts, resume, run
from agent.cli import main
from agent.models import providers as agent_providers
from agent.models.scenarios import SCENARIO_GOALS
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config
from tests.fakes import END, ctx, models, sqlite_graph, step, writer
from tests.openai_server import serve

ORIGINALS = prompts.prompts_dir()
NOISE = 'Zyx qwv {{"decoy": true}} -- an unrelated preamble.\n\n'
WORD = re.compile(r"[A-Za-z_]+")


def reword(template: str) -> str:
    """``template`` with noise around it and every word reversed; placeholders unchanged."""
    parts = [NOISE]
    for literal, field, spec, conversion in string.Formatter().parse(template):
        reworded = WORD.sub(lambda m: m.group()[::-1].upper(), literal)
        parts.append(reworded.replace("{", "{{").replace("}", "}}"))
        if field is not None:
            parts.append(_placeholder(field, spec, conversion))
    parts.append("\n\n" + NOISE)
    return "".join(parts)


def _placeholder(field: str, spec: str | None, conversion: str | None) -> str:
    return (
        "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
    )


def _fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


@pytest.fixture
def reworded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every prompt file reworded, served from a copy of the folder for this test only."""
    source = ORIGINALS
    folder = tmp_path / "reworded-prompts"
    for path in source.rglob("*.txt"):
        target = folder / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(reword(path.read_text(encoding="utf-8")), encoding="utf-8")
    prompts.load_prompt.cache_clear()
    monkeypatch.setattr(prompts, "prompts_dir", lambda: folder)
    yield folder
    prompts.load_prompt.cache_clear()


def outcome(result: dict[str, Any]) -> dict[str, Any]:
    """What a run ended with, leaving out token counts (a reworded prompt is longer)."""
    keep = ("status", "stop_reason", "converged", "final_answer", "rounds", "plan_version")
    artifacts = {p: (a["status"], a.get("sha256")) for p, a in result["artifacts"].items()}
    return {k: result.get(k) for k in keep} | {"artifacts": artifacts}


def scenario_run(name: str, tmp_path: Path) -> dict[str, Any]:
    graph = build_graph(checkpointer=InMemorySaver())
    goal = SCENARIO_GOALS[name]
    return run(graph, goal, context=Context(model=f"scripted:{name}"), thread_id="t")


def test_every_prompt_file_is_reworded_and_keeps_its_placeholders(reworded):
    originals = {p.relative_to(ORIGINALS): p.read_text() for p in ORIGINALS.rglob("*.txt")}
    assert len(originals) >= 10
    for relative, original in originals.items():
        text = (reworded / relative).read_text(encoding="utf-8")
        assert text != original and text.startswith(NOISE)
        assert _fields(text) == _fields(original)
    values = dict.fromkeys(_fields(prompts.load_prompt("subagent_revision")), "V")
    rendered = prompts.render("subagent_revision", **values)
    assert "did not pass its check" not in rendered and "step_id: V" not in rendered
    assert '{"decoy": true}' in rendered


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("demo", marks=pytest.mark.slow),
        "happy",
        "replan",
        "depth-cap",
    ],  # demo: pytest checks
)
def test_each_scripted_scenario_ends_the_same_with_every_prompt_reworded(name, tmp_path, request):
    before = outcome(scenario_run(name, tmp_path / "before"))
    request.getfixturevalue("reworded")
    after = outcome(scenario_run(name, tmp_path / "after"))
    assert after == before
    expected = "depth_cap" if name == "depth-cap" else "end"
    assert before["stop_reason"] == expected


@pytest.mark.slow  # the demo's pytest checks run in sandboxed processes
def test_the_demo_command_succeeds_with_every_prompt_reworded(reworded, tmp_path, capsys):
    code = main(["demo", "--db", str(tmp_path / "threads.sqlite"), "--json"])
    printed = capsys.readouterr().out
    result = json.loads(printed[printed.index("{") :])
    assert code == 0 and (result["status"], result["stop_reason"]) == ("success", "end")
    assert result["plan_version"] == 2  # the stalled README step was replanned
    assert set(result["artifacts"]) == {
        "notes/requirements.md",
        "test_slugify.py",
        "slugify.py",
        "README.md",
    }


def test_the_escalation_scenario_pauses_and_its_answer_reaches_the_plan_when_reworded(
    reworded,
):
    graph = build_graph(checkpointer=InMemorySaver())
    context = Context(model="scripted:escalation")
    paused = run(graph, "Write a report", context=context, thread_id="t")
    assert (paused["status"], paused["stop_reason"]) == ("awaiting_input", "model_escalated")
    done = resume(graph, "t", "engineers", context=context)
    assert (done["status"], done["stop_reason"]) == ("success", "end")
    steps = graph.get_state(thread_config("t")).values["plan"]["steps"]
    assert all("Audience: engineers." in s["instructions"] for s in steps)


def test_a_failed_check_is_revised_on_the_fakes_with_every_prompt_reworded(reworded, tmp_path):
    plan = [step("S1", "a.md", check={"kind": "contains", "all": ["good"]})]
    roles = models(plan, [END], writer(lambda s, p, revision: "good" if revision else "bad"))
    graph, conn = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    conn.close()
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    system, task = roles["default"].calls[0][:2]
    assert NOISE.replace("{{", "{").replace("}}", "}") in str(task.content)  # it was reworded
    assert [m["revision"] for m in roles["default"].call_metadata] == [0, 0, 1, 1]


def test_per_step_scripts_and_a_rubric_judge_work_with_every_prompt_reworded(reworded, tmp_path):
    plan = [step("S1", "a.md"), step("S2", "b.md", check="The file names its subject")]
    subagents = ScriptedChatModel(
        {
            "S1": [tool_call("write_file", path="a.md", content="A\n"), "done"],
            "S2": [tool_call("write_file", path="b.md", content="B\n"), "done"],
        }
    )
    roles = models(plan, [END], default=subagents)
    graph, conn = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    conn.close()
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    # b.md's rubric, and a.md's: no program can judge prose, so the judge reads it too
    assert result["usage"]["judge"]["calls"] == 2


def test_an_invalid_plan_is_retried_then_escalated_with_every_prompt_reworded(reworded, tmp_path):
    cyclic = [step("S1", "a.md", deps=("S2",)), step("S2", "b.md", deps=("S1",))]
    roles = models([{"steps": cyclic}] * 3, [])
    graph, conn = sqlite_graph(tmp_path, roles)
    result = run(graph, "goal", context=ctx(), thread_id="t")
    conn.close()
    assert (result["status"], result["stop_reason"]) == ("awaiting_input", "invalid_plan")
    assert len(roles["planner"].calls) == 3  # the same plan twice: a try with an example


def test_a_run_over_the_openai_wire_succeeds_with_every_prompt_reworded(
    reworded, tmp_path, monkeypatch
):
    with serve("happy") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        monkeypatch.setattr(agent_providers, "_CACHE", {})
        graph, conn = sqlite_graph(tmp_path, {})
        result = run(graph, "goal", context=Context(model="openai:fake-model"), thread_id="t")
        conn.close()
    assert (result["status"], result["stop_reason"]) == ("success", "end")
    assert result["usage"] == server.usage_by_role()
    roles = {"planner", "researcher", "writer", "reflection", "judge"}  # the judge reads prose
    assert {a["role"] for a in server.answers} == roles
