"""The goal suite of bench/goals: its hidden graders can fail, and its scripted tier runs.

Every grader passes its goal's known-good artifacts and fails each known-bad set
(tests/goal_solutions.py), so none is a check that cannot fail. Then a few goals run end to
end through ``bench/goals.py`` and ``deepreflect run`` (the CLI of tests/goal_solver.py:
deepreflect's own, with per-goal scripted models): a declared Chinook database, the offline
search over MCP, an escalation answered and resumed, a false success and a pause recorded
as a stop.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from agent.tools.search import local_search_tool
from tests.goal_solutions import BAD, GOOD

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "goals"))
_spec = importlib.util.spec_from_file_location("goals_bench", ROOT / "bench" / "goals.py")
assert _spec is not None and _spec.loader is not None
goals = sys.modules["goals_bench"] = importlib.util.module_from_spec(_spec)  # for dataclasses
_spec.loader.exec_module(goals)
import goal_checks  # noqa: E402 - bench/ is on the path only from here

SOLVER = f"{sys.executable} {ROOT / 'tests' / 'goal_solver.py'}"
GOALS = {g.name: g for g in goals.load_goals()}
SEARCH_QUERY = "vector index HNSW IVF choosing"


@pytest.fixture(scope="module")
def spaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("spaces")
    return {name: goals.workspace(goal, base / name) for name, goal in GOALS.items()}


def _grade(
    name: str, files: dict[str, str], spaces: dict[str, Any], **run: Any
) -> tuple[bool, str]:
    goal = GOALS[name]
    results = None
    if goal.search_corpus is not None:
        corpus = json.loads(goal.search_corpus.read_text(encoding="utf-8"))
        results = run.pop("search_results", [local_search_tool(corpus).invoke(SEARCH_QUERY)])
    return goals.grade_files(
        goal, files, spaces[name], escalated=run.pop("escalated", True), search_results=results
    )


def test_the_suite_has_the_goals_the_issue_names() -> None:
    assert len(GOALS) >= 8
    assert {"coding", "bughunt", "qa", "research", "report"} <= {g.workload for g in GOALS.values()}
    assert [g.name for g in GOALS.values() if g.escalates] == ["escalation"]
    assert GOALS["escalation"].answer and "eu-north-1" in GOALS["escalation"].answer
    assert set(GOALS["sql"].databases) == {"chinook"}
    assert GOALS["bughunt"].files and GOALS["refactor"].files  # given files, by the agent's path
    assert set(GOOD) == set(BAD) == set(GOALS)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_each_grader_passes_its_known_good_artifacts(name: str, spaces: dict[str, Any]) -> None:
    passed, evidence = _grade(name, dict(GOOD[name]), spaces)
    assert passed, evidence


@pytest.mark.parametrize(
    ("name", "index"), [(n, i) for n in sorted(BAD) for i in range(len(BAD[n]))]
)
def test_each_grader_fails_every_known_bad_set(
    name: str, index: int, spaces: dict[str, Any]
) -> None:
    passed, evidence = _grade(name, dict(BAD[name][index]), spaces)
    assert not passed, f"{name} bad set {index} passed: {evidence}"
    assert evidence


def test_citations_count_only_what_the_search_returned(spaces: dict[str, Any]) -> None:
    # the report's URLs are all in the corpus, but this search returned neither of them
    returned = local_search_tool(json.loads(GOALS["citations"].search_corpus.read_text())).invoke(
        "btree relational"
    )
    assert "notes.example.com" in returned
    passed, _ = _grade("citations", dict(GOOD["citations"]), spaces, search_results=[returned])
    assert not passed
    assert not _grade("citations", dict(GOOD["citations"]), spaces, search_results=[])[0]


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("from .count import word_lengths", True),
        ("from . import count\ncount.word_lengths(1)", True),
        ("import textkit.count\ntextkit.count.word_lengths(1)", True),
        ("import textkit.count as tc\ntc.word_lengths(1)", True),
        ("def f():\n    from textkit.count import word_lengths", True),
        ("from textkit import count as c\nc.word_lengths", True),
        ("from textkit import words\nwords.word_lengths", False),
        ("from textkit.words import word_lengths", False),
        ("from . import words\nwords.word_lengths", False),
        ("word_lengths = lambda t: {}  # textkit.count.word_lengths", False),
    ],
)
def test_the_package_grader_reads_every_import_form(source: str, uses: bool) -> None:
    import grading  # bench/goals/grading.py, on the path once a grader is loaded

    assert ("word_lengths" in grading.imported_names(ast.parse(source), "textkit.count")) is uses


def test_the_right_region_without_asking_is_a_guess(spaces: dict[str, Any]) -> None:
    passed, evidence = _grade("escalation", dict(GOOD["escalation"]), spaces, escalated=False)
    assert not passed and "guessed" in evidence


def test_a_grader_that_raises_fails_the_goal(spaces: dict[str, Any]) -> None:
    passed, evidence = _grade("json", {"inventory.json": '{"items": [1], "total_value": 1, '
                                       '"out_of_stock": []}'}, spaces)  # fmt: skip
    assert not passed and evidence


def test_false_success_is_success_with_a_failing_grader() -> None:
    assert goals.false_success("success", passed=False)
    assert not goals.false_success("success", passed=True)
    assert not goals.false_success("awaiting_input", passed=False)
    assert not goals.false_success("failed", passed=False)


class _Plain:
    """A plain model that answers once with a fixed reply, and reports its usage."""

    def __init__(self, reply: str) -> None:
        self.reply, self.asked = reply, []

    def invoke(self, messages: list[Any]) -> AIMessage:
        self.asked.append(messages)
        return AIMessage(self.reply, usage_metadata={"input_tokens": 90, "output_tokens": 10,
                                                     "total_tokens": 100})  # fmt: skip


def test_the_plain_model_is_asked_once_with_the_given_files(tmp_path: Path) -> None:
    model = _Plain(f"Here it is:\n```python\n{GOOD['bughunt']['stats.py']}```\nDone.")
    record = goals.run_plain(GOALS["bughunt"], model, tmp_path)
    assert record["passed"], record["evidence"]
    assert record["tokens"] == 100
    (asked,) = model.asked
    text = asked[-1].content
    assert "stats.py:" in text and "(ordered[middle] + ordered[middle + 1])" in text
    assert "one fenced code block" in text
    wrong = goals.run_plain(GOALS["bughunt"], _Plain("The bug is on line 17."), tmp_path / "w")
    assert not wrong["passed"]


def test_the_plain_model_fills_several_artifacts_in_order(tmp_path: Path) -> None:
    words, count = GOOD["package"]["textkit/words.py"], GOOD["package"]["textkit/count.py"]
    reply = f"```python\n{words}```\n\nand\n\n```python\n{count}```"
    record = goals.run_plain(GOALS["package"], _Plain(reply), tmp_path)
    assert record["passed"], record["evidence"]
    swapped = f"```python\n{count}```\n```python\n{words}```"
    assert not goals.run_plain(GOALS["package"], _Plain(swapped), tmp_path / "s")["passed"]


def test_the_plain_model_may_cite_only_the_sources_it_was_given(tmp_path: Path) -> None:
    model = _Plain(f"```markdown\n{GOOD['citations']['report.md']}```")
    assert goals.run_plain(GOALS["citations"], model, tmp_path)["passed"]
    assert "https://docs.example.org/vector-search/ivf" in model.asked[0][-1].content
    invented = GOOD["citations"]["report.md"].replace("docs.example.org", "docs.example.com")
    assert not goals.run_plain(GOALS["citations"], _Plain(invented), tmp_path / "i")["passed"]


def test_given_files_go_by_file_when_the_cli_takes_it_else_inline(tmp_path: Path) -> None:
    goal = GOALS["bughunt"]
    ws = goals.workspace(goal, tmp_path)
    assert (tmp_path / "given" / "stats.py").read_text() == goal.files["stats.py"]
    by_file = goals.run_command(["deepreflect"], goal, "m:x", ws, with_files=True)
    assert by_file[by_file.index("--file") + 1] == "stats.py"
    assert by_file[2] == goal.goal
    inline = goals.run_command(["deepreflect"], goal, "m:x", ws, with_files=False)
    assert "--file" not in inline and goal.files["stats.py"] in inline[2]
    assert inline[inline.index("--workload") + 1] == "bughunt"


# ------------------------------------------------------------------ end to end


def _suite(tmp_path: Path, *names: str, model: str = "scripted:goal-{goal}") -> dict[str, Any]:
    argv = ["--model", model, "--deepreflect", SOLVER, "--out", str(tmp_path), "--json"]
    for name in names:
        argv += ["--goal", name]
    assert goals.main(argv) == 0
    report = json.loads((tmp_path / "goals.json").read_text())
    return {row["goal"]: row for row in report["goals"]}


def test_scripted_goals_run_through_deepreflect_and_pass_their_graders(tmp_path: Path) -> None:
    rows = _suite(tmp_path, "sql", "citations", "escalation")
    for name, row in rows.items():
        assert row["status"] == "success", (name, row)
        assert row["passed"] and not row["false_success"], (name, row)
        assert row["model_calls"] > 0 and row["tokens"] > 0 and row["rounds"] >= 1
    assert rows["escalation"]["escalated"]  # it paused for the region, then finished
    assert not rows["sql"]["escalated"]
    log = (tmp_path / "citations" / "search.jsonl").read_text().splitlines()
    assert log and "docs.example.org" in json.loads(log[0])["result"]  # the MCP search ran
    # two turns, counted once: the thread's usage so far, as `deepreflect show` reports it
    shown = subprocess.run(
        [*SOLVER.split(), "show", rows["escalation"]["thread_id"], "--json",
         "--db", str(tmp_path / "escalation" / "threads.sqlite")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    usage = json.loads(shown.stdout)["usage"].values()
    assert rows["escalation"]["model_calls"] == sum(u["calls"] for u in usage)
    assert rows["escalation"]["tokens"] == sum(u["total_tokens"] for u in usage)
    exported = tmp_path / "escalation" / "export" / "deploy.json"
    assert json.loads(exported.read_text())["region"] == "eu-north-1"


def test_a_wrong_artifact_the_run_calls_done_is_a_false_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAL_SOLVER_WRONG", "1")
    row = _suite(tmp_path, "function")["function"]
    assert row["status"] == "success"
    assert not row["passed"] and row["false_success"]
    # the product's own check approved it: a miss of the critic, read from the thread
    (verdict,) = row["checks"]["artifacts"].values()
    assert verdict is not None and verdict["passed"]
    critic = goal_checks.summary([row])["all"]
    assert critic["misses"] == 1 and critic["recall"] == 0.0 and critic["precision"] is None
    # a kept run's table is printed again with the checks read back from its database
    printed = goals.report_again(tmp_path, as_json=False)
    assert printed == 0


def _row(passed: bool, *verdicts: tuple[str, bool] | None) -> dict[str, Any]:
    artifacts = {f"f{i}": None if v is None else {"kind": v[0], "passed": v[1]}
                 for i, v in enumerate(verdicts)}  # fmt: skip
    return {"passed": passed, "checks": {"artifacts": artifacts, "judge_calls": 1}}


def test_the_critic_is_scored_against_the_grader_per_deciding_family() -> None:
    rows = [
        _row(True, ("pytest", True)),  # approved, right
        _row(False, ("pytest", False)),  # flagged, right
        _row(True, ("pytest", True), ("rubric", False)),  # flagged by the judge, wrongly
        _row(False, ("non_empty", True)),  # approved though failing: a miss
        _row(False, ("pytest", True), None),  # an artifact never checked: flagged, right
    ]
    s = goal_checks.summary(rows)
    assert s["all"] == {
        "goals": 5, "flags": 3, "right_flags": 2, "failing_goals": 3, "misses": 1,
        "precision": 0.67, "recall": 0.67,
    }  # fmt: skip
    assert s["by_family"]["model judge"]["flags"] == 1
    # an 'all' check's report names its parts; every part passed, so the strongest decides
    assert goal_checks.family("non_empty+python") == "program"
    assert goal_checks.family("non_empty+contains") == "pattern"
    assert goal_checks.family("mine+non_empty") == "other"
    assert s["by_family"]["model judge"]["precision"] == 0.0
    assert s["by_family"]["presence"]["misses"] == 1
    assert s["by_family"]["program"]["goals"] == 3
    assert s["judge_calls"] == 5
    assert goal_checks.cell(rows[2]["checks"]) == "f0: pytest pass; f1: rubric fail"
    assert not goal_checks.approved({"artifacts": {}})  # nothing to approve is no approval


def test_a_pause_of_a_goal_that_needs_no_answer_is_a_stop(tmp_path: Path) -> None:
    # the escalation goal's models on the json goal: reflection asks, nobody answers
    row = _suite(tmp_path, "json", model="scripted:goal-escalation")["json"]
    assert row["status"] == "awaiting_input" and row["escalated"]
    assert not row["passed"] and not row["false_success"]
    assert row["rounds"] >= 1


# ------------------------------------------------------------------ the held-out set

HELDOUT = {g.name: g for g in goals.load_goals(goal_set="heldout")}


@pytest.fixture(scope="module")
def heldout_spaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("heldout")
    return {name: goals.workspace(goal, base / name) for name, goal in HELDOUT.items()}


def test_the_heldout_set_rewords_each_goal_twice_and_keeps_its_grading() -> None:
    assert len(HELDOUT) == 16
    assert sorted(HELDOUT) == sorted(f"{n}-{kind}" for n in GOALS for kind in ("reworded", "de"))
    for name, goal in HELDOUT.items():
        original = GOALS[goal.original]  # an existing original grader, by name
        assert name.rpartition("-")[0] == goal.original
        assert goal.home == original.folder and (goal.home / "grader.py").is_file()
        assert not (goal.folder / "grader.py").exists()  # reused, never copied
        assert goal.goal != original.goal
        same = ("workload", "artifacts", "files", "databases", "search_corpus", "escalates")
        assert [getattr(goal, k) for k in same] == [getattr(original, k) for k in same], name
        assert (goal.answer is None) == (original.answer is None)
        assert goal.answer is None or "eu-north-1" in goal.answer
    # --set picks the set; the suite stays the default
    assert goals.parse_args(["--model", "m:x"]).set == "goals"
    assert goals.parse_args(["--model", "m:x", "--set", "heldout"]).set == "heldout"


@pytest.mark.parametrize("name", sorted(HELDOUT))
def test_each_heldout_goal_grades_like_its_original(
    name: str, heldout_spaces: dict[str, Any]
) -> None:
    goal = HELDOUT[name]
    results = None
    if goal.search_corpus is not None:
        corpus = json.loads(goal.search_corpus.read_text(encoding="utf-8"))
        results = [local_search_tool(corpus).invoke(SEARCH_QUERY)]
    ws = heldout_spaces[name]
    good = goals.grade_files(
        goal, dict(GOOD[goal.original]), ws, escalated=True, search_results=results
    )
    assert good[0], good[1]
    bad = goals.grade_files(
        goal, dict(BAD[goal.original][0]), ws, escalated=True, search_results=results
    )
    assert not bad[0] and bad[1], f"{name} passed a known-bad set: {bad[1]}"
