"""The programs of a code check, one per sandbox: ``serve`` (the artifact's side, an
:class:`ArtifactSide` that answers requests) and ``pytest`` / ``python`` (the check's side, a
:class:`CheckSide` that only asks, and alone writes the verdict).

The check's side writes its verdict as JSON to ``DEEPREFLECT_REPORT_FD``, a descriptor only
it holds, after every test ran, then exits 0 at once. The report says whether the bridge was
**tainted** (the artifact's side broke the protocol: a request of its own, a reply nobody
asked for, malformed data, a closed link, a check failure swallowed inside a callback); a
tainted check never passes. The artifact's side has no way to reach the descriptor. Standard
library (and pytest, for ``pytest``) only: this file is copied into both sandboxes.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.machinery
import json
import keyword
import os
import sys
import types
from typing import Any

from __deepreflect_bridge__.artifact_side import ArtifactSide  # type: ignore[import-not-found]
from __deepreflect_bridge__.check_side import CheckSide  # type: ignore[import-not-found]
from __deepreflect_bridge__.class_facts import (  # type: ignore[import-not-found]
    guard_class_facts,
)
from __deepreflect_bridge__.names import free_names  # type: ignore[import-not-found]
from __deepreflect_bridge__.remote import Remote  # type: ignore[import-not-found]
from __deepreflect_bridge__.wire import connect  # type: ignore[import-not-found]

# -- the artifact's side ---------------------------------------------------------------------


def serve(artifact: str) -> None:
    """Import modules and run the artifact on request, until the check hangs up."""

    def run_artifact() -> dict[str, Any]:
        dotted = _package_module(artifact)
        if dotted is not None:  # as a user imports it: its relative imports resolve
            names = vars(importlib.import_module(dotted))
            return {k: v for k, v in names.items() if not k.startswith("__")}
        stem = os.path.splitext(os.path.basename(artifact))[0]
        module = types.ModuleType(stem if stem.isidentifier() else "artifact")
        module.__file__ = os.path.abspath(artifact)
        sys.modules[module.__name__] = module
        with open(artifact, encoding="utf-8") as handle:
            exec(compile(handle.read(), module.__file__, "exec"), module.__dict__)
        return {k: v for k, v in module.__dict__.items() if not k.startswith("__")}

    roots = {"import": importlib.import_module, "run": run_artifact}
    ArtifactSide(connect(), roots).serve_forever()


def _package_module(path: str) -> str | None:
    """The dotted name a module inside a package is imported by (``textkit/__init__.py`` →
    ``textkit``, ``textkit/words.py`` → ``textkit.words``), or None for a top-level file, a
    path no import could name or one a module already imported shadows. Run as a script,
    ``from .words import *`` fails with "no known parent package" though the package
    imports."""
    parts = os.path.splitext(os.path.normpath(path))[0].split(os.sep)
    if not path.endswith(".py") or len(parts) < 2:
        return None
    if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return None
    if parts[0] in sys.modules or parts[0] in sys.stdlib_module_names:
        return None  # ``json/x.py`` would import the standard library's json
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# -- the check's side ------------------------------------------------------------------------


class _RemoteModule(types.ModuleType):
    """An artifact module seen from the check: attribute reads go to the artifact's process,
    but a module the artifact imported (``math``, ``pytest``) reads as the check's own
    import, and ``import *`` never binds a name the importer already has, a builtin or a
    module the check knows (the check's own module is bound for the latter)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name != "__all__":
            raise AttributeError(name)
        remote = self.__dict__["_deepreflect_remote"]
        if name == "__all__":  # ``from m import *``: the importer's frame is the caller's
            return self._star(_names(remote.__all__), sys._getframe(1))
        value = getattr(remote, name)
        if f"{self.__name__}.{name}" in _artifact_modules():
            return value  # the artifact's own submodule, asked for by name
        if isinstance(value, Remote) and value._deepreflect_label == "module":
            # a module the artifact imported: the check's own copy, if it has one
            return _check_module(name, value) or value
        return value  # an explicit import gives the artifact's object (``def html``)

    def _star(self, names: list[str], importer: Any) -> list[str]:
        bound = importer.f_globals
        builtin = [n for n in names if n not in bound and hasattr(builtins, n)]
        _refuse_bare_builtins(self, builtin, importer.f_code.co_filename)
        given = []
        for name in names:
            if name in bound or hasattr(builtins, name):
                continue
            own = _check_module(name)
            if own is None and _installed(name):
                own = _check_module(name, getattr(self.__dict__["_deepreflect_remote"], name))
            if own is not None:
                bound[name] = own  # never the artifact's object or submodule
            else:
                given.append(name)
        return given


def _refuse_bare_builtins(module: Any, names: list[str], filename: str) -> None:
    """Fail the check where the artifact defines a builtin's name (``def sum``) that the
    check's code uses bare without importing it: that name is the builtin there, and the
    check would test the builtin instead of the artifact."""
    if not names:
        return
    try:
        with open(filename, encoding="utf-8") as handle:
            used = _bare_uses(handle.read(), names)
    except (OSError, SyntaxError, ValueError):
        return
    if used:
        side = module.__dict__["_deepreflect_remote"]._deepreflect_side
        _refuse_quietly(side, _builtin_line(module.__name__, used))


def _bare_uses(source: str, names: list[str]) -> list[str]:
    """Which of ``names`` the code reads as a bare name it never binds itself."""
    free = free_names(source)
    return [n for n in names if n in free]


def _builtin_line(module: str, names: list[str]) -> str:
    shown = ", ".join(names)
    return (
        f"the artifact defines {shown}, a builtin's name, and the check uses {shown} bare, "
        f"which is the builtin, not the artifact's: reach the artifact's with "
        f"`from {module} import {names[0]}` or `{module}.{names[0]}`"
    )


def _refuse_quietly(side: CheckSide, line: str) -> None:
    """Record a refusal (the check fails with ``line``) and let the check run on."""
    try:
        side.refuse(line)
    except TypeError:
        pass


def _names(listed: Any) -> list[str]:
    """The artifact's list of public names, as plain identifiers (its word, checked here)."""
    if type(listed) is not list:
        raise TypeError("the artifact's module listed its names as something else than a list")
    return [n for n in listed if type(n) is str and n.isidentifier() and not n.startswith("_")]


def _artifact_modules() -> set[str]:
    return set(json.loads(os.environ["DEEPREFLECT_ARTIFACT_MODULES"]))


def _check_module(name: str, value: Any = None) -> types.ModuleType | None:
    """The check's own import of ``name`` when it names a module the check knows: a
    standard-library module or one already imported here, whatever the artifact binds to
    that name, and a package installed here where the artifact's ``value`` is a module (its
    own import of it; an artifact's ``def click`` stays its function)."""
    known = sys.modules.get(name)
    if known is not None and not isinstance(known, _RemoteModule):
        return known
    module_value = isinstance(value, Remote) and value._deepreflect_label == "module"
    if name not in sys.stdlib_module_names and not (module_value and _installed(name)):
        return None
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def _installed(name: str) -> bool:
    """Whether a top-level module ``name`` imports here without the artifact (a third-party
    package of the check's environment: the artifact's files are never in this sandbox)."""
    if "." in name or not name.isidentifier():
        return False
    here = os.getcwd() + os.sep  # the check's own folder: its tests and the artifact's data
    for finder in sys.meta_path:
        if isinstance(finder, _RemoteFinder):
            continue
        try:
            spec = finder.find_spec(name, None)
        except Exception:
            continue
        origin = getattr(spec, "origin", None)  # None: a folder (a namespace package)
        if isinstance(origin, str) and not os.path.abspath(origin).startswith(here):
            return True
    return False


class _RemoteFinder:
    """Imports of the artifact's modules become proxies; everything else imports as usual.
    (A meta path finder and loader by protocol: ``importlib.abc`` costs 50 ms to import.)"""

    def __init__(self, bridge: CheckSide, names: set[str], packages: set[str]) -> None:
        self.bridge, self.names, self.packages = bridge, names, packages

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.names or _installed(fullname):
            return None  # an artifact file never replaces the check's numpy or yaml
        is_package = fullname in self.packages
        loader: Any = self
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=is_package)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _RemoteModule(spec.name)
        module.__dict__["_deepreflect_remote"] = self.bridge.request("root", "import", spec.name)
        if spec.name in self.packages:
            module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


