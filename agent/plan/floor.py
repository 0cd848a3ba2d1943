"""The evidence floor: what the goal's acceptance criteria (:mod:`agent.plan.criteria`)
and the artifact's kind let a program prove, added beside the planner's own check before
the plan is validated (``agent.plan.validation.parse_plan``).

A check of kinds that do not run or judge the artifact (presence, text patterns, a rubric,
``syntax``) becomes an ``all`` of ``non_empty`` (``exists`` for a package's
``__init__.py``, which may be empty), the floor's parts, then every part the planner wrote,
as written. The floor's parts are typed kinds where one says what is asserted
(:mod:`agent.checks.stated`: ``examples``, ``json_shape``, ``sections``) and each carries
``"origin": "floor"``, so a replan is shown the planner's check alone
(:func:`without_floor`). Only a small model's profile (``repairs``) leaves out a planner
part that cannot pass on its file; otherwise such a part fails on evidence and is settled by
a replan or a human.

- a ``.py`` runs, defines the functions its criteria name, meets their examples, and, called
  with values of the types its written signature states, raises no error of broken code and
  returns the stated type; a module whose sibling modules are not written before its check
  only parses (``syntax``, with ``uses`` and ``defines``), and the step after every module of
  a package imports each of them as a user would and runs their examples; a refactor's
  callers call its new function (which returns what their shared code computed, when the
  criteria say that code moves); a user's module keeps its public names, and the functions
  the criteria keep end as they did in the given file (:mod:`agent.plan.kept`), as do the
  other paths through a function the criteria fix;
- a ``.json`` parses and meets a schema of the keys, orders, item keys, value lists and
  spellings its criteria state (``x-`` keywords of :mod:`agent.checks.text`);
- a ``.sql`` runs on the database the goal names (or the one declared) and reads the tables
  its criteria name;
- prose has its stated sections and citations checked, no URL it cites invented, and a
  ``rubric`` the judge reads it against (the step's instructions and the goal) unless the
  planner gave one.

A stronger planner check of a module (``python``, ``pytest``) gets what the criteria state
of it asserted first all the same (:func:`stated_floor`).
"""

from __future__ import annotations

import ast
import keyword
import posixpath
import re
from collections.abc import Collection, Mapping
from typing import Any

from agent.checks import CheckScope, check_kinds, validate_check_spec
from agent.checks.composite import PRESENCE
from agent.checks.sql import READS
from agent.checks.stated import (
    FLOOR,
    ExamplesSpec,
    JsonShapeSpec,
    SectionsSpec,
    SharedCall,
    SmokeCall,
    SortOrder,
    StatedExample,
)
from agent.plan.criteria import (
    MAX_SCANNED_CHARS,
    FileCriteria,
    GoalCriteria,
    file_part,
    literal_criteria,
    merged,
    signatures,
)
from agent.plan.kept import caller_rests, comparable, probe_calls, public_names, shared_code
from agent.plan.needs import named_files
from agent.plan.steps import Step
from agent.prompts import render
from agent.vfs.filenames import is_test_file

__all__ = [
    "PROSE",
    "WEAK_KINDS",
    "defined_names",
    "examples_of",
    "floor_check",
    "is_prose",
    "json_schema_of",
    "prose_rubric",
    "raise_to_floor",
    "smoke_calls",
    "stated_floor",
    "without_floor",
]

WEAK_KINDS = frozenset({"exists", "non_empty", "contains", "regex", "rubric", "syntax"})
"""Kinds that do not run the artifact or judge its content: alone, they cannot prove it
works (``syntax`` parses it, which proves no behaviour)."""


