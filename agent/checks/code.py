"""The ``python`` and ``pytest`` check kinds: verdicts the artifact under check cannot forge.

The artifact and its check run in two sandboxes linked by ``agent.sandbox.bridge``: the
check's process imports the artifact's modules as proxies, so no artifact code ever runs
where the verdict is made; values cross as plain data or as handles whose equality, truth,
hashing, ordering and containment the check's side decides, and the check's process serves
no request of the artifact's (but calls of the callbacks it passed in). The verdict is a
JSON report the check's process writes after every test ran, on a descriptor only it holds.
A pass needs everything to have gone as planned: the check's process exited 0 on its own,
before its deadline and under every limit (a kill fails the check, whatever it wrote); a
complete report; an untainted bridge (no unexpected message from the artifact's side); at
least one test, every collected test passed, none skipped, xfailed or errored. What the
processes printed is evidence, never a verdict.

Test files, check code and configuration are read by the host before anything runs and are
never in the artifact's sandbox; pytest runs with its own configuration only (no ini files,
no ``conftest.py`` above the tests, no plugin autoload). Files that would shadow the test
framework, the standard library or Python's start-up (``conftest.py``, ``sitecustomize.py``,
``pytest.py``, ``*.pth`` …) are refused.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agent.checks.examples import EXAMPLES_PROGRAM
from agent.checks.registry import CheckScope, needs_strings, register_check
from agent.checks.report import CheckReport, make_report
from agent.sandbox import (
    Job,
    SandboxResult,
    program,
    program_package,
    run_jobs,
    weaker_isolation_warning,
)

DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 120.0
_BRIDGE = "__deepreflect_bridge__"  # a package folder
_RUNNER = "__deepreflect_runner__.py"
_CODE = "__deepreflect_check_code__.py"
_INI = "__deepreflect_pytest__.ini"
_OWN = (_BRIDGE, _RUNNER, _CODE, _INI)
_STARTUP_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "__main__.py"}
_CONFIG_NAMES = {"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", ".pytest.ini"}
_FRAMEWORK = {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "hypothesis"}
# the failing assertion ("E   assert 'a b' == 'a-b'") and where it failed ("t.py:4: in test_a")
_PYTEST_DETAIL = re.compile(r"^(E\s+\S|[^/\s]\S*\.py:\d+(: |$))")
_PYTEST_SUMMARY = re.compile(r"^=*\s*(no tests ran|\d+ \w+.*) in [\d.]+s")

_WEAKER = "weaker isolation: process sandbox; install bubblewrap for kernel isolation"
Verdict = tuple[bool, float, str]
"""(passed, score, evidence) of one code check."""


def refused_paths(files: Mapping[str, str], trusted: Sequence[str] = ()) -> list[str]:
    """Why each file (but the ``trusted`` test files) may not enter a sandbox, if it may not."""
    problems = []
    for path in sorted(files):
        if path in trusted:
            continue
        name = posixpath.basename(path)
        top = path.split("/", 1)[0].removesuffix(".py")
        own = name in _OWN or _BRIDGE in (top, name.removesuffix(".py"))
        if name in _STARTUP_NAMES or name.endswith(".pth") or own:
            problems.append(f"{path} would change how Python or pytest starts")
        elif path.endswith(".py") or "/" in path:
            if top in _FRAMEWORK:
                problems.append(f"{path} would shadow the test framework ({top})")
            elif top in sys.stdlib_module_names:
                problems.append(f"{path} would shadow the standard library module {top!r}")
    return problems


def _validate_python(spec: dict[str, Any]) -> list[str]:
    errors = [] if isinstance(spec.get("code"), str) else ["kind 'python' needs 'code': a string"]
    calls = spec.get("calls", [])
    pairs = isinstance(calls, list) and all(
        isinstance(c, list | tuple) and len(c) == 2 and all(_is_name(n) for n in c) for c in calls
    )
    if not pairs:
        errors.append("kind 'python' takes 'calls': a list of [caller, callee] function names")
    if spec.get("program", EXAMPLES_PROGRAM) != EXAMPLES_PROGRAM:
        errors.append(f"kind 'python' takes 'program' only as {EXAMPLES_PROGRAM!r}")
    return errors + _valid_timeout(spec)


def _validate_python_in_scope(spec: dict[str, Any], scope: CheckScope) -> list[str]:
    """A plan's ``python`` code is the planner's own: only the product names its program."""
    if "program" in spec:
        return ["kind 'python': 'program' is set by the product, not by a plan; leave it out"]
    return []


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value.isidentifier()


def _validate_pytest(spec: dict[str, Any]) -> list[str]:
    return needs_strings(spec, "tests") + _valid_timeout(spec)


MAX_NAMED_FILES = 12  # files an advice lists by name; the rest are counted


def _validate_pytest_in_scope(spec: dict[str, Any], scope: CheckScope) -> list[str]:
    """Each test file must be one the check will hold and the artifact did not write: a
    dependency's output or a file already in the thread. Otherwise the plan is refused with
    what would make it hold: the step that writes it as a dependency, a new step, or an
    existing file."""
    writers = dict(scope.writers)
    reachable = (scope.files | scope.thread_files) - {scope.artifact}
    errors: list[str] = []
    for test in spec["tests"]:
        if test == scope.artifact:
            errors.append(
                f"pytest check names the step's own artifact {test!r} as its tests: the "
                "artifact would decide its own verdict; write the tests in another step and "
                "make this step depend on it, or check this artifact with another kind"
            )
            continue
        if test in reachable:
            continue
        writer = writers.get(test)
        if writer is not None:
            errors.append(
                f"pytest check names {test!r}, which step {writer} writes but this step does "
                f"not depend on: add {writer!r} to this step's depends_on"
            )
            continue
        existing = sorted((scope.thread_files | scope.files) - {""})
        shown = ", ".join(existing[:MAX_NAMED_FILES]) or "the thread has no files yet"
        if len(existing) > MAX_NAMED_FILES:
            shown += f" (and {len(existing) - MAX_NAMED_FILES} more)"
        errors.append(
            f"pytest check names {test!r}, which no step writes and which is not among the "
            f"thread's files: add a step that writes it (a step whose action writes code) and "
            f"make this step depend on it, or name a file that exists: {shown}"
        )
    return errors


def _valid_timeout(spec: dict[str, Any]) -> list[str]:
    value = spec.get("timeout_s", DEFAULT_TIMEOUT_S)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not 0 < value <= MAX_TIMEOUT_S:
        return [f"'timeout_s' must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]"]
    return []


def _check_python(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    """Run ``path``, then the spec's ``code`` in its namespace; pass when the code finishes
    and, for each ``[caller, callee]`` in ``calls``, the source of the artifact's function
    ``caller`` refers to ``callee`` (read here, on the host: the check's process sees the
    artifact only through the bridge, never its code)."""
    own_builtins = spec.get("program") == EXAMPLES_PROGRAM
    verdict = _python_verdict(files, path, spec["code"], _timeout(spec), own_builtins)
    if missing := _uncalled(files.get(path, ""), spec.get("calls") or []):
        passed, score, evidence = verdict
        said = "; ".join(f"{a}() does not call {b}() (the goal asks it to)" for a, b in missing)
        evidence = said if passed else f"{evidence}; {said}"
        verdict = (False, min(score, 0.5), evidence)
    return _warned("python", verdict)


def _uncalled(source: str, calls: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """The ``(caller, callee)`` pairs whose caller, a top-level function of ``source``, does
    not refer to the callee (a missing or unparsable caller is the run's failure to report)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    missing = []
    for caller, callee in calls:
        node = functions.get(str(caller))
        if node is not None and str(callee) not in _names_in(node):
            missing.append((str(caller), str(callee)))
    return missing


def _names_in(node: ast.AST) -> set[str]:
    """The names and attributes a piece of code refers to (not its comments or strings)."""
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
    return names


def _check_pytest(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    """Run the listed test files against the artifacts; pass when every test passed."""
    return _warned("pytest", _pytest_verdict(files, spec["tests"], _timeout(spec)))


def _timeout(spec: dict[str, Any]) -> float:
    return float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))