_RUNNER_PID = os.getpid()


def _report(verdict: dict[str, Any], bridge: CheckSide) -> None:
    if os.getpid() != _RUNNER_PID:
        os._exit(1)  # a process the check code forked: only the runner itself reports
    bridge.finish()
    refused = list(bridge.refused)
    report = {**verdict, "tainted": list(bridge.tainted), "refused": refused, "finished": True}
    with os.fdopen(int(os.environ["DEEPREFLECT_REPORT_FD"]), "w", encoding="utf-8") as out:
        json.dump(report, out)


def _bridge_with_modules(own_files: list[str]) -> CheckSide:
    """The link, the artifact's modules importable as proxies, and class facts a handle
    would invent refused to the check's own files (``class_facts``)."""
    bridge = CheckSide(connect())
    names = set(json.loads(os.environ["DEEPREFLECT_ARTIFACT_MODULES"]))
    packages = set(json.loads(os.environ["DEEPREFLECT_ARTIFACT_PACKAGES"]))
    sys.meta_path.insert(0, _RemoteFinder(bridge, names, packages))
    own = {os.path.abspath(path) for path in own_files}
    guard_class_facts(bridge, lambda filename: os.path.abspath(filename) in own, _RemoteModule)
    return bridge


def check_python(artifact: str, code_file: str, own_builtins: bool = False) -> None:
    """Run the artifact (in its own process), then the check code against its namespace.
    ``own_builtins``: the code is the product's stated-examples program, whose bare builtins
    are meant as the builtins (the host says so, never the code)."""
    bridge = _bridge_with_modules([code_file])
    stage = "artifact"
    try:
        # a real module, so what needs its module (a dataclass, pickle) finds it
        module = sys.modules["__check__"] = types.ModuleType("__check__")
        module.__file__ = code_file  # its classes are the check's own (``class_facts``)
        namespace: dict[str, Any] = module.__dict__
        namespace["__builtins__"] = __builtins__
        artifact_names = bridge.request("root", "run")
        namespace.update(_own_names(artifact_names))
        stage = "check"
        with open(code_file, encoding="utf-8") as handle:
            source = handle.read()
        builtin = [n for n in _names(list(artifact_names)) if hasattr(builtins, n)]
        if builtin and not own_builtins and (used := _safe_bare_uses(source, builtin)):
            _refuse_quietly(bridge, _builtin_line(_module_name(artifact), used))
        exec(compile(source, os.path.basename(code_file), "exec"), namespace)
    except BaseException as exc:
        failure = _failure(exc, os.path.basename(code_file))
        _report({"ok": False, "stage": stage, **failure}, bridge)
        return
    _report({"ok": True}, bridge)


