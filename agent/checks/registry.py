"""The one table of check kinds: what runs a kind, what validates its spec, what the planner sees.

Every kind, the built-in ones too, joins through :func:`register_check`. ``run_check``
dispatches through the table, ``validate_check_spec`` accepts exactly its kinds and
:func:`describe_kinds` renders the planner prompt's list from it, so one registration makes a
kind runnable, validated and offered to the planner.
``agent.checks`` seals its own kinds once they are registered: a later registration cannot
replace a built-in kind (a plan whose ``pytest`` check always passed would prove nothing).

A check never raises: a malformed spec, a missing artifact or a crashing check all become a
failed ``CheckReport`` whose evidence says why. Only a rubric judge's model errors propagate,
because then the model failed, not the artifact.
"""

from __future__ import annotations

import contextvars
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent.checks.report import CheckReport, make_report, tidy_report
from agent.errors import ErrorClass, MissingRunner, classify

if TYPE_CHECKING:
    from agent.checks.critique import ChatModelLike

__all__ = [
    "CheckFn",
    "CheckKind",
    "CheckScope",
    "ScopeValidator",
    "Validator",
    "builtin_kinds",
    "check_kinds",
    "current_databases",
    "current_judge",
    "current_tool_outputs",
    "describe_kinds",
    "missing_runner",
    "needs_strings",
    "register_check",
    "run_check",
    "run_lent_check",
    "seal_builtin_kinds",
    "validate_check_spec",
]

CheckFn = Callable[[dict[str, Any], Mapping[str, str], str], CheckReport]
"""A check kind: ``(spec, files, path) -> CheckReport``; the artifact is ``files[path]``."""
Validator = Callable[[dict[str, Any]], list[str]]
"""Everything wrong with a spec of one kind (empty when usable)."""


@dataclass(frozen=True)
class CheckScope:
    """What a check of a plan step will be able to reach when it runs, for validating the
    plan before it does: what the user declared and the files the step will hold."""

    databases: frozenset[str] = frozenset()
    """Names of the databases the user declared (``agent.checks.databases``)."""
    files: frozenset[str] = frozenset()
    """VFS paths the step's check will see besides its artifact: its dependencies' outputs."""
    thread_files: frozenset[str] = frozenset()
    """VFS paths already in the thread when the plan is made: the user's files and earlier
    rounds' artifacts."""
    artifact: str = ""
    """The step's own ``expected_output``."""
    writers: tuple[tuple[str, str], ...] = ()
    """``(expected_output, step_id)`` of every step of the plan, for advice on a refusal."""


ScopeValidator = Callable[[dict[str, Any], CheckScope], list[str]]
"""Everything wrong with a (well-formed) spec of one kind in a plan step's scope."""

# errors of the rubric judge's model that run_check re-raises instead of failing the artifact
_MODEL_ERRORS = (ErrorClass.TRANSIENT, ErrorClass.PERMISSION_DENIED, ErrorClass.POLICY_REJECTED)


@dataclass(frozen=True)
class CheckKind:
    """One registered kind."""

    fn: CheckFn
    """Runs the check."""
    validate: Validator | None
    """Lists what is wrong with a spec; None accepts any spec of the kind."""
    describe: str
    """The one line the planner is shown, e.g. ``{"kind": "regex", "pattern": "..."}``."""
    validate_in_scope: ScopeValidator | None = None
    """Lists what is wrong with a spec in a plan step's scope; None accepts any."""
    builtin: bool = False
    """Sealed by ``agent.checks``: cannot be replaced."""
    offered: bool = True
    """Listed to the planner (and in errors naming the kinds); ``all``, which the evidence
    floor builds, is not: a small planner is shown the kinds it needs."""
    requires: tuple[tuple[str, str], ...] = ()
    """``(module, package)`` pairs the kind's runner imports: a missing one is a
    configuration error (:func:`missing_runner`), never a defect of the artifact."""


_CHECKS: dict[str, CheckKind] = {}
"""Kind name -> kind, in registration order (the order the planner sees them in)."""


@dataclass(frozen=True)
class _Lent:
    """What ``run_check`` lends the check it runs besides ``(spec, files, path)``."""

    judge: ChatModelLike | None = None
    task: str = ""
    tool_outputs: tuple[str, ...] = ()
    databases: tuple[tuple[str, str], ...] = ()


# The rubric kind needs the judge and the task, the citations kind what the step's tools
# returned, the sql kind the databases the user declared; the table's signature has no
# room for them, so run_check lends them for the duration of the call (thread- and
# task-safe).
_NOTHING_LENT = _Lent()  # frozen: one shared default is safe
_LENT: contextvars.ContextVar[_Lent] = contextvars.ContextVar(
    "deepreflect_check_lent", default=_NOTHING_LENT
)


