"""Acceptance criteria as data: what the goal asks of each file, typed, with its source.

Three sources fill one model (:class:`GoalCriteria`), and none of them reads English:

- **literals** written in the goal (:func:`literal_criteria`): a call with literal arguments
  followed by ``==``, ``->``, ``→`` or ``=>`` and a literal (``median([1, 2, 3, 4]) == 2.5``),
  a signature (``to_roman(n: int) -> str``), JSON keys written as ``"key":``. Code, not words:
  the same in any language;
- the **planner model**, which returns criteria beside its plan under a JSON schema, each
  criterion quoting the goal's own words it comes from; :func:`verified` keeps a criterion
  only when its quote occurs in the goal and the names and values it asserts occur in its
  quote, so a model cannot invent one;
- the **human**, whose answer is read for literals like the goal (a pause asks for examples).

:mod:`agent.plan.floor` compiles the criteria of a file into the checks beside the
planner's own. Goal text is bounded input: every scan here reads at most
:data:`MAX_SCANNED_CHARS` of it and is linear in that.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent.vfs.filenames import is_test_file

__all__ = [
    "MAX_SCANNED_CHARS",
    "CallCriterion",
    "CountCriterion",
    "ExampleCriterion",
    "FileCriteria",
    "GoalCriteria",
    "KeptBehaviour",
    "NameCriterion",
    "OrderCriterion",
    "QuestionCriterion",
    "ValuesCriterion",
    "folded",
    "literal_criteria",
    "literal_examples",
    "merged",
    "read_criteria",
    "signatures",
    "table_literals",
    "verified",
]

MAX_SCANNED_CHARS = 20_000
"""The most of a goal (or an answer) a scan reads: a longer text is scanned up to here."""
MAX_LITERAL_CHARS = 400  # the longest call or value read as one literal
MAX_ITEMS = 40  # the most criteria of one kind a file keeps


class _Quoted(BaseModel):
    quote: str = Field(
        default="",
        max_length=600,
        description="The goal's own words this comes from, copied exactly.",
    )


class ExampleCriterion(_Quoted):
    """A call whose result the goal states: ``call`` and ``expected`` are Python source."""

    call: str = Field(max_length=MAX_LITERAL_CHARS, description="e.g. median([1, 2, 3, 4])")
    expected: str = Field(max_length=MAX_LITERAL_CHARS, description="a Python literal, e.g. 2.5")


class NameCriterion(_Quoted):
    """A name the goal asks something of (a function to keep, to use, to fix; a table)."""

    name: str = Field(max_length=120)


class OrderCriterion(_Quoted):
    """A list ordered by one key."""

    key: str = Field(max_length=120)
    descending: bool = False


class ValuesCriterion(_Quoted):
    """A list that holds one key's values (``"out_of_stock"``: the items' ``sku`` values)."""

    key: str = Field(max_length=120)
    of: str = Field(max_length=120)


class CallCriterion(_Quoted):
    """A refactor: ``caller`` must call ``callee``; ``shares``: the code the callers share
    moves into ``callee``, which then returns what that code computed."""

    caller: str = Field(max_length=120)
    callee: str = Field(max_length=120)
    shares: bool = False


class CountCriterion(_Quoted):
    """At least ``least`` of something (citations)."""

    least: int = Field(ge=0, le=100)


class KeptBehaviour(_Quoted):
    """The goal keeps the given file's whole behaviour (a refactor's promise): every public
    function of it is kept."""


class QuestionCriterion(_Quoted):
    """A question the goal tells the agent to ask the user before the work."""

    text: str = Field(max_length=600)


def _listed(description: str | None = None) -> Any:
    """A list of criteria of one kind: empty by default, at most :data:`MAX_ITEMS`."""
    return Field(default_factory=list, max_length=MAX_ITEMS, description=description)


class FileCriteria(BaseModel):
    """What the goal asks of one file."""

    path: str = Field(max_length=300, description="The file, as the plan's expected_output.")
    functions: list[NameCriterion] = _listed()
    examples: list[ExampleCriterion] = _listed()
    keep: list[NameCriterion] = _listed(
        "Functions of a given file the goal says to keep as they are."
    )
    behaviour_kept: KeptBehaviour | None = Field(
        default=None, description="Only when the goal says the file's behaviour must not change."
    )
    fixes: list[NameCriterion] = _listed(
        "Functions of a given file whose bug the goal asks to fix."
    )
    uses: list[NameCriterion] = _listed("Names this file must use (import or call) from elsewhere.")
    calls: list[CallCriterion] = _listed()
    keys: list[NameCriterion] = _listed("Top-level JSON keys.")
    item_keys: list[NameCriterion] = _listed("Keys of the JSON's items.")
    sorted_by: list[OrderCriterion] = _listed()
    values_of: list[ValuesCriterion] = _listed()
    spelled: list[NameCriterion] = _listed(
        "Codes or names the file must copy exactly as the goal writes them."
    )
    sections: list[NameCriterion] = _listed("Section headings a document must have.")
    citations: CountCriterion | None = Field(
        default=None, description="The least number of distinct sources it must cite."
    )
    reads: list[NameCriterion] = _listed("Tables an SQL query must read (what the goal counts).")


class GoalCriteria(BaseModel):
    """What the goal asks of each file it wants, and a question to ask the user first."""

    files: list[FileCriteria] = _listed()
    question: QuestionCriterion | None = Field(
        default=None,
        description="Only when the goal tells you to ask the user something before the work.",
    )

    def of(self, path: str) -> FileCriteria:
        """The criteria of ``path`` (all its entries merged; empty when there is none)."""
        found = [f for f in self.files if f.path == path]
        out = FileCriteria(path=path)
        for f in found:
            out = _merge_file(out, f)
        return out


# ---------------------------------------------------------------------------- literals

# a call written in the goal: a name (not an attribute) right before "("
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_ARROW = re.compile(r"\s*(?:==|=>|->|→)\s*")
_RETURNS = re.compile(r"\s*->\s*([A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])?(?:\s*\|\s*None)?)")
_JSON_KEY = re.compile(r"[\"']([A-Za-z_][\w.-]{0,80})[\"']\s*:")
_NOT_FUNCTIONS = frozenset(
    "print len str int float bool list dict set tuple range type isinstance sorted sum min max "
    "abs round any all map filter zip open repr hash id iter next enumerate reversed".split()
)


def _scanned(text: str) -> str:
    return text[:MAX_SCANNED_CHARS]


def literal_examples(text: str) -> list[tuple[str, str]]:
    """``(call, expected)`` for each call with literal arguments that the text follows with
    ``==``, ``->``, ``→`` or ``=>`` and a literal; a call stated with two different results
    is dropped (the text contradicts itself)."""
    text = _scanned(text)
    found: dict[str, set[str]] = {}
    for call, end in _literal_calls(text):
        arrow = _ARROW.match(text, end)
        if arrow is None:
            continue
        value = _literal_prefix(text[arrow.end() : arrow.end() + MAX_LITERAL_CHARS].lstrip())
        if value is not None:
            found.setdefault(call, set()).add(value)
    return [(call, next(iter(v))) for call, v in found.items() if len(v) == 1]


def signatures(text: str) -> dict[str, ast.FunctionDef]:
    """The signatures the text writes (``to_roman(n: int) -> str``), parsed, by name: the
    first one of each name whose parameters parse, not builtins or tests."""
    text = _scanned(text)
    found: dict[str, ast.FunctionDef] = {}
    for match in _CALL.finditer(text):
        name = match.group(1)
        if name in _NOT_FUNCTIONS or name.startswith("test") or name in found:
            continue
        end = _closing_paren(text, match.end() - 1)
        if end is None:
            continue
        returns = _RETURNS.match(text, end)
        source = f"def {text[match.start() : end]}" + (f" -> {returns.group(1)}" if returns else "")
        try:
            node = ast.parse(source + ": pass").body[0]
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if isinstance(node, ast.FunctionDef):
            found[name] = node
    return found


def table_literals(text: str) -> list[str]:
    """The tables the text writes with their columns (``Genre(GenreId, Name)``): names
    followed by a list of bare names. An SQL query of the goal reads each of them; a name
    the database has no table for is not judged (``agent.checks.sql``). On the 1.5B a query
    counting tracks by their own name, for a goal giving ``Genre(GenreId, Name)`` and
    ``Track(...)``, passed a check that only counted its rows."""
    found = []
    for name, node in signatures(text).items():
        args = node.args
        plain = args.args and not (args.defaults or args.vararg or args.kwarg or args.kwonlyargs)
        if plain and node.returns is None and all(a.annotation is None for a in args.args):
            found.append(name)
    return found


def json_keys(text: str) -> tuple[list[str], list[str]]:
    """The keys the text writes as ``"key":``: the least nested ones (the document's), and
    those inside a ``{...}`` below them (its items')."""
    text = _scanned(text)
    depth_at: list[tuple[str, int]] = []
    depth = 0
    last = 0
    for match in _JSON_KEY.finditer(text):
        span = text[last : match.start()]
        depth = max(0, depth + span.count("{") - span.count("}"))
        last = match.start()
        depth_at.append((match.group(1), depth))
    if not depth_at:
        return [], []
    top = min(d for _, d in depth_at)
    outer = list(dict.fromkeys(k for k, d in depth_at if d == top))
    inner = list(dict.fromkeys(k for k, d in depth_at if d > top))
    if top > 0 and _QUOTED_NAME.search(_unbraced(text)):
        # a fragment: names quoted outside every {...} are the document's (written without
        # a colon), so the braced keys are of objects inside it ("items", a list of
        # {"sku": ...}); read as the document's, they failed every right artifact
        return [], list(dict.fromkeys(outer + inner))
    return outer, inner


_QUOTED_NAME = re.compile(r"[\"'][A-Za-z_][\w.-]{0,80}[\"']")


def _unbraced(text: str) -> str:
    """``text`` outside every ``{...}``."""
    out: list[str] = []
    depth = 0
    for char in text:
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def literal_criteria(text: str, files: list[str]) -> GoalCriteria:
    """What the literals of ``text`` ask of ``files`` (the files the goal asks for): the
    examples and signatures of the goal's one Python module (or of the module whose part of
    the goal holds them, when it has a part per file), the JSON keys of its one JSON file."""
    modules = [f for f in files if f.endswith(".py") and not is_test_file(f)]
    jsons = [f for f in files if f.endswith(".json")]
    out: list[FileCriteria] = []
    everywhere = literal_examples(text)
    for path in modules:
        part = text if len(modules) == 1 else file_part(text, path, files)
        if not part:
            continue
        named = list(signatures(part))[:MAX_ITEMS]
        # an example written anywhere (a human's answer too) is of the module defining it
        stated = literal_examples(part) + [(c, w) for c, w in everywhere if _callee(c) in named]
        examples = [
            ExampleCriterion(call=c, expected=w) for c, w in list(dict.fromkeys(stated))[:MAX_ITEMS]
        ]
        if examples or named:
            functions = [NameCriterion(name=n) for n in named]
            out.append(FileCriteria(path=path, examples=examples, functions=functions))
    sqls = [f for f in files if f.endswith(".sql")]
    if len(sqls) == 1 and (tables := table_literals(text)):
        reads = [NameCriterion(name=t) for t in tables[:MAX_ITEMS]]
        out.append(FileCriteria(path=sqls[0], reads=reads))
    if len(jsons) == 1:
        outer, inner = json_keys(text)
        if outer or inner:
            keys = [NameCriterion(name=k) for k in outer[:MAX_ITEMS]]
            items = [NameCriterion(name=k) for k in inner[:MAX_ITEMS]]
            out.append(FileCriteria(path=jsons[0], keys=keys, item_keys=items))
    return GoalCriteria(files=out)


def file_part(text: str, path: str, files: list[str]) -> str:
    """The part of ``text`` about ``path`` when it writes a part per file: from each
    ``path:`` to the next file named with a colon; empty unless two files or more have one."""
    text = _scanned(text)
    heads = sorted(
        (m.start(), m.end(), f)
        for f in files
        for m in re.finditer(rf"(?<![\w/.-]){re.escape(f)}\s*:", text)
    )
    if len({f for _, _, f in heads}) < 2:
        return ""
    parts = [
        text[end : heads[n + 1][0] if n + 1 < len(heads) else len(text)]
        for n, (_, end, f) in enumerate(heads)
        if f == path
    ]
    return " ".join(parts)


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
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if isinstance(node, ast.Call) and _all_literal(node):
            yield call, end


def _closing_paren(text: str, start: int) -> int | None:
    """The index just past the parenthesis that closes ``text[start]``, or None."""
    depth = 0
    for i in range(start, min(len(text), start + MAX_LITERAL_CHARS)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None


def _all_literal(call: ast.Call) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    try:
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            ast.literal_eval(arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


_OPENS = {"(": ")", "[": "]", "{": "}"}
_ENDS = frozenset(",;:)]}")


def _literal_end(text: str) -> int:
    """Where the literal at the start of ``text`` ends: the first delimiter outside brackets
    and quotes (a comma, a semicolon, a closing bracket it did not open, white space, or a
    full stop that ends a sentence). One pass, whatever the text."""
    stack: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPENS:
            stack.append(_OPENS[char])
        elif stack and char == stack[-1]:
            stack.pop()
        elif not stack and (char in _ENDS or char.isspace()):
            return i
        elif not stack and char == "." and (i + 1 == len(text) or text[i + 1].isspace()):
            return i
        i += 1
    return len(text)


def _literal_prefix(text: str) -> str | None:
    """The one Python literal at the start of ``text`` (``2.5 but`` → ``2.5``, ``2, f(2)``
    → ``2``), as its ``repr``; None when it starts with no literal."""
    head = text[: _literal_end(text.lstrip())].strip() if text.strip() else ""
    if not head:
        return None
    try:
        value = ast.literal_eval(head)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return repr(value)


# ---------------------------------------------------------------------------- verification


def folded(text: str) -> str:
    """Text compared for quoting: NFKC, case-folded, runs of white space as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _in(needle: str, haystack: str) -> bool:
    return bool(needle) and folded(needle) in haystack


def verified(criteria: GoalCriteria, goal: str) -> tuple[GoalCriteria, list[str]]:
    """``criteria`` without the criteria the goal does not state: each must quote the goal
    (its ``quote`` occurs in the goal) and the names and values it asserts must occur in its
    quote. Returns the kept criteria and a line per dropped one (for the log)."""
    text = folded(_scanned(goal))
    dropped: list[str] = []

    def keep(item: _Quoted, *values: str) -> bool:
        quote = folded(item.quote)
        ok = bool(quote) and quote in text and all(_in(v, quote) for v in values if v)
        if not ok:
            shown = item.model_dump_json()[:200]
            dropped.append(f"a criterion the goal does not state: {shown}")
        return ok

    files = []
    for f in criteria.files:
        kept = FileCriteria(
            path=f.path,
            functions=[c for c in f.functions if keep(c, c.name)],
            examples=[c for c in f.examples if keep(c, _callee(c.call), c.expected)],
            keep=[c for c in f.keep if keep(c, c.name)],
            behaviour_kept=f.behaviour_kept
            if f.behaviour_kept and keep(f.behaviour_kept)
            else None,
            fixes=[c for c in f.fixes if keep(c, c.name)],
            uses=[c for c in f.uses if keep(c, c.name)],
            calls=[c for c in f.calls if keep(c, c.caller, c.callee)],
            keys=[c for c in f.keys if keep(c, c.name)],
            item_keys=[c for c in f.item_keys if keep(c, c.name)],
            sorted_by=[c for c in f.sorted_by if keep(c, c.key)],
            values_of=[c for c in f.values_of if keep(c, c.key, c.of)],
            spelled=[c for c in f.spelled if keep(c, c.name)],
            sections=[c for c in f.sections if keep(c, c.name)],
            citations=f.citations if f.citations and keep(f.citations) else None,
            reads=[c for c in f.reads if keep(c, c.name)],
        )
        files.append(kept)
    question = criteria.question if criteria.question and keep(criteria.question) else None
    return GoalCriteria(files=files, question=question), dropped


def _callee(call: str) -> str:
    """The function an example calls (``m.f(1)`` → ``f``)."""
    match = re.match(r"\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*\(", call)
    return match.group(1) if match else call


# ---------------------------------------------------------------------------- merging


def merged(*sources: GoalCriteria) -> GoalCriteria:
    """The criteria of every source, per file, each criterion once; the first question."""
    paths = list(dict.fromkeys(f.path for s in sources for f in s.files))
    files = []
    for path in paths:
        out = FileCriteria(path=path)
        for source in sources:
            for f in source.files:
                if f.path == path:
                    out = _merge_file(out, f)
        files.append(out)
    question = next((s.question for s in sources if s.question is not None), None)
    return GoalCriteria(files=files, question=question)


_LISTS = (
    "functions keep fixes uses calls keys item_keys sorted_by values_of spelled sections "
    "reads examples"
).split()


def _merge_file(a: FileCriteria, b: FileCriteria) -> FileCriteria:
    update: dict[str, Any] = {}
    for name in _LISTS:
        items = [*getattr(a, name), *getattr(b, name)]
        seen: dict[str, Any] = {}
        for item in items:
            seen.setdefault(_identity(item), item)
        update[name] = list(seen.values())[:MAX_ITEMS]
    update["citations"] = a.citations or b.citations
    update["behaviour_kept"] = a.behaviour_kept or b.behaviour_kept
    return a.model_copy(update=update)


def _identity(item: BaseModel) -> str:
    """What makes two criteria the same one: every field but the quote."""
    return repr(sorted((k, v) for k, v in item.model_dump().items() if k != "quote"))


def read_criteria(value: Any) -> GoalCriteria:
    """Criteria as a plan stores them (plain data), or none when they do not validate."""
    if isinstance(value, GoalCriteria):
        return value
    if not isinstance(value, Mapping):
        return GoalCriteria()
    try:
        return GoalCriteria.model_validate(value)
    except ValidationError:
        return GoalCriteria()