def _safe_bare_uses(source: str, names: list[str]) -> list[str]:
    try:
        return _bare_uses(source, names)
    except (SyntaxError, ValueError, RecursionError):
        return []  # the run reports the check code's own syntax error


def _module_name(artifact: str) -> str:
    """How the check's code imports the artifact (``geometry``, ``textkit.words``)."""
    stem = os.path.splitext(os.path.basename(artifact))[0]
    return _package_module(artifact) or (stem if stem.isidentifier() else "artifact")


def _own_names(artifact: Any) -> dict[str, Any]:
    """The artifact's public names for the check code, as ``from artifact import *`` gives
    them: no private name, no builtin (``abs``, ``AssertionError``), and a module name
    (``math``, ``json``) is the check's own import, whatever the artifact bound to it."""
    if type(artifact) is not dict:
        raise TypeError("the artifact's names arrived as something else than a dict")
    names: dict[str, Any] = {}
    for name in _names(list(artifact)):
        if hasattr(builtins, name):
            continue
        own = _check_module(name, artifact[name])
        names[name] = own if own is not None else artifact[name]
    return names


def _frames(exc: BaseException) -> Any:
    import traceback  # only on a failure: start-up time is part of every check's cost

    return traceback.extract_tb(exc.__traceback__)


def _failure(exc: BaseException, code_name: str) -> dict[str, Any]:
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    check_frames = [
        ["check", f.lineno, (f.line or "").strip()]
        for f in _frames(exc)
        if os.path.basename(f.filename) == code_name
    ]
    if isinstance(exc, SyntaxError) and os.path.basename(exc.filename or "") == code_name:
        check_frames.append(["check", exc.lineno, (exc.text or "").strip()])
    remote = [["artifact", f[1], f[2]] for f in getattr(exc, "deepreflect_frames", [])]
    return {
        "type": type(exc).__name__,
        "message": str(message)[:600],  # report.EVIDENCE_CHARS: a check quotes all it found
        "frames": (check_frames + remote)[-6:],
    }


class _Verdict:
    """A pytest plugin recording every test's outcome, phase by phase."""

    def __init__(self) -> None:
        self.collected = 0
        self.collect_errors: list[str] = []
        self.outcomes: dict[str, str] = {}
        self.session_finished = False

    def pytest_sessionfinish(self) -> None:
        self.session_finished = True

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.nodeid or "collection"))

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        self.collected = len(items)

    def pytest_runtest_logreport(self, report: Any) -> None:
        current = self.outcomes.get(report.nodeid, "passed")
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        elif report.failed:
            outcome = "failed" if report.when == "call" else "error"
        elif report.skipped:
            outcome = "skipped"
        else:
            outcome = "passed"
        if current == "passed" or report.when == "call":
            self.outcomes[report.nodeid] = outcome if current == "passed" else current


def check_pytest(ini: str, tests: list[str]) -> None:
    """Run the listed test files with our configuration only; report each test's outcome."""
    import pytest

    bridge = _bridge_with_modules(tests)
    verdict = _Verdict()
    args = [
        "-c",
        ini,
        "--rootdir=.",
        "--confcutdir=.",
        "-q",
        "--tb=short",
        "-p",
        "no:cacheprovider",
    ]
    status = pytest.main([*args, *tests], plugins=[verdict])
    _report(
        {
            "collected": verdict.collected,
            "collect_errors": verdict.collect_errors,
            "outcomes": verdict.outcomes,
            "exitstatus": int(status),
            "session_finished": verdict.session_finished,
        },
        bridge,
    )


def main(argv: list[str]) -> None:
    role, rest = argv[0], argv[1:]
    if role == "serve":
        serve(rest[0])
    elif role == "python":
        check_python(rest[0], rest[1], own_builtins=rest[2:] == ["--own-builtins"])
    elif role == "pytest":
        check_pytest(rest[0], rest[1:])
    else:
        raise SystemExit(f"unknown role {role!r}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no atexit handler or lingering thread may speak after the verdict


if __name__ == "__main__":
    main(sys.argv[1:])