def register_check(
    kind: str,
    fn: CheckFn,
    *,
    validate: Validator | None = None,
    describe: str | None = None,
    validate_in_scope: ScopeValidator | None = None,
    offered: bool = True,
    requires: Sequence[tuple[str, str]] = (),
) -> None:
    """Add a check kind; registering a custom kind again replaces it, a built-in one raises.

    ``validate`` lists what is wrong with a spec (a plan with such a spec is refused with
    them); ``describe`` is the one line the planner is shown (default ``{"kind": "<kind>"}``);
    ``validate_in_scope`` lists what is wrong with a valid spec given what its plan step
    will reach (:class:`CheckScope`); ``offered=False`` keeps the kind out of the planner's
    list (it still runs and validates); ``requires`` names the ``(module, package)`` pairs
    its runner imports, so that a missing one stops a step at once (:func:`missing_runner`).
    """
    if not isinstance(kind, str) or not kind.strip() or not callable(fn):
        msg = "register_check needs a non-empty kind name and a callable"
        raise ValueError(msg)
    existing = _CHECKS.get(kind)
    if existing is not None and existing.builtin:
        msg = f"check kind {kind!r} is built in and cannot be re-registered"
        raise ValueError(msg)
    for hook, given in (("validate", validate), ("validate_in_scope", validate_in_scope)):
        if given is not None and not callable(given):
            msg = f"{hook} for check kind {kind!r} must be callable"
            raise ValueError(msg)
    line = json.dumps({"kind": kind}) if describe is None else describe
    if not isinstance(line, str) or not line.strip() or "\n" in line:
        msg = f"describe for check kind {kind!r} must be one non-blank line of text"
        raise ValueError(msg)
    needed = tuple((str(module), str(package)) for module, package in requires)
    _CHECKS[kind] = CheckKind(
        fn, validate, line.strip(), validate_in_scope, offered=offered, requires=needed
    )


def seal_builtin_kinds() -> None:
    """Make every kind registered so far built in; ``agent.checks`` calls this once, right
    after importing its own kinds and before any caller can reach :func:`register_check`."""
    for name, entry in list(_CHECKS.items()):
        _CHECKS[name] = replace(entry, builtin=True)


def builtin_kinds() -> frozenset[str]:
    """The kinds no registration can replace."""
    return frozenset(name for name, entry in _CHECKS.items() if entry.builtin)


def describe_kinds() -> str:
    """The planner prompt's list of check kinds: one ``  - <describe>`` line per registered
    kind, in registration order (the built-in ones first)."""
    return "\n".join(f"  - {entry.describe}" for entry in _CHECKS.values() if entry.offered)


def current_judge() -> tuple[ChatModelLike | None, str]:
    """The judge model and task that :func:`run_check` lent to the check now running."""
    lent = _LENT.get()
    return lent.judge, lent.task


def current_tool_outputs() -> tuple[str, ...]:
    """The text of every tool result the step's tools returned, as :func:`run_check` lent it
    to the check now running (empty outside a step, or when the caller passed none)."""
    return _LENT.get().tool_outputs


def current_databases() -> dict[str, str]:
    """The databases the user declared, ``{name: absolute path}``, as :func:`run_check` lent
    them to the check now running (empty when the caller declared none)."""
    return dict(_LENT.get().databases)


def validate_check_spec(spec: Any, scope: CheckScope | None = None) -> list[str]:
    """Everything wrong with a ``done_when`` spec (empty when usable); the planner calls it
    too, with the ``scope`` of the plan step, so that a check naming what its step will not
    reach is refused before it runs."""
    if spec is None:
        return []
    if isinstance(spec, str):
        return [] if spec.strip() else ["a rubric given as a string must not be blank"]
    if not isinstance(spec, Mapping):
        return [f"must be an object, a rubric string or null, not {type(spec).__name__}"]
    kind = spec.get("kind")
    known = ", ".join(sorted(name for name, entry in _CHECKS.items() if entry.offered))
    if kind is None:
        return [f"needs a 'kind', one of: {known}"]
    if not isinstance(kind, str) or kind not in _CHECKS:
        return [f"unknown check kind {kind!r}; known kinds: {known}"]
    entry = _CHECKS[kind]
    errors = entry.validate(dict(spec)) if entry.validate else []
    if errors or scope is None or entry.validate_in_scope is None:
        return errors
    return entry.validate_in_scope(dict(spec), scope)


