"""Typed checks of what a goal states: ``examples``, ``json_shape`` and ``sections``.

The evidence floor (:mod:`agent.plan.floor`) compiles a goal's acceptance criteria
(:mod:`agent.plan.criteria`) into these kinds. Each is a pydantic spec that holds what it
asserts as data — the calls and the values they must return, the keys and orders of a JSON
document, the sections of a document — so a prompt, a replan and a reader of the thread see
the assertion, never generated code or a pattern. Each runs by compiling itself to a kind of
the table (``python`` in the sandbox, ``json_schema``, ``regex`` / ``contains``) and running
that: one runner per kind of evidence, and the verdict stays the sandbox's.

They are not offered to the planner, whose acceptance criteria are data already
(``PlanDraft.criteria``); they validate and run like any kind, so a plan that names one is
held to its spec.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.checks.examples import EXAMPLES_TIMEOUT_S, examples_check
from agent.checks.registry import register_check, run_lent_check
from agent.checks.report import CheckReport, make_report
from agent.checks.text import HAS_KEYS, SORTED_BY, SPELLED, VALUES_OF

__all__ = [
    "FLOOR",
    "ExamplesSpec",
    "JsonShapeSpec",
    "SectionsSpec",
    "StatedExample",
    "parsed",
    "register",
    "shown_stated",
]

FLOOR = "floor"
"""The ``origin`` of a part the product added beside the planner's check (the evidence
floor, the goal's criteria, the judge's rubric of prose): a replan is shown the planner's
own parts, and the added ones are raised again on its answer."""
MAX_ITEMS = 64  # the most calls, keys or sections one spec asserts


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    origin: Literal["floor"] | None = None
    """:data:`FLOOR` when the product added the part beside the planner's check."""

    def as_spec(self) -> dict[str, Any]:
        """The spec as plain data, what a plan stores (defaults left out)."""
        return {"kind": self.kind, **self.model_dump(mode="json", exclude_defaults=True)}


class StatedExample(BaseModel):
    """One call whose result the goal states, both as Python source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: str = Field(min_length=1, max_length=2_000)
    expected: str = Field(min_length=1, max_length=2_000)


class SmokeCall(BaseModel):
    """A call built from a written signature: it must raise no error of broken code and
    return the type named (any, when ``returns`` is empty)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: str = Field(min_length=1, max_length=2_000)
    returns: str = ""