def raise_to_floor(
    steps: list[Step],
    goal: str,
    *,
    databases: Collection[str] = (),
    kept: Mapping[str, str] | None = None,
    repairs: bool = False,
    criteria: GoalCriteria | None = None,
) -> list[Step]:
    """``steps`` with every weak check raised to its artifact's floor (module docstring).
    ``kept``: the source of each of the user's modules as the user gave it, which a step
    rewriting that module must keep (:mod:`agent.plan.kept`). ``criteria``: what the goal
    asks of each file beyond its literals (the planner's, verified; the human's), merged with
    the literals of ``goal`` (:mod:`agent.plan.criteria`). The planner's own parts stay
    beside the floor, as written; only with ``repairs`` (a small model's profile) are the
    parts that cannot pass on the artifact left out."""
    kept = kept or {}
    stated = merged(literal_criteria(goal, named_files(goal)), criteria or GoalCriteria())
    out = []
    for step in steps:
        if repairs:
            step = _without_impossible(step)
        spec = step.done_when
        weak = set(check_kinds(spec)) <= WEAK_KINDS
        floor: dict[str, Any] | None
        if _raised(spec):
            floor = None
        elif weak:
            floor = floor_check(step, steps, goal, stated, databases=databases, kept=kept)
        else:
            floor = stated_floor(step, steps, goal, stated, kept=kept)
        if (
            not _raised(spec)
            and is_prose(step.expected_output)
            and "rubric" not in check_kinds(spec)
        ):
            # no program can judge prose: the judge reads it against the step and the goal
            rubric = prose_rubric(step, goal)
            floor = rubric if floor is None else {"kind": "all", "checks": [*_parts(floor), rubric]}
        if floor is None:
            out.append(step)
            continue
        own = _parts(step.done_when)
        floors = _parts(floor)  # an ``all`` of the floor's is listed, never nested
        parts = [_added(p) for p in [_presence(step.expected_output), *floors]]
        parts += [p for p in own if _still_needed(p, step.expected_output, repairs=repairs)]
        out.append(step.model_copy(update={"done_when": {"kind": "all", "checks": parts}}))
    return out


PROSE = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm"})
"""Artifacts no program can judge: a judge reads them against a rubric."""
RUBRIC_QUOTE_CHARS = 600  # the most of the goal and the step's instructions a criterion quotes


def is_prose(path: str) -> bool:
    """Whether ``path`` is prose (module constant :data:`PROSE`)."""
    return posixpath.splitext(path)[1].lower() in PROSE


def prose_rubric(step: Step, goal: str) -> dict[str, Any]:
    """The rubric a judge reads prose against: the step's instructions, the goal and what
    they state of the file (``prompts/floor_rubric.txt``), each quoted and capped."""
    text = render(
        "floor_rubric",
        instructions=" ".join(step.instructions.split())[:RUBRIC_QUOTE_CHARS],
        goal=" ".join(goal.split())[:RUBRIC_QUOTE_CHARS],
    )
    return {"kind": "rubric", "criteria": [c.strip() for c in text.splitlines() if c.strip()]}


def _still_needed(part: Any, path: str, *, repairs: bool) -> bool:
    """Whether the planner's own ``part`` stays beside the floor: not presence (the floor
    has it), nor a weak check the planner wrote wrong (the floor proves more than it). On
    the 1.5B a replan's ``syntax`` check with ``uses`` that were not names refused the
    whole plan, and the run ended ``invalid_plan``. Nor a ``regex`` over a ``.json`` file,
    which checks how the JSON is formatted: on the 1.5B the planner's pattern of the whole
    file's text failed every draft of a right file until the depth cap (d12)."""
    if not isinstance(part, dict):
        return True
    if not repairs:  # the floor's presence part stands for the planner's
        return part.get("kind") not in PRESENCE
    if part.get("kind") == "regex" and posixpath.splitext(path)[1].lower() == ".json":
        return False  # a pattern over JSON text checks its formatting, which the floor parses
    return part.get("kind") not in PRESENCE and not _impossible(part, path)


def _impossible(part: Any, path: str) -> bool:
    """A weak check the planner wrote that is invalid, or that cannot pass on ``path``
    whatever it holds: on the 1.5B a replan gave ``top_genres.sql`` a ``syntax`` check with
    ``uses``, which failed every draft of a right query until the depth cap."""
    if not isinstance(part, dict) or part.get("kind") not in WEAK_KINDS:
        return False
    return bool(validate_check_spec(part, CheckScope(artifact=path)))


def _without_impossible(step: Step) -> Step:
    """``step`` without the weak parts of its ``all`` check that cannot pass (kept when
    nothing else is left: validation then says why)."""
    spec = step.done_when
    if not isinstance(spec, dict) or spec.get("kind") != "all" or _raised(spec):
        return step
    parts = list(spec.get("checks") or [])
    kept = [p for p in parts if not _impossible(p, step.expected_output)]
    if not kept or len(kept) == len(parts):
        return step
    return step.model_copy(update={"done_when": {**spec, "checks": kept}})


def _presence(path: str) -> dict[str, str]:
    """The presence part of a raised check: a package's ``__init__.py`` may be empty (the
    goal often says so), every other artifact must hold something."""
    empty_allowed = posixpath.basename(path) == "__init__.py"
    return {"kind": "exists" if empty_allowed else "non_empty"}