def check_kinds(spec: Any) -> Iterator[str]:
    """The kinds a ``done_when`` spec runs, the parts of an ``all`` included."""
    if isinstance(spec, str):
        yield "rubric"
    elif spec is None:
        yield "non_empty"
    elif isinstance(spec, Mapping) and isinstance(spec.get("kind"), str):
        if spec["kind"] == "all" and isinstance(spec.get("checks"), list):
            for part in spec["checks"]:
                yield from check_kinds(part)
        else:
            yield spec["kind"]


def missing_runner(spec: Any) -> MissingRunner | None:
    """What a ``done_when`` spec needs installed that is not (the sandbox runs this very
    interpreter, so what it cannot import, no check can), or None when it can run."""
    for kind in check_kinds(spec):
        entry = _CHECKS.get(kind)
        for module, package in entry.requires if entry else ():
            if importlib.util.find_spec(module) is None:
                fix = f"pip install {package}"
                msg = f"the {kind} check needs {package}, which is not installed: {fix}"
                return MissingRunner(msg, fix)
    return None


def needs_strings(spec: dict[str, Any], key: str) -> list[str]:
    """A validator's part: ``spec[key]`` must be a non-empty list of strings."""
    value = spec.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return [f"kind {spec['kind']!r} needs {key!r}: a non-empty list of strings"]
    return []


def run_check(
    spec: dict[str, Any] | str | None,
    files: Mapping[str, Any],
    path: str,
    *,
    judge: ChatModelLike | None = None,
    task: str = "",
    tool_outputs: Sequence[str] = (),
    databases: Mapping[str, str | os.PathLike[str]] | None = None,
) -> CheckReport:
    """Check the artifact ``files[path]`` against ``spec``; never raises (but for the judge).

    ``None`` means ``{"kind": "non_empty"}``; a string is a rubric with that one criterion.
    ``files`` maps paths to contents (a ``FileEntry``'s ``content`` is accepted too).
    ``judge`` and ``task`` serve the rubric kind; ``tool_outputs``, the text of every result
    the step's tools returned while it drafted, serves the citations kind; ``databases``,
    the SQLite files the user declared by name, serves the sql kind (a plan's ``db`` names
    one of them or a file of ``files``, never a host path). Check functions read them
    through :func:`current_judge`, :func:`current_tool_outputs` and
    :func:`current_databases`.
    """
    declared = tuple((str(n), os.fspath(p)) for n, p in (databases or {}).items())
    token = _LENT.set(_Lent(judge, task, _texts(tool_outputs), declared))
    try:
        return run_lent_check(spec, files, path)
    finally:
        _LENT.reset(token)


def run_lent_check(
    spec: dict[str, Any] | str | None, files: Mapping[str, Any], path: str
) -> CheckReport:
    """:func:`run_check` with what the check now running was lent: how a check made of
    other checks (``agent.checks.composite``) runs its parts."""
    errors = validate_check_spec(spec)
    normal = _normalise(spec) if not errors else {}
    kind = str(normal.get("kind") or _kind_of(spec))
    if errors:
        return make_report(kind, False, 0.0, "invalid check spec: " + "; ".join(errors))
    if (missing := missing_runner(normal)) is not None:
        return make_report(kind, False, 0.0, str(missing))
    contents = _contents(files)
    if kind != "exists" and path not in contents:
        return make_report(kind, False, 0.0, f"artifact {path} was not produced")
    try:
        report = _CHECKS[kind].fn(normal, contents, path)
    except Exception as exc:  # a check must fail with evidence, never crash the graph
        if classify(exc) in _MODEL_ERRORS and "rubric" in check_kinds(normal):
            raise  # the judge model failed (alone or in an ``all``), not the artifact: the
            # worker handles its class
        report = make_report(kind, False, 0.0, f"check crashed: {type(exc).__name__}: {exc}")
    return tidy_report(report, kind)


def _texts(outputs: Sequence[str]) -> tuple[str, ...]:
    """``tool_outputs`` as a tuple of strings (one string passed alone is one output)."""
    if isinstance(outputs, str):
        return (outputs,)
    return tuple(o if isinstance(o, str) else str(o) for o in outputs or () if o is not None)


def _normalise(spec: Any) -> dict[str, Any]:
    if spec is None:
        return {"kind": "non_empty"}
    if isinstance(spec, str):
        return {"kind": "rubric", "criteria": [spec]}
    return dict(spec)


def _kind_of(spec: Any) -> str:
    if isinstance(spec, Mapping) and isinstance(spec.get("kind"), str):
        return spec["kind"]
    return "rubric" if isinstance(spec, str) else "invalid"


def _contents(files: Mapping[str, Any]) -> dict[str, str]:
    """Plain contents; deleted entries (None) count as absent."""
    out: dict[str, str] = {}
    for name, value in files.items():
        if isinstance(value, Mapping):
            value = value.get("content")
        if value is not None:
            out[name] = str(value)
    return out