class SharedCall(BaseModel):
    """A call of a refactor's new function, which must return what ``source`` names (the
    code its callers shared) returns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: str = Field(min_length=1, max_length=2_000)
    source: str = Field(min_length=1, max_length=2_000)


class ExamplesSpec(_Spec):
    """``examples``: the module defines ``defines``, its stated examples hold, its
    signatures' smoke calls run, the calls of a user's module in ``keep`` end as they do in
    ``given``, every ``[caller, callee]`` of ``calls`` holds, and a refactor's and a fix's
    calls end as the criteria say (:func:`agent.checks.examples.examples_check`). ``prelude``
    runs first (a package's imports)."""

    kind: Literal["examples"] = "examples"
    defines: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    examples: list[StatedExample] = Field(default_factory=list, max_length=MAX_ITEMS)
    smoke: list[SmokeCall] = Field(default_factory=list, max_length=MAX_ITEMS)
    given: str = ""
    keep: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    calls: list[tuple[str, str]] = Field(default_factory=list, max_length=MAX_ITEMS)
    shared: list[SharedCall] = Field(default_factory=list, max_length=MAX_ITEMS)
    paths: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    own: dict[str, str] = Field(default_factory=dict)
    prelude: str = ""
    timeout_s: float = Field(default=EXAMPLES_TIMEOUT_S, gt=0, le=120)

    def compiled(self) -> dict[str, Any]:
        """The ``python`` check that runs it (the program of ``examples_program.py``)."""
        spec = examples_check(
            self.defines,
            [(e.call, e.expected) for e in self.examples],
            smoke=[(s.call, s.returns) for s in self.smoke],
            given=self.given,
            keep=self.keep,
            calls=self.calls,
            shared=[(s.call, s.source) for s in self.shared],
            paths=self.paths,
            own=self.own,
            stated=False,
        )
        return {**spec, "code": self.prelude + spec["code"], "timeout_s": self.timeout_s}

    def shown(self) -> dict[str, Any]:
        """What it asserts, as a prompt shows it (the given file's source left out)."""
        out: dict[str, Any] = {"kind": self.kind, "defines": list(self.defines)}
        out["examples"] = [f"{e.call} == {e.expected}" for e in self.examples]
        if self.smoke:
            out["runs_without_error"] = [
                f"{s.call} -> {s.returns}" if s.returns else s.call for s in self.smoke
            ]
        if self.keep and self.given:
            out["ends_as_in_the_given_file"] = list(self.keep)
        if self.paths and self.given and self.examples:
            out["ends_as_in_the_given_file_off_the_bug_s_path"] = list(self.paths)
        if self.shared and self.given:
            out["returns_as_the_shared_code"] = [f"{s.call}: as {s.source}" for s in self.shared]
        if self.calls:
            out["calls"] = [f"{a} calls {b}" for a, b in self.calls]
        return out


class SortOrder(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1)
    descending: bool = False


class JsonShapeSpec(_Spec):
    """``json_shape``: the artifact parses as JSON, with ``keys`` at its top (an object, or
    a non-empty list of such objects), every list of objects holding a key of ``sorted_by``
    sorted by it, its objects using the keys ``item_keys``, ``values_of[where]`` listing
    values of ``key`` rather than objects, and the codes of ``spelled`` spelled so."""

    kind: Literal["json_shape"] = "json_shape"
    keys: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    sorted_by: list[SortOrder] = Field(default_factory=list, max_length=MAX_ITEMS)
    item_keys: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    values_of: dict[str, str] = Field(default_factory=dict)
    spelled: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)

    def states(self) -> bool:
        """Whether it asks more than "any JSON"."""
        return bool(self.keys or self.sorted_by or self.item_keys or self.values_of or self.spelled)

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema it compiles to, with the ``x-`` keywords of
        :mod:`agent.checks.text` for what JSON Schema cannot say."""
        schema: dict[str, Any] = {}
        if self.keys:
            one = {"type": "object", "required": list(self.keys)}
            schema = {"anyOf": [one, {"type": "array", "minItems": 1, "items": one}]}
        if self.sorted_by:
            schema[SORTED_BY] = [o.model_dump() for o in self.sorted_by]
        if self.item_keys:
            schema[HAS_KEYS] = list(dict.fromkeys(self.item_keys))
        if self.values_of:
            schema[VALUES_OF] = dict(self.values_of)
        if self.spelled:
            schema[SPELLED] = list(dict.fromkeys(self.spelled))
        return schema

    def compiled(self) -> dict[str, Any]:
        return {"kind": "json_schema", "schema": self.json_schema()}

    def shown(self) -> dict[str, Any]:
        return self.compiled()  # said in words by agent.checks.examples.checks_listed


MARKDOWN = frozenset({".md", ".markdown"})


class SectionsSpec(_Spec):
    """``sections``: the document has each of ``titles`` as a section: in Markdown a
    heading line naming it, elsewhere the title somewhere in the text."""

    kind: Literal["sections"] = "sections"
    titles: list[str] = Field(min_length=1, max_length=MAX_ITEMS)

    def compiled_for(self, path: str) -> dict[str, Any]:
        """The parts that run it on ``path``: one heading ``regex`` per title for Markdown,
        else one ``contains`` of them all."""
        titles = [t.strip() for t in self.titles if t.strip()]
        if posixpath.splitext(path)[1].lower() not in MARKDOWN:
            return {"kind": "contains", "all": titles}
        patterns = [rf"(?im)^[ \t]{{0,3}}#{{1,6}}[ \t][^\n]*{re.escape(t)}" for t in titles]
        return {"kind": "all", "checks": [{"kind": "regex", "pattern": p} for p in patterns]}

    def shown(self) -> dict[str, Any]:
        return {"kind": self.kind, "titles": list(self.titles)}


_SPECS: dict[str, type[ExamplesSpec | JsonShapeSpec | SectionsSpec]] = {
    "examples": ExamplesSpec,
    "json_shape": JsonShapeSpec,
    "sections": SectionsSpec,
}


def parsed(spec: Mapping[str, Any]) -> ExamplesSpec | JsonShapeSpec | SectionsSpec | None:
    """``spec`` as its typed model, or None when it is not a valid spec of these kinds."""
    model = _SPECS.get(str(spec.get("kind")))
    if model is None:
        return None
    try:
        return model.model_validate(dict(spec))
    except ValidationError:
        return None


def shown_stated(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a spec of these kinds asserts, as a prompt shows it (None for another kind)."""
    typed = parsed(spec)
    return typed.shown() if typed is not None else None


def _validator(model: type[BaseModel]) -> Any:
    def validate(spec: dict[str, Any]) -> list[str]:
        try:
            model.model_validate(spec)
        except ValidationError as exc:
            kind = spec.get("kind")
            return [
                f"kind {kind!r}: {'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}"
                for e in exc.errors()[:8]
            ]
        return []

    return validate


def _run(kind: str, compiled: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    """Run what a typed spec compiled to; the report names the typed kind."""
    report = run_lent_check(compiled, files, path)
    return make_report(kind, report["passed"], float(report["score"]), report["evidence"])


def _check_examples(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    return _run("examples", ExamplesSpec.model_validate(spec).compiled(), files, path)


def _check_json_shape(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    return _run("json_shape", JsonShapeSpec.model_validate(spec).compiled(), files, path)


def _check_sections(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    return _run("sections", SectionsSpec.model_validate(spec).compiled_for(path), files, path)


def register() -> None:
    """Register the typed kinds; ``agent.checks`` calls this once, after the kinds they
    compile to."""
    register_check(
        "examples",
        _check_examples,
        validate=_validator(ExamplesSpec),
        describe='{"kind": "examples", "defines": ["f"], "examples": [{"call": "f(1)", '
        '"expected": "2"}]}',
        offered=False,
    )
    register_check(
        "json_shape",
        _check_json_shape,
        validate=_validator(JsonShapeSpec),
        describe='{"kind": "json_shape", "keys": ["name"], "sorted_by": [{"key": "sku"}]}',
        offered=False,
    )
    register_check(
        "sections",
        _check_sections,
        validate=_validator(SectionsSpec),
        describe='{"kind": "sections", "titles": ["Background"]}',
        offered=False,
    )