def _warned(kind: str, verdict: Verdict) -> CheckReport:
    """Evidence says so when the code ran under the weaker process isolation."""
    passed, score, evidence = verdict
    if weaker_isolation_warning():
        evidence = f"{evidence} [{_WEAKER}]"
    return make_report(kind, passed, score, evidence)


def _python_verdict(
    files: Mapping[str, str], path: str, code: str, timeout_s: float, own_builtins: bool = False
) -> Verdict:
    """``own_builtins``: the code is the product's examples program, whose bare builtins are
    the builtins (the runner does not refuse them where the artifact defines their names)."""
    if refused := refused_paths(files):
        return False, 0.0, "refused: " + "; ".join(refused)
    artifact_files, check_files = _split(files, trusted=())
    check_files[_CODE] = code
    argv = ["python", path, _CODE, *(["--own-builtins"] if own_builtins else [])]
    check, artifact = _run(check_files, argv, artifact_files, path, timeout_s)
    verdict = _report_of(check)
    if verdict is None:
        return False, 0.0, _unfinished(check, artifact, timeout_s)
    if problem := _not_as_planned(verdict, artifact) or _refusal(verdict):
        return False, 0.0, problem
    if not verdict.get("ok"):
        return False, 0.0, _describe_failure(verdict, path)
    return True, 1.0, f"{path} ran and the check code passed"


