"""The SQL goal: the query's result rows against a hidden reference query on Chinook."""

from grading import Verdict, missing

from agent.checks import run_check

PATH = "top_genres.sql"
REFERENCE = (
    "SELECT g.Name, COUNT(t.TrackId) AS track_count FROM Genre g "
    "JOIN Track t ON t.GenreId = g.GenreId GROUP BY g.GenreId "
    "ORDER BY track_count DESC, g.Name LIMIT 3"
)


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    if (absent := missing(files, [PATH])) is not None:
        return absent
    databases = (run or {}).get("databases") or {}
    if "chinook" not in databases:
        return False, "the grader needs the chinook database (run['databases']['chinook'])"
    spec = {"kind": "sql", "db": "chinook", "reference": REFERENCE}
    report = run_check(spec, {PATH: files[PATH]}, PATH, databases=databases)
    return bool(report["passed"]), str(report.get("evidence", ""))[:400]
