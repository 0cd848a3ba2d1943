"""The evidence floor: the least a step's check must prove when a program can judge its
artifact, applied to the plan before it is validated (``agent.plan.validation.parse_plan``).

A small planner proves "done" with ``exists`` or ``non_empty``, and a wrong artifact then
ends the run ``success``: a ``stats.py`` whose median is still wrong, a ``roman.py`` without
``to_roman``, an ``inventory.json`` without the keys the goal asked for. When a step's check
uses only kinds that do not run or parse the artifact (presence, text patterns, a rubric),
the check becomes an ``all`` of ``non_empty`` (``exists`` for a package's ``__init__.py``,
which may be empty), the floor its artifact's kind allows, then
the planner's own check (marked ``"floor": true``, so a replan is shown the planner's check
alone: :func:`without_floor`):

- a ``.py`` runs, defines the functions the goal writes as calls (``to_roman(n: int)``),
  meets the examples the goal states (``median([1, 2, 3, 4]) should be 2.5``), and, called
  with values of the types its signature states (``to_roman(1)``), raises no error of broken
  code (``TypeError``, ``NameError`` …) and returns the stated type; names, examples and
  calls only when the goal names this file as its one module, and the floor at all only
  when every other module the plan writes (but a package's ``__init__.py``, which the
  package imports without) is one the step depends on (a module imports its siblings when
  it runs); else the module must parse (``syntax``: on the 1.5B a
  ``textkit/words.py`` with a ``SyntaxError`` passed ``non_empty``). The step that runs
  after every module of a package imports each of them as a user would (two modules that
  imported each other at the top each parsed, and the package did not import). A refactor's
  new function must be called by the functions the goal says call it (``calls``: old bodies
  kept the behaviour and did not refactor), and when the goal moves the callers' shared
  code into it, it returns what that code computed (a ``discounted_total`` that rounded kept
  both callers' results and failed the function's own hidden test). Test files are left to
  the check that runs them;
- a ``.py`` of the user's that a step rewrites keeps defining its public functions and
  classes (on the 1.5B a fixed ``stats.py`` dropped the ``mean`` the goal said to keep),
  and the functions the goal says to keep as they are end as they did in the given file
  (:mod:`agent.plan.kept`); when the goal fixes a bug its example shows, a call of the fixed
  function that takes another path through it in the given file (a line every failing
  example skips, and one each runs) ends as it did there: on the 1.5B a ``median`` fixed
  for even lengths broke odd ones and the run ended ``success``;
- a ``.json`` parses, and holds the top-level keys the goal spells as ``"key":`` and keeps
  its lists in the orders the goal states ("sorted by sku": ``x-sortedBy``), and has the keys
  the goal spells inside its objects somewhere (``"sku":``, ``x-hasKeys``), and a list the
  goal says holds one key's values holds them (``"out_of_stock": the list of skus``,
  ``x-valuesOf``) when the goal names this file as its one JSON file;
- a ``.sql`` runs on the database the goal names (or the one declared);
- a document the goal names (``report.md``) whose goal asks it to cite sources cites at
  least as many as the goal says, each from the step's tool results (``citations``): on the
  1.5B an ``exists`` check ended a report with no citation ``success``.

A check with any other kind (``python``, ``pytest``, ``sql``, ``json_schema``, ``citations``,
a custom kind) is the planner's evidence; but what the goal states of the module it names
(its functions, examples and signatures) is asserted before it all the same
(:func:`stated_floor`): on the 1.5B a planner's ``python`` check of ``stats.py`` tried an
odd-length median and passed the even-length bug the goal spelled out.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import posixpath
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from agent.checks import CheckScope, check_kinds, validate_check_spec
from agent.checks.composite import PRESENCE
from agent.checks.examples import examples_check
from agent.checks.sql import READS, VALUES_FROM
from agent.checks.text import HAS_KEYS, SORTED_BY, SPELLED, VALUES_OF
from agent.plan.kept import (
    caller_rests,
    comparable,
    kept_functions,
    probe_calls,
    public_names,
    shared_code,
)
from agent.plan.needs import is_test_file, named_files
from agent.plan.steps import Step
from agent.prompts import render

__all__ = [
    "WEAK_KINDS",
    "floor_check",
    "goal_examples",
    "goal_functions",
    "goal_json_keys",
    "goal_nested_json_keys",
    "goal_signatures",
    "goal_smoke_calls",
    "goal_sort_orders",
    "goal_uses",
    "goal_value_lists",
    "goal_calls",
    "goal_codes",
    "goal_defines",
    "goal_part",
    "raise_to_floor",
    "stated_floor",
    "without_floor",
]

WEAK_KINDS = frozenset({"exists", "non_empty", "contains", "regex", "rubric", "syntax"})
"""Kinds that do not run the artifact or judge its content: alone, they cannot prove it
works (``syntax`` parses it, which proves no behaviour)."""

# a call written in the goal: a name (not an attribute) right before "("
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
# what follows a call whose result the goal states; a modal verb states what it must be
_MODAL = r"should (?:be|return|give|equal)|must (?:be|return|give|equal)|ought to (?:be|return)"
_VERB = re.compile(
    rf"\s*(?P<modal>{_MODAL})?(?(modal)|(?:==|=>|->|→|returns?|gives?|equals|is))\s+",
)
_VERB_TIGHT = re.compile(r"\s*(?:==|=>|->|→)\s*")
# words that make a plain "f(x) is 3" describe today's (wrong) behaviour, not the wanted one
_NOT_WANTED = re.compile(
    r"\b(?:but|today|currently|now|instead|wrong|bug|buggy|incorrect|broken)\b", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n")
_MUST_USE = re.compile(r"\b(?:must|should|has to|needs to)\s+(?:use|call|import)\s+([A-Za-z_]\w*)")
_CALL_IT = re.compile(r"\b(?:call|calls|use|uses)\s+(it|them|[A-Za-z_]\w*)\b")
_EVERY = re.compile(r"\b(?:both|all|each|every)\b", re.IGNORECASE)
_SORTED = re.compile(r"\b(?:sorted|ordered)\s+by\s+(?:the\s+)?[\"'`]?([A-Za-z_]\w*)[\"'`]?")
_DESCENDING = re.compile(
    r"[\s,;(]*(?:in\s+)?(?:descending|decreasing|reverse|(?:highest|largest|biggest|most|"
    r"newest|latest)\s+first)",
    re.IGNORECASE,
)
_JSON_KEY = re.compile(r"[\"']([A-Za-z_][\w.-]*)[\"']\s*:")
_NOT_FUNCTIONS = frozenset(dir(builtins)) | frozenset(keyword.kwlist)
# a goal that fixes a bug in the user's code: what the bug does not touch stays as given
_FIX = re.compile(r"\b(?:bugs?|buggy|fix|fixes|fixed|wrong|broken|incorrect|regression)\b", re.I)


def raise_to_floor(
    steps: list[Step],
    goal: str,
    *,
    databases: Collection[str] = (),
    kept: Mapping[str, str] | None = None,
    repairs: bool = False,
) -> list[Step]:
    """``steps`` with every weak check raised to its artifact's floor (module docstring).
    ``kept``: the source of each of the user's modules as the user gave it, which a step
    rewriting that module must keep (:mod:`agent.plan.kept`). The planner's own parts stay
    beside the floor, as written; only with ``repairs`` (a small model's profile) are the
    parts that cannot pass on the artifact left out."""
    kept = kept or {}
    out = []
    for step in steps:
        if repairs:
            step = _without_impossible(step)
        spec = step.done_when
        weak = set(check_kinds(spec)) <= WEAK_KINDS
        if _raised(spec):
            floor = None
        elif weak:
            floor = floor_check(step, steps, goal, databases=databases, kept=kept)
        else:
            floor = stated_floor(step, steps, goal, kept=kept)
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
        parts = [_presence(step.expected_output), *floors]
        parts += [p for p in own if _still_needed(p, step.expected_output, repairs=repairs)]
        # ``floor``: how many parts after non_empty are the floor's (True, in older plans: 1)
        raised = {
            "kind": "all",
            "checks": parts,
            "floor": True if len(floors) == 1 else len(floors),
        }
        out.append(step.model_copy(update={"done_when": raised}))
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
    own = list(spec.get("checks") or [])[1 + int(spec["floor"]) :]
    if not own:
        return {"kind": "non_empty"}
    return own[0] if len(own) == 1 else {"kind": "all", "checks": own}


def _raised(spec: Any) -> bool:
    """Whether ``spec`` is a check :func:`raise_to_floor` raised."""
    return isinstance(spec, dict) and spec.get("kind") == "all" and bool(spec.get("floor"))


def floor_check(
    step: Step,
    steps: list[Step],
    goal: str,
    *,
    databases: Collection[str] = (),
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The program check ``step``'s artifact allows, or None when there is none to add."""
    path = step.expected_output
    suffix = posixpath.splitext(path)[1].lower()
    asked = named_files(goal)
    if _is_module(path):
        return _module_floor(step, steps, goal, asked, (kept or {}).get(path, ""))
    if suffix == ".json":
        jsons = [f for f in asked if f.lower().endswith(".json")]
        one = jsons == [path]
        schema = _keys_schema(goal_json_keys(goal) if one else [])
        orders = goal_sort_orders(goal) if one else []
        if orders:
            schema[SORTED_BY] = [{"key": k, "descending": d} for k, d in orders]
        if one and (inner := goal_nested_json_keys(goal)):
            schema[HAS_KEYS] = inner
        if one and (lists := goal_value_lists(goal)):
            schema[VALUES_OF] = lists
        if one and (codes := goal_codes(goal)):
            schema[SPELLED] = codes
        return {"kind": "json_schema", "schema": schema}
    if suffix in PROSE:
        return citations_floor(path, goal, asked)
    if suffix == ".sql":
        named = [d for d in databases if re.search(rf"(?<![\w.-]){re.escape(d)}(?![\w-])", goal)]
        chosen = named if len(named) == 1 else list(databases)
        if len(chosen) != 1:
            return None
        return {"kind": "sql", "db": chosen[0]} | _sql_stated(goal)
    return None


def _sql_stated(goal: str) -> dict[str, Any]:
    """What an ``sql`` check asserts of the goal's wording: the columns it says come from a
    table (``values_from``) and the tables it counts (``reads``)."""
    sources = goal_column_sources(goal)
    counted = goal_counted_tables(goal)
    return ({VALUES_FROM: sources} if sources else {}) | ({READS: counted} if counted else {})


_COUNTED = re.compile(
    r"\b(?:(?:number|count|total)\s+of|how\s+many)\s+(?:(?:its|their|the|all)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)\b",
    re.IGNORECASE,
)


def goal_counted_tables(goal: str) -> list[str]:
    """The words the goal counts ("its number of tracks", "how many invoices"), for an
    ``sql`` check's ``reads``: the query must read that table; the database, when the check
    runs, says which words are tables (the others are not judged)."""
    return list(dict.fromkeys(m.group(1) for m in _COUNTED.finditer(goal)))


_OWNED_COLUMN = re.compile(
    r"\b(?:the|each|every|its|their|a|an)\s+([A-Za-z_][A-Za-z0-9_]*)['\u2019]s\s+"
    r"([A-Za-z_][A-Za-z0-9_]*)\b"
)


def goal_column_sources(goal: str) -> list[dict[str, Any]]:
    """The columns the goal says come from a table ("the genre's Name"), for an ``sql``
    check's ``values_from``: the database, when the check runs, says which pairs are a
    table's column (the others are not judged). ``distinct`` when the goal asks for one row
    per row of that table ("for the 3 genres with the most tracks", "per genre"): on the
    1.5B a query grouped by genre and track returned Rock three times, one track each."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for m in _OWNED_COLUMN.finditer(goal):
        column, table = m.group(2), m.group(1)
        pair: dict[str, Any] = {"column": column, "table": table}
        if _one_row_each(goal, table):
            pair["distinct"] = True
        out.setdefault((column, table), pair)
    return list(out.values())


def _one_row_each(goal: str, table: str) -> bool:
    """Whether the goal asks for one row per ``table`` row: "per genre", "each genre",
    "the 3 genres", "the top 5 genres" (not "each genre's ...", which names a column)."""
    singular = table[:-1] if table.lower().endswith("s") else table
    rows = rf"(?:{re.escape(singular)}s?)"
    each = rf"\b(?:per|each|every|the(?:\s+top)?\s+\d+)\s+{rows}\b(?!['\u2019])"
    return re.search(each, goal, re.IGNORECASE) is not None


_CITE = re.compile(r"\bcit(?:e|es|ed|ing|ation|ations)\b", re.IGNORECASE)
_AT_LEAST = re.compile(
    r"\bcit(?:e|es|ing)\b[^.;]{0,40}?\b(?:at least|no fewer than|a minimum of)\s+"
    r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)
_NUMBERS = {
    w: n for n, w in enumerate("one two three four five six seven eight nine ten".split(), 1)
}


def citations_floor(path: str, goal: str, asked: Collection[str]) -> dict[str, Any] | None:
    """A ``citations`` check of a document the goal names when the goal asks for citations,
    with the least number the goal states (1 when it states none); None otherwise."""
    if path not in asked or not _CITE.search(goal):
        return None
    least = _AT_LEAST.search(goal)
    word = least.group(1).lower() if least else "1"
    return {"kind": "citations", "min": int(word) if word.isdigit() else _NUMBERS[word]}


def stated_floor(
    step: Step, steps: list[Step], goal: str, *, kept: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """What the goal states of the module ``step`` writes (its functions, examples and
    signatures), asserted beside a check the planner made strong: a ``python`` check that
    tries ``median([1, 2, 3])`` passes the bug the goal describes with ``median([1, 2, 3,
    4]) should be 2.5``. None when the goal states nothing of this file."""
    if step.expected_output.lower().endswith(".sql"):
        return _stated_sql(step, goal)
    if not _is_module(step.expected_output):
        return None
    given = (kept or {}).get(step.expected_output, "")
    floor = _module_floor(step, steps, goal, named_files(goal), given)
    stated = floor.get("stated", {}) if floor else {}
    return floor if any(stated.values()) else None


def _stated_sql(step: Step, goal: str) -> dict[str, Any] | None:
    """The columns the goal says come from a table, asserted on the database the planner's
    own ``sql`` check runs the query against (None when it has none, or the goal says none)."""
    stated = _sql_stated(goal)
    own = [p for p in _parts(step.done_when) if isinstance(p, dict) and p.get("kind") == "sql"]
    if not stated or not own or any(VALUES_FROM in p or READS in p for p in own):
        return None
    return {"kind": "sql", "db": own[0].get("db")} | stated


def _module_floor(
    step: Step, steps: list[Step], goal: str, asked: list[str], given: str = ""
) -> dict[str, Any] | None:
    path = step.expected_output
    if is_test_file(path):
        return None
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
    defines = goal_defines(goal, path, asked)
    if not others <= {s.expected_output for s in steps if s.step_id in step.depends_on}:
        uses = goal_uses(goal, path, asked)  # a sibling it may import is not written yet:
        spec = {"kind": "syntax"} | ({"uses": uses} if uses else {})  # parse, nothing runs
        return spec | ({"defines": defines} if defines else {})
    kept = public_names(given)
    keep = probe_calls(given, kept_functions(goal, kept)) if comparable(given) else []
    calls = goal_calls(goal, given)
    given, shared, rests = (
        _shared_parts(goal, given, calls) if comparable(given) else (given, [], {})
    )
    modules = [f for f in asked if _is_module(f) and not is_test_file(f)]
    if modules != [path]:
        names = list(dict.fromkeys([*defines, *kept]))
        examples = goal_examples(goal)
        own = [(c, w) for c, w in examples if _called(c) in defines]
        spec = examples_check(
            names, own, given=given, keep=keep, calls=calls, shared=shared, own=rests
        )
        parts = [spec]
        # run, it must still use what its part of the goal names: on the 1.5B a count.py
        # that split words itself, never calling split_words, ran and passed (a false success)
        if uses := goal_uses(goal, path, asked):
            parts.append({"kind": "syntax", "uses": uses})
        if imports := _package_imports(steps):
            code = "".join(f"import {m}\n" for m in imports)
            parts.append({"kind": "python", "code": code})
            if siblings := _sibling_examples(steps, step, goal, asked, examples):
                parts.append(_prefixed(code, examples_check([], siblings)))
        return parts[0] if len(parts) == 1 else {"kind": "all", "checks": parts}
    examples = goal_examples(goal)
    stated = [*goal_functions(goal), *(_called(c) for c, _ in examples)]
    names = list(dict.fromkeys([*stated, *kept]))
    smoke = goal_smoke_calls(goal)
    fixed = [n for n in dict.fromkeys(_called(c) for c, _ in examples) if n in kept]
    paths = probe_calls(given, fixed) if fixed and _FIX.search(goal) and comparable(given) else []
    return examples_check(
        names,
        examples,
        smoke=smoke,
        given=given,
        keep=keep,
        calls=calls,
        shared=shared,
        paths=paths,
        own=rests,
    )


def _shared_parts(
    goal: str, given: str, calls: list[tuple[str, str]]
) -> tuple[str, list[tuple[str, str]], dict[str, str]]:
    """``given`` with each new function a refactor moves its callers' shared code into,
    defined as that code (:func:`agent.plan.kept.shared_code`), the calls that compare
    the artifact's version with it: ``(call, "the code book_price and music_price share")``,
    and what each caller does after that code (:func:`agent.plan.kept.caller_rests`)."""
    signatures = goal_signatures(goal)
    shared: list[tuple[str, str]] = []
    rests: dict[str, str] = {}
    for callee in dict.fromkeys(b for _, b in calls):
        callers = [a for a, b in calls if b == callee]
        new = signatures.get(callee)
        source = shared_code(goal, given, new, callers) if new else ""
        if new and source:
            rests |= caller_rests(goal, given, new, callers)
            given = f"{given.rstrip()}\n\n\n{source}\n"
            what = f"the code {' and '.join(callers)} share"
            shared += [(c, what) for c in probe_calls(source, [callee])]
    return given, shared, rests


def _sibling_examples(
    steps: list[Step],
    step: Step,
    goal: str,
    asked: list[str],
    stated: list[tuple[str, str]],
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
        defines = set(goal_defines(goal, path, asked))
        if module is None or not defines:
            continue
        out += [(f"{module}.{c}", w) for c, w in stated if _called(c) in defines]
    return out


def _prefixed(code: str, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``, a ``python`` check, running ``code`` (the package's imports) first."""
    return {**spec, "code": code + spec["code"]}


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


def goal_functions(goal: str) -> list[str]:
    """The functions a goal writes as calls or signatures (``to_roman(n: int)``), in order:
    not builtins, keywords, methods (``x.f(``) or tests (``test_x(``)."""
    names = [m.group(1) for m in _CALL.finditer(goal)]
    return list(
        dict.fromkeys(n for n in names if n not in _NOT_FUNCTIONS and not n.startswith("test"))
    )


def goal_smoke_calls(goal: str) -> list[tuple[str, str]]:
    """``(call, returns)`` for each signature the goal writes whose required parameters all
    have a type a value can be made for (``to_roman(n: int) -> str`` → ``("to_roman(1)",
    "str")``); ``returns`` is the stated return type when it is one a check can tell
    (``str``, ``int``, ``list`` …, ``None``), else empty. A function without required
    parameters is not called: it may do anything."""
    calls = []
    for node in goal_signatures(goal).values():
        call = _smoke_call(node)
        if call is not None:
            calls.append((call, _result_type(node.returns)))
    return calls


def goal_signatures(goal: str) -> dict[str, ast.FunctionDef]:
    """The signatures the goal writes (``to_roman(n: int) -> str``), parsed, by name: the
    first one of each name, not builtins, keywords or tests."""
    found: dict[str, ast.FunctionDef] = {}
    for match in _CALL.finditer(goal):
        name = match.group(1)
        if name in _NOT_FUNCTIONS or name.startswith("test") or name in found:
            continue
        end = _closing_paren(goal, match.end() - 1)
        if end is None:
            continue
        returns = _RETURNS.match(goal, end)
        source = f"def {goal[match.start() : end]}" + (f" -> {returns.group(1)}" if returns else "")
        try:
            node = ast.parse(source + ": pass").body[0]
        except SyntaxError:
            continue
        if isinstance(node, ast.FunctionDef):
            found[name] = node
    return found


_RETURNS = re.compile(r"\s*->\s*([A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])?(?:\s*\|\s*None)?)")
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


def goal_examples(goal: str) -> list[tuple[str, str]]:
    """``(call, expected)`` pairs the goal states, both as Python source: a call with literal
    arguments followed by what it should be (``median([1, 2, 3, 4]) should be 2.5``), or by
    what it is, returns or ``==`` when its sentence does not call that behaviour wrong or
    today's. A call stated with two different results is dropped."""
    found: dict[str, set[str]] = {}
    for call, end in _literal_calls(goal):
        rest = goal[end:]
        verb = _VERB_TIGHT.match(rest) or _VERB.match(rest)
        if verb is None:
            continue
        value = _literal_prefix(rest[verb.end() :])
        if value is None:
            continue
        modal = "modal" in verb.groupdict() and verb.group("modal")
        if not modal and _NOT_WANTED.search(_sentence_around(goal, end)):
            continue
        found.setdefault(call, set()).add(value)
    return [(call, next(iter(v))) for call, v in found.items() if len(v) == 1]


def _literal_calls(text: str) -> Iterator[tuple[str, int]]:
    """Each ``name(literal, ...)`` in ``text`` with where it ends."""
    for match in _CALL.finditer(text):
        if match.group(1) in _NOT_FUNCTIONS:
            continue
        end = _closing_paren(text, match.end() - 1)
        if end is None:
            continue
        call = text[match.start() : end]
        try:
            node = ast.parse(call, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call) and _all_literal(node):
            yield call, end


def _closing_paren(text: str, start: int) -> int | None:
    """The index just past the parenthesis that closes ``text[start]``, or None."""
    depth = 0
    for i in range(start, min(len(text), start + 400)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None


def _all_literal(call: ast.Call) -> bool:
    args = [*call.args, *(k.value for k in call.keywords)]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    try:
        for arg in args:
            ast.literal_eval(arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _literal_prefix(text: str) -> str | None:
    """The longest start of ``text`` that is one Python literal (``2.5 but`` → ``2.5``),
    as its ``repr``; None when it starts with no literal."""
    text = text[:400]
    cuts = [m.start() for m in re.finditer(r"[\s,;:)]|\.(?:\s|$)", text)] + [len(text)]
    for cut in sorted(set(cuts), reverse=True):
        head = text[:cut].strip()
        if not head:
            continue
        try:
            value = ast.literal_eval(head)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        return repr(value)
    return None


def _called(call: str) -> str:
    return call.split("(", 1)[0]


def _sentence_around(text: str, index: int) -> str:
    """The sentence (or clause) of ``text`` holding ``index``."""
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= index]
    start = starts[-1]
    after = _SENTENCE_END.search(text, index)
    return text[start : after.start() if after else len(text)]


def goal_json_keys(goal: str) -> list[str]:
    """The top-level keys a goal spells as ``"key":`` (the least nested ones, so an item's
    ``"sku":`` inside ``{...}`` is not asked of the document), in order."""
    return _json_keys(goal, nested=False)


def goal_nested_json_keys(goal: str) -> list[str]:
    """The keys a goal spells as ``"key":`` inside a ``{...}`` of the document (an item's
    ``"sku":``, ``"qty":``): each must be a key of some object in it."""
    return _json_keys(goal, nested=True)


def _json_keys(goal: str, *, nested: bool) -> list[str]:
    depth_at: list[tuple[str, int]] = []
    depth = 0
    last = 0
    for match in _JSON_KEY.finditer(goal):
        span = goal[last : match.start()]
        depth = max(0, depth + span.count("{") - span.count("}"))
        last = match.start()
        depth_at.append((match.group(1), depth))
    if not depth_at:
        return []
    top = min(d for _, d in depth_at)
    return list(dict.fromkeys(k for k, d in depth_at if (d > top) is nested))


_LIST_OF = re.compile(
    r"[\"']([A-Za-z_][\w.-]*)[\"']\s*:\s*(?:the|a|an)?\s*(?:list|array)\s+of\s+(?:the\s+)?"
    r"([A-Za-z_]\w*?)s\b"
)


def goal_value_lists(goal: str) -> dict[str, str]:
    """The lists the goal says hold one key's values (``"out_of_stock": the list of skus``,
    when ``"sku":`` is a key the goal spells): ``{"out_of_stock": "sku"}``."""
    keys = set(goal_nested_json_keys(goal)) | set(goal_json_keys(goal))
    return {m.group(1): m.group(2) for m in _LIST_OF.finditer(goal) if m.group(2) in keys}


_CODE = re.compile(r"(?<![\w.-])(?=[\w.-]*[A-Za-z])(?=[\w.-]*\d)[A-Za-z0-9][\w.-]*[A-Za-z0-9]")
_CASE_CHANGE = re.compile(
    r"\b(?:lower|upper|title)[- ]?case|\bcapitali[sz]|\bcase[- ]insensitive", re.I
)


def goal_codes(goal: str) -> list[str]:
    """The codes the goal spells, of letters and digits (``A-100``, ``SKU42``), which an
    artifact must copy as they are, unless the goal speaks of changing case. On the 1.5B an
    ``inventory.json`` with ``a-100`` for the goal's ``A-100`` passed every check."""
    if _CASE_CHANGE.search(goal):
        return []
    codes = (m.group(0) for m in _CODE.finditer(goal))
    return list(dict.fromkeys(c for c in codes if not posixpath.splitext(c)[1][1:].isalpha()))


def goal_uses(goal: str, path: str, asked: Collection[str]) -> list[str]:
    """The names the goal says ``path`` must use ("textkit/words.py: ... must use
    word_lengths from textkit/count.py"), read in the part of the goal about ``path``
    (:func:`goal_part`)."""
    names = [m.group(1) for m in _MUST_USE.finditer(goal_part(goal, path, asked))]
    return list(dict.fromkeys(names))


def goal_defines(goal: str, path: str, asked: Collection[str]) -> list[str]:
    """The functions the part of the goal about ``path`` writes as calls or signatures,
    but those it says ``path`` must use from elsewhere: what that module must define. On
    the 1.5B a ``textkit/count.py`` without the ``count_words`` its part asked for parsed,
    used ``split_words`` and passed (a false success)."""
    uses = set(goal_uses(goal, path, asked))
    return [f for f in goal_functions(goal_part(goal, path, asked)) if f not in uses]


def goal_part(goal: str, path: str, asked: Collection[str]) -> str:
    """The part of the goal about ``path`` when the goal writes a part per file: from each
    ``path:`` to the next file named with a colon; empty unless two files or more have one
    ("Write a.py and b.py: a.py has f(x) …" has no part about ``b.py``)."""
    heads = sorted(
        (m.start(), m.end(), f)
        for f in asked
        for m in re.finditer(rf"(?<![\w/.-]){re.escape(f)}\s*:", goal)
    )
    if len({f for _, _, f in heads}) < 2:
        return ""
    parts = [
        goal[end : heads[n + 1][0] if n + 1 < len(heads) else len(goal)]
        for n, (_, end, f) in enumerate(heads)
        if f == path
    ]
    return " ".join(parts)


def goal_calls(goal: str, given: str) -> list[tuple[str, str]]:
    """``(caller, callee)`` pairs a refactor of ``given`` (the user's module) asks for: a
    sentence naming a new function (``discounted_total(...)``, not defined in ``given``) that
    says to call or use it; the callers are the given module's functions that sentence names,
    or, when it says "both", "all" or "each" and names none, those the goal names elsewhere.
    A refactor that kept the old bodies passed every behaviour check and did not do it."""
    defined = set(public_names(given))
    new = [f for f in goal_functions(goal) if f not in defined]
    if not defined or not new:
        return []
    named_anywhere = [n for n in public_names(given) if re.search(rf"\b{n}\b", goal)]
    pairs: list[tuple[str, str]] = []
    for sentence in _SENTENCE_END.split(goal):
        for callee in (f for f in new if re.search(rf"\b{f}\b", sentence)):
            said = [m.group(1) for m in _CALL_IT.finditer(sentence)]
            if not any(w in ("it", "them", callee) for w in said):
                continue
            callers = [n for n in named_anywhere if re.search(rf"\b{n}\b", sentence)]
            if not callers and _EVERY.search(sentence):
                callers = named_anywhere
            pairs += [(c, callee) for c in callers if c != callee]
    return list(dict.fromkeys(pairs))


def goal_sort_orders(goal: str) -> list[tuple[str, bool]]:
    """The orders a goal states of its lists as "sorted by sku" / "ordered by price,
    highest first": ``(key, descending)``, in order, each key once."""
    orders: dict[str, bool] = {}
    for match in _SORTED.finditer(goal):
        key = match.group(1)
        after = goal[match.end() : match.end() + 40]
        orders.setdefault(key, _DESCENDING.match(after) is not None)
    return list(orders.items())


def _keys_schema(keys: list[str]) -> dict[str, Any]:
    """Any JSON document when ``keys`` is empty; else an object with those keys, or a
    non-empty list of such objects."""
    if not keys:
        return {}
    one = {"type": "object", "required": keys}
    return {"anyOf": [one, {"type": "array", "minItems": 1, "items": one}]}