def _pytest_verdict(files: Mapping[str, str], tests: Sequence[str], timeout_s: float) -> Verdict:
    missing = [t for t in tests if t not in files]
    if missing:
        return False, 0.0, "test file not in files: " + ", ".join(missing)
    if refused := refused_paths(files, trusted=tests):
        return False, 0.0, "refused: " + "; ".join(refused)
    artifact_files, check_files = _split(files, trusted=tests)
    check_files[_INI] = "[pytest]\n"
    argv = ["pytest", _INI, *tests]
    check, artifact = _run(check_files, argv, artifact_files, "-", timeout_s, max_output=20_000)
    verdict = _report_of(check)
    if verdict is None:
        return False, 0.0, _unfinished(check, artifact, timeout_s)
    if problem := _not_as_planned(verdict, artifact):
        return False, 0.0, problem
    if verdict.get("session_finished") is not True:
        return False, 0.0, "the test session did not finish | " + _tail(check, artifact)
    passed, score, evidence = _judge_pytest(verdict, check.stdout)
    if refusal := _refusal(verdict):
        # a test whose code caught the refusal passed on the artifact's word: no score
        return False, 0.0 if passed else score, f"{refusal} | {evidence}"
    return passed, score, evidence


def _split(
    files: Mapping[str, str], trusted: Sequence[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Artifact files for the artifact's sandbox; tests and data (never code, never
    configuration) for the check's."""
    artifact = {p: c for p, c in files.items() if p not in trusted}
    check = {p: files[p] for p in trusted}
    for path, content in artifact.items():
        name = posixpath.basename(path)
        if not path.endswith(".py") and name not in _CONFIG_NAMES:
            check.setdefault(path, content)
    return artifact, check


def _modules(files: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Module names the artifact's files provide, and which of them are packages."""
    modules: set[str] = set()
    packages: set[str] = set()
    for path in files:
        if not path.endswith(".py"):
            continue
        parts = path[: -len(".py")].split("/")
        if not all(part.isidentifier() for part in parts):
            continue
        for depth in range(1, len(parts)):
            packages.add(".".join(parts[:depth]))
        if parts[-1] == "__init__":
            parts = parts[:-1]
            packages.add(".".join(parts))
        if parts:
            modules.add(".".join(parts))
    return sorted(modules | packages), sorted(packages)


def _run(
    check_files: dict[str, str],
    check_argv: list[str],
    artifact_files: dict[str, str],
    artifact: str,
    timeout_s: float,
    max_output: int = 8000,
) -> tuple[SandboxResult, SandboxResult]:
    programs = {
        **program_package("bridge", shipped_as=_BRIDGE),
        _RUNNER: program("check_runner.py"),
    }
    names, packages = _modules(artifact_files)
    env = {
        "DEEPREFLECT_ARTIFACT_MODULES": json.dumps(names),
        "DEEPREFLECT_ARTIFACT_PACKAGES": json.dumps(packages),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    check_job = Job(
        files={**check_files, **programs},
        argv=[_RUNNER, *check_argv],
        env=env,
        max_output=max_output,
        report=True,
    )
    artifact_job = Job(
        files={**artifact_files, **programs}, argv=[_RUNNER, "serve", artifact], main=False
    )
    check, served = run_jobs([check_job, artifact_job], timeout_s=timeout_s, link=True)
    return check, served


def _report_of(result: SandboxResult) -> dict[str, Any] | None:
    """The check's complete report, only when its process ended on its own: exit status 0,
    no signal, no limit hit, before the deadline. A killed check has no verdict."""
    if result.timed_out or result.killed_reason is not None or result.returncode != 0:
        return None
    try:
        verdict = json.loads(result.report) if result.report else None
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) and verdict.get("finished") is True else None


def _not_as_planned(verdict: dict[str, Any], artifact: SandboxResult) -> str | None:
    """The bridge's taint (the artifact's side said something the protocol does not allow),
    or an artifact process that kept running after the check was over."""
    if artifact.outlived:
        return (
            "the artifact's process was still running after the check ended (a thread or a "
            "process it started kept it alive); it was killed"
        )
    tainted = verdict.get("tainted")
    if not isinstance(tainted, list):
        return "the check's report is incomplete (no bridge state)"
    if tainted:
        reasons = "; ".join(str(t)[:300] for t in tainted[:3])
        return f"the bridge to the artifact's process was broken: {reasons}"
    if not isinstance(verdict.get("refused"), list):
        return "the check's report is incomplete (no refusals)"
    return None


def _refusal(verdict: dict[str, Any]) -> str | None:
    """The first decision the check refused to take on the artifact's word (a handle
    compared, used as a truth value or a number): one line saying what the artifact
    returned and what a check compares instead. Such a check fails, whatever its code
    caught."""
    refused = verdict.get("refused") or []
    return str(refused[0])[:600] if refused else None


def _unfinished(check: SandboxResult, artifact: SandboxResult, timeout_s: float) -> str:
    """Why no verdict came: timeout, a limit, a signal, a process that ended before the tests
    did or exited with a status other than 0 (a report it wrote does not count then)."""
    if check.killed_reason == "timeout" or check.timed_out:
        text = f"timed out after {timeout_s:g} s; every process of the check was killed"
    elif check.killed_reason == "cpu":
        text = f"CPU time limit ({timeout_s:g} s + 1) exceeded; the check was killed"
    elif check.killed_reason == "memory":
        text = "the check's processes outgrew the memory limit and were killed"
    elif check.killed_reason == "output":
        text = "the code flooded its output and was killed"
    elif check.killed_reason == "disk":
        text = "the code wrote more than its folders may hold and was killed"
    elif check.killed_reason is not None:
        text = f"the check's process was killed ({check.killed_reason})"
    elif check.returncode is None or check.returncode < 0:
        text = f"the check's process was ended by a signal (status {check.returncode})"
    elif check.report:
        text = f"the check's process exited with status {check.returncode} after its report"
    else:
        text = f"the process exited before the tests finished (code {check.returncode})"
    return " | ".join([text, *_tail(check, artifact).split(" | ")]).rstrip(" |")


def _tail(check: SandboxResult, artifact: SandboxResult) -> str:
    return " | ".join((check.stderr or artifact.stderr).strip().splitlines()[-3:])


def _describe_failure(failure: dict[str, Any], path: str) -> str:
    """``AssertionError at line 3: assert slugify('A B') == 'a-b'`` (an assertion with a
    message: the message alone) plus where it was raised."""
    error = str(failure.get("type")) + (f": {failure['message']}" if failure.get("message") else "")
    frames = failure.get("frames") or []
    if failure.get("stage") == "artifact":
        at = next((f for f in reversed(frames) if f[0] == "artifact"), None)
        where = f" at line {at[1]}: {at[2]}" if at else ""
        return f"running {path} raised {error}{where}"
    in_check = next((f for f in reversed(frames) if f[0] == "check"), None)
    # an assertion's own message says what failed; its line would only repeat the check code
    said = failure.get("type") == "AssertionError" and bool(failure.get("message"))
    text = f"{error} at line {in_check[1]}: {in_check[2]}" if in_check and not said else error
    if frames and frames[-1][0] == "artifact":
        text += f" (raised in {path} line {frames[-1][1]}: {frames[-1][2]})"
    return text


def _judge_pytest(verdict: dict[str, Any], stdout: str) -> Verdict:
    """Every collected test ran and passed; anything else fails, saying what happened."""
    outcomes: dict[str, str] = verdict.get("outcomes") or {}
    counts = Counter(outcomes.values())
    collected = int(verdict.get("collected") or 0)
    ran = counts["passed"] + counts["failed"] + counts["error"]
    score = counts["passed"] / max(collected, ran, 1)
    lines = stdout.splitlines()
    details = [
        ln.strip()
        for ln in lines
        if _PYTEST_DETAIL.match(ln) and not ln.startswith("__deepreflect")
    ]
    details = list(dict.fromkeys(details))[:8]
    summary = next((ln.strip("= ") for ln in reversed(lines) if _PYTEST_SUMMARY.match(ln)), "")
    problem = _pytest_problem(verdict, counts, collected, len(outcomes))
    if problem is None:
        return True, 1.0, f"{collected} of {collected} tests passed"
    head = f"{problem} ({summary})" if summary else problem
    return False, score if collected else 0.0, " | ".join([head, *details])


def _pytest_problem(
    verdict: dict[str, Any], counts: Counter[str], collected: int, reported: int
) -> str | None:
    if verdict.get("collect_errors"):
        return "the tests could not be collected: " + ", ".join(verdict["collect_errors"][:3])
    if collected == 0:
        return "no tests were collected from the listed test files"
    if reported != collected:
        return f"only {reported} of {collected} collected tests reported a result"
    bad = [f"{counts[k]} {word}" for k, word in _NOT_PASSED if counts[k]]
    if bad:
        return f"{', '.join(bad)} of {collected} tests"
    return None


_NOT_PASSED = (
    ("failed", "failed"),
    ("error", "errored"),
    ("skipped", "skipped at run time"),
    ("xfailed", "xfailed"),
    ("xpassed", "xpassed"),
)


def _check_syntax(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    """The artifact parses as its language (Python, JSON), a module defines every function
    or class in ``defines`` at its top level, and its code refers to every name in ``uses``
    (the goal's "must use word_lengths"); nothing runs: the check of a module
    that imports a sibling not written yet, which cannot run alone (``agent.plan.floor``). On
    the 1.5B such a module was proven by ``non_empty`` with a ``SyntaxError`` in it, and the
    package's own check, which imports it, blamed another step."""
    suffix = posixpath.splitext(path)[1].lower()
    text = files[path]
    uses = [u for u in spec.get("uses") or [] if isinstance(u, str)]
    defines = [d for d in spec.get("defines") or [] if isinstance(d, str)]
    try:
        if suffix == ".py":
            tree = ast.parse(text, filename=path)
            if absent := [d for d in defines if d not in _defined(tree)]:
                why = f"{path} parses but does not define {', '.join(absent)}"
                return make_report("syntax", False, 0.0, why[:400])
            if missing := [u for u in uses if u not in _referenced(tree)]:
                shown = ", ".join(missing)
                bare = [u for u in missing if u in _names_in(tree)]
                why = f"{path} parses but does not use {shown} (no call, import or reference)"
                if bare:  # called, but never imported: a NameError once it runs
                    why = f"{path} calls {', '.join(bare)} but never imports it (a NameError)"
                return make_report("syntax", False, 0.0, why[:400])
        elif mismatch := syntax_mismatch(spec, path):
            return make_report("syntax", False, 0.0, mismatch)
        else:
            json.loads(text)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}: {(exc.text or '').strip()}" if exc.lineno else ""
        return make_report("syntax", False, 0.0, f"{path}: SyntaxError: {exc.msg}{where}"[:400])
    except ValueError as exc:  # JSON errors, a null byte in Python source
        return make_report("syntax", False, 0.0, f"{path} does not parse: {exc}"[:400])
    except (MemoryError, RecursionError):
        return make_report("syntax", False, 0.0, f"{path} is nested too deeply to parse")
    return make_report("syntax", True, 1.0, f"{path} parses")


def _referenced(tree: ast.Module) -> set[str]:
    """The names a module's code takes from elsewhere: what it imports and the attributes it
    reads (``textkit.count.word_lengths``), never its comments or strings, less what it
    defines itself: a ``count.py`` with its own ``split_words`` does not use the sibling's,
    and one calling ``split_words`` without importing it fails with a ``NameError`` (the 1.5B
    wrote both)."""
    own = _defined(tree)
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names.update(a.name.rsplit(".", 1)[-1] for a in node.names)
    return names - own


def _defined(tree: ast.Module) -> set[str]:
    """The functions and classes a module defines at its top level."""
    defined = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in tree.body if isinstance(node, defined)}


def syntax_mismatch(spec: Mapping[str, Any], path: str) -> str | None:
    """Why a ``syntax`` check fails on ``path`` whatever the file holds, or None: it parses
    only Python and JSON, and only a module defines or uses names."""
    suffix = posixpath.splitext(path)[1].lower()
    if suffix == ".py":
        return None
    if spec.get("uses") or spec.get("defines"):
        named = "'uses'" if spec.get("uses") else "'defines'"
        return f"{named} is for Python modules, not {path}"
    return None if suffix == ".json" else f"no syntax check for {suffix or path}"


def _validate_syntax_in_scope(spec: dict[str, Any], scope: CheckScope) -> list[str]:
    why = syntax_mismatch(spec, scope.artifact) if scope.artifact else None
    return [f"kind 'syntax' cannot pass here: {why}"] if why else []


def _validate_syntax(spec: dict[str, Any]) -> list[str]:
    errors = []
    for key in ("uses", "defines"):
        names = spec.get(key, [])
        if not isinstance(names, list) or not all(
            isinstance(n, str) and n.isidentifier() for n in names
        ):
            errors.append(f"kind 'syntax' takes '{key}': a list of Python names")
    return errors


def register() -> None:
    """Register the code kinds (sandboxed ``python`` and ``pytest``, and ``syntax``, which
    runs nothing); ``agent.checks`` calls this once."""
    register_check(
        "syntax",
        _check_syntax,
        validate=_validate_syntax,
        validate_in_scope=_validate_syntax_in_scope,
        describe=(
            '{"kind": "syntax", "uses": ["name"], "defines": ["name"]} (a .py or .json artifact'
            " parses; a module refers to each name in 'uses' and defines each in 'defines';"
            " nothing runs)"
        ),
    )
    register_check(
        "python",
        _check_python,
        validate=_validate_python,
        validate_in_scope=_validate_python_in_scope,
        describe=(
            '{"kind": "python", "code": "assert ...", "calls": [["caller", "callee"]]}'
            " ('calls' optional: the artifact's function caller must call callee)"
        ),
    )
    register_check(
        "pytest",
        _check_pytest,
        validate=_validate_pytest,
        describe=(
            '{"kind": "pytest", "tests": ["tests/test_x.py"]} (the tests must be another step\'s'
            " artifact, of a step this step depends on, or a file already among the files)"
        ),
        validate_in_scope=_validate_pytest_in_scope,
        requires=[("pytest", "pytest")],
    )
