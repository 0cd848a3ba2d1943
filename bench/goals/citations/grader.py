"""The citations goal: every URL report.md cites came back from the offline search tool."""

from grading import Verdict, missing

from agent.checks import run_check

PATH = "report.md"


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    if (absent := missing(files, [PATH])) is not None:
        return absent
    if "hnsw" not in files[PATH].lower():
        return False, "report.md never names HNSW"
    results = list((run or {}).get("search_results") or [])
    report = run_check({"kind": "citations", "min": 2}, {PATH: files[PATH]}, PATH,
                       tool_outputs=results)  # fmt: skip
    return bool(report["passed"]), str(report.get("evidence", ""))[:400]