def without_floor(spec: Any) -> Any:
    """The check the planner chose, from one :func:`raise_to_floor` raised: what a replan
    is shown, since the floor is raised again on its answer."""
    if not _raised(spec):
        return spec
    parts = list(spec.get("checks") or [])
    if "floor" in spec:  # a plan stored before parts carried their origin: a count
        own = parts[1 + int(spec["floor"]) :]
    else:
        own = [p for p in parts if not (isinstance(p, dict) and p.get("origin") == FLOOR)]
    if not own:
        return {"kind": "non_empty"}
    return own[0] if len(own) == 1 else {"kind": "all", "checks": own}


def _raised(spec: Any) -> bool:
    """Whether ``spec`` is a check :func:`raise_to_floor` raised."""
    if not isinstance(spec, dict) or spec.get("kind") != "all":
        return False
    parts = spec.get("checks") or []
    return bool(spec.get("floor")) or any(
        isinstance(p, dict) and p.get("origin") == FLOOR for p in parts
    )


def _added(part: dict[str, Any]) -> dict[str, Any]:
    """``part`` marked as one the product added beside the planner's check."""
    return {**part, "origin": FLOOR}


def floor_check(
    step: Step,
    steps: list[Step],
    goal: str,
    criteria: GoalCriteria | None = None,
    *,
    databases: Collection[str] = (),
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The program check ``step``'s artifact allows, with what ``criteria`` state of it, or
    None when there is none to add."""
    criteria = criteria or literal_criteria(goal, named_files(goal))
    path = step.expected_output
    suffix = posixpath.splitext(path)[1].lower()
    stated = criteria.of(path)
    if _is_module(path):
        return _module_floor(step, steps, goal, criteria, (kept or {}).get(path, ""))
    if suffix == ".json":
        return _json_shape(stated).as_spec()
    if suffix in PROSE:
        parts = [*_sections(stated), *_citations(stated)]
        return (
            None if not parts else parts[0] if len(parts) == 1 else {"kind": "all", "checks": parts}
        )
    if suffix == ".sql":
        named = [d for d in databases if _names_word(goal, d)]
        chosen = named if len(named) == 1 else list(databases)
        if len(chosen) != 1:
            return None
        return {"kind": "sql", "db": chosen[0]} | _sql_stated(stated)
    return None


def _names_word(text: str, word: str) -> bool:
    """Whether ``text`` (its scanned part) names ``word`` as a whole word."""
    pattern = rf"(?<![\w.-]){re.escape(word)}(?![\w-])"
    return re.search(pattern, text[:MAX_SCANNED_CHARS]) is not None


def _json_shape(stated: FileCriteria) -> JsonShapeSpec:
    """What a ``.json`` artifact's criteria state: its top-level keys, orders, item keys,
    value lists and spellings."""
    return JsonShapeSpec(
        keys=list(dict.fromkeys(k.name for k in stated.keys)),
        sorted_by=[SortOrder(key=o.key, descending=o.descending) for o in stated.sorted_by],
        item_keys=list(dict.fromkeys(k.name for k in stated.item_keys)),
        values_of={v.key: v.of for v in stated.values_of},
        spelled=list(dict.fromkeys(c.name for c in stated.spelled)),
    )


def json_schema_of(stated: FileCriteria) -> dict[str, Any]:
    """The JSON schema a ``.json`` artifact's ``json_shape`` check compiles to."""
    return _json_shape(stated).json_schema()


def _sections(stated: FileCriteria) -> list[dict[str, Any]]:
    """A document's stated sections (a ``sections`` check), or none."""
    titles = list(dict.fromkeys(s.name.strip() for s in stated.sections if s.name.strip()))
    return [SectionsSpec(titles=titles).as_spec()] if titles else []


def _citations(stated: FileCriteria) -> list[dict[str, Any]]:
    """A ``citations`` check: at least the sources the goal asks for, and, whether or not it
    asks, no URL that neither the step's tools returned nor the user gave (``min`` 0). On
    the 1.5B, reports of two wordings of a goal citing its search results cited URLs no
    search returned, and no criterion had read that the goal asks for citations."""
    least = max(1, stated.citations.least) if stated.citations is not None else 0
    return [{"kind": "citations", "min": least}]


def _sql_stated(stated: FileCriteria) -> dict[str, Any]:
    """What an ``sql`` check asserts of the criteria: the tables the query must read."""
    reads = list(dict.fromkeys(r.name for r in stated.reads))
    return {READS: reads} if reads else {}


def stated_floor(
    step: Step,
    steps: list[Step],
    goal: str,
    criteria: GoalCriteria | None = None,
    *,
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """What the criteria state of the module ``step`` writes (its functions, examples and
    signatures), asserted beside a check the planner made strong: a ``python`` check that
    tries ``median([1, 2, 3])`` passes the bug the goal describes with ``median([1, 2, 3,
    4]) == 2.5``. None when the criteria state nothing of this file."""
    criteria = criteria or literal_criteria(goal, named_files(goal))
    if step.expected_output.lower().endswith(".sql"):
        return _stated_sql(step, criteria.of(step.expected_output))
    if not _is_module(step.expected_output):
        return None
    given = (kept or {}).get(step.expected_output, "")
    floor = _module_floor(step, steps, goal, criteria, given)
    return floor if floor is not None and _states(floor) else None


def _states(spec: dict[str, Any]) -> bool:
    """Whether a module's floor is one ``examples`` check asserting anything of it."""
    if spec.get("kind") != "examples":
        return False
    shown = ExamplesSpec.model_validate(spec).shown()
    return any(v for k, v in shown.items() if k != "kind")


def _stated_sql(step: Step, stated: FileCriteria) -> dict[str, Any] | None:
    """The tables the query must read, asserted on the database the planner's own ``sql``
    check runs it against (None when it has none, or nothing is stated)."""
    extra = _sql_stated(stated)
    own = [p for p in _parts(step.done_when) if isinstance(p, dict) and p.get("kind") == "sql"]
    if not extra or not own or any(READS in p for p in own):
        return None
    return {"kind": "sql", "db": own[0].get("db")} | extra


def _module_floor(
    step: Step, steps: list[Step], goal: str, criteria: GoalCriteria, given: str = ""
) -> dict[str, Any] | None:
    path = step.expected_output
    if is_test_file(path):
        return None
    asked = named_files(goal)
    stated = criteria.of(path)
    # the siblings it may import must be written first; a package's __init__.py need not
    # be (the folder imports without it), so a module written after its siblings runs, and
    # their mutual imports fail where the step writing the last of them can fix them
    others = {
        s.expected_output
        for s in steps
        if s.step_id != step.step_id
        and _is_module(s.expected_output)
        and not is_test_file(s.expected_output)
        and posixpath.basename(s.expected_output) != "__init__.py"
    }
    uses = list(dict.fromkeys(u.name for u in stated.uses))
    defines = [n for n in defined_names(stated) if n not in uses]
    if not others <= {s.expected_output for s in steps if s.step_id in step.depends_on}:
        spec = {"kind": "syntax"} | ({"uses": uses} if uses else {})  # a sibling it may
        return spec | ({"defines": defines} if defines else {})  # import is not written yet
    kept = public_names(given)
    keep = kept if stated.behaviour_kept else [k.name for k in stated.keep if k.name in kept]
    probes = probe_calls(given, keep) if comparable(given) else []
    calls = [
        (c.caller, c.callee)
        for c in stated.calls
        if c.caller in kept and c.callee not in kept and c.caller != c.callee
    ]
    calls = list(dict.fromkeys(calls))
    sharing = {c.callee for c in stated.calls if c.shares}
    source = file_part(goal, path, asked) or goal
    given, shared, rests = (
        _shared_parts(source, given, calls, sharing) if comparable(given) else (given, [], {})
    )
    examples = examples_of(stated)
    modules = [f for f in asked if _is_module(f) and not is_test_file(f)]
    if modules != [path]:
        names = list(dict.fromkeys([*defines, *kept]))
        own = [(c, w) for c, w in examples if _called(c) in defines]
        spec = _examples(
            names, own, given=given, keep=probes, calls=calls, shared=shared, own=rests
        )
        parts = [spec]
        # run, it must still use what the criteria name: on the 1.5B a count.py that split
        # words itself, never calling split_words, ran and passed (a false success)
        if uses:
            parts.append({"kind": "syntax", "uses": uses})
        if imports := _package_imports(steps):
            code = "".join(f"import {m}\n" for m in imports)
            parts.append({"kind": "python", "code": code})
            if siblings := _sibling_examples(steps, step, criteria):
                parts.append(_examples([], siblings, prelude=code))
        return parts[0] if len(parts) == 1 else {"kind": "all", "checks": parts}
    names = list(dict.fromkeys([*defines, *(_called(c) for c, _ in examples), *kept]))
    smoke = smoke_calls(signatures(source))
    fixed = [n for n in dict.fromkeys(f.name for f in stated.fixes) if n in kept]
    fixed = [n for n in fixed if any(_called(c) == n for c, _ in examples)]
    paths = probe_calls(given, fixed) if fixed and comparable(given) else []
    return _examples(
        names,
        examples,
        smoke=smoke,
        given=given,
        keep=probes,
        calls=calls,
        shared=shared,
        paths=paths,
        own=rests,
    )


def defined_names(stated: FileCriteria) -> list[str]:
    """The functions the criteria say a module defines: named ones, then the ones its
    examples call."""
    named = [f.name for f in stated.functions if f.name.isidentifier()]
    called = [_called(c) for c, _ in examples_of(stated)]
    return list(dict.fromkeys([*named, *called]))


def examples_of(stated: FileCriteria) -> list[tuple[str, str]]:
    """The stated examples as ``(call, expected)`` source: calls that parse as one call,
    expected values as the ``repr`` of a literal (kept as written when not one)."""
    out: list[tuple[str, str]] = []
    for e in stated.examples:
        try:
            node = ast.parse(e.call.strip(), mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if not isinstance(node, ast.Call):
            continue
        try:
            expected = repr(ast.literal_eval(e.expected.strip()))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            expected = e.expected.strip()
        if expected:
            out.append((e.call.strip(), expected))
    return list(dict.fromkeys(out))


def _shared_parts(
    goal: str, given: str, calls: list[tuple[str, str]], sharing: Collection[str]
) -> tuple[str, list[tuple[str, str]], dict[str, str]]:
    """``given`` with each new function a refactor moves its callers' shared code into
    (``sharing``, from the criteria), defined as that code
    (:func:`agent.plan.kept.shared_code`), the calls that compare the artifact's version
    with it: ``(call, "the code book_price and music_price share")``, and what each caller
    does after that code (:func:`agent.plan.kept.caller_rests`)."""
    written = signatures(goal)
    shared: list[tuple[str, str]] = []
    rests: dict[str, str] = {}
    for callee in dict.fromkeys(b for _, b in calls):
        callers = [a for a, b in calls if b == callee]
        new = written.get(callee)
        moves = callee in sharing
        source = shared_code(moves, given, new, callers) if new else ""
        if new and source:
            rests |= caller_rests(moves, given, new, callers)
            given = f"{given.rstrip()}\n\n\n{source}\n"
            what = f"the code {' and '.join(callers)} share"
            shared += [(c, what) for c in probe_calls(source, [callee])]
    return given, shared, rests


def _sibling_examples(
    steps: list[Step], step: Step, criteria: GoalCriteria
) -> list[tuple[str, str]]:
    """The goal's examples of the functions the package's other modules define, called
    through their module (``textkit.words.split_words('Hi')``): those modules' own checks
    ran before their siblings existed, so only parsed them, and the module written last
    imports them all. Without this, ``split_words('Hi, you') == ['hi', 'you']``, stated in
    the goal or in a human's answer, was never run."""
    out = []
    for other in steps:
        path = other.expected_output
        if other.step_id == step.step_id or not _is_module(path) or is_test_file(path):
            continue
        module = _module_name(path)
        if module is None:
            continue
        out += [(f"{module}.{c}", w) for c, w in examples_of(criteria.of(path))]
    return out


def _examples(
    names: list[str],
    examples: list[tuple[str, str]],
    *,
    smoke: list[tuple[str, str]] | None = None,
    given: str = "",
    keep: list[str] | None = None,
    calls: list[tuple[str, str]] | None = None,
    shared: list[tuple[str, str]] | None = None,
    paths: list[str] | None = None,
    own: Mapping[str, str] | None = None,
    prelude: str = "",
) -> dict[str, Any]:
    """An ``examples`` check (:class:`agent.checks.stated.ExamplesSpec`) of a module."""
    return ExamplesSpec(
        defines=names,
        examples=[StatedExample(call=c, expected=w) for c, w in examples],
        smoke=[SmokeCall(call=c, returns=r) for c, r in smoke or []],
        given=given if keep or shared or (paths and examples) else "",
        keep=keep or [] if given else [],
        calls=calls or [],
        shared=[SharedCall(call=c, source=w) for c, w in shared or []] if given else [],
        paths=paths or [] if given and examples else [],
        own=dict(own or {}) if given and keep else {},
        prelude=prelude,
    ).as_spec()


def _module_name(path: str) -> str | None:
    """The dotted name ``path`` is imported by (``textkit/words.py``: ``textkit.words``)."""
    parts = posixpath.splitext(path)[0].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return None
    return ".".join(parts)


def _package_imports(steps: list[Step]) -> list[str]:
    """The plan's modules as the names they are imported by, when two or more of them form
    a package: the step that runs after all of them imports each, as a user would. On the
    1.5B, ``textkit/words.py`` and ``textkit/count.py`` imported each other at the top,
    each passed its ``syntax`` check, and the package failed to import (a false success)."""
    names = []
    for s in steps:
        if not _is_module(s.expected_output) or is_test_file(s.expected_output):
            continue
        name = _module_name(s.expected_output)
        if name is not None and "." in name:
            names.append(name)
    return list(dict.fromkeys(names)) if len(names) >= 2 else []


def _is_module(path: str) -> bool:
    return posixpath.splitext(path)[1].lower() == ".py"


def _parts(spec: dict[str, Any] | str) -> list[Any]:
    """A check as a list of parts: an ``all``'s checks, else the check itself."""
    if isinstance(spec, dict) and spec.get("kind") == "all":
        return list(spec.get("checks") or [])
    return [spec]


def smoke_calls(written: Mapping[str, ast.FunctionDef]) -> list[tuple[str, str]]:
    """``(call, returns)`` for each signature written whose required parameters all have a
    type a value can be made for (``to_roman(n: int) -> str`` → ``("to_roman(1)",
    "str")``); ``returns`` is the stated return type when it is one a check can tell
    (``str``, ``int``, ``list`` …, ``None``), else empty. A function without required
    parameters is not called: it may do anything."""
    calls = []
    for node in written.values():
        call = _smoke_call(node)
        if call is not None:
            calls.append((call, _result_type(node.returns)))
    return calls


_SAMPLES = {
    "int": "1",
    "float": "1.5",
    "str": "'abc'",
    "bool": "True",
    "bytes": "b'abc'",
    "list": "[1, 2, 3]",
    "tuple": "(1, 2)",
    "set": "{1, 2}",
    "dict": "{'a': 1}",
}
_ITEMS = {"int": "[1, 2, 3]", "float": "[1.5, 2.5]", "str": "['a', 'b']", "bool": "[True, False]"}
_SEQUENCES = frozenset({"list", "List", "Sequence", "Iterable", "Collection"})
_CHECKED_RESULTS = frozenset(_SAMPLES) | {"None"}


def _smoke_call(fn: ast.FunctionDef) -> str | None:
    """A call of ``fn`` with a value for each required parameter, or None when one has no
    type a value can be made for (or there is none: nothing to call it with)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    keywords = [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    if not required and not keywords or (required and required[0].arg in {"self", "cls"}):
        return None
    values = [_sample(a.annotation) for a in [*required, *keywords]]
    if any(v is None for v in values):
        return None
    shown = values[: len(required)] + [
        f"{a.arg}={v}" for a, v in zip(keywords, values[len(required) :], strict=True)
    ]
    return f"{fn.name}({', '.join(str(v) for v in shown)})"


def _sample(annotation: ast.expr | None) -> str | None:
    """A value (as source) of the type ``annotation`` names, or None for a type not known."""
    if isinstance(annotation, ast.Name):
        return _SAMPLES.get(annotation.id)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        right_none = isinstance(annotation.right, ast.Constant) and annotation.right.value is None
        return _sample(annotation.left) if right_none else None
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        outer, inner = annotation.value.id, annotation.slice
        if outer == "Optional":
            return _sample(inner)
        if outer in _SEQUENCES or outer == "list":
            item = inner.id if isinstance(inner, ast.Name) else ""
            return _ITEMS.get(item)
        if outer in {"dict", "Dict", "Mapping"}:
            pair = ast.unparse(inner).strip("()").replace(" ", "")
            return "{'a': 1}" if pair == "str,int" else None
    return None


def _result_type(annotation: ast.expr | None) -> str:
    """The type a check can tell a result by (``list[int]`` → ``list``), or ""."""
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return "None"
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        outer = annotation.value.id.lower()
        return outer if outer in {"list", "dict", "tuple", "set"} else ""
    if isinstance(annotation, ast.Name) and annotation.id in _CHECKED_RESULTS:
        return annotation.id
    return ""


def _called(call: str) -> str:
    return call.split("(", 1)[0].strip().rsplit(".", 1)[-1]
