"""The kinds that read the artifact as text: ``exists``, ``non_empty``, ``contains``, ``regex``
and ``json_schema``. None runs generated code, so they run in the host process."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import regex

from agent.checks.registry import needs_strings, register_check
from agent.checks.report import CheckReport, make_report, short

REGEX_TIME_LIMIT_S = 1.0


def _check_exists(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    if path not in files:
        return make_report("exists", False, 0.0, f"artifact {path} was not produced")
    return make_report("exists", True, 1.0, f"{path} exists ({len(files[path].encode())} bytes)")


def _check_non_empty(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    content = files[path]
    if not content.strip():
        return make_report("non_empty", False, 0.0, f"{path} is blank ({len(content)} characters)")
    evidence = f"{path} has {len(content.encode())} bytes of content"
    return make_report("non_empty", True, 1.0, evidence)


def _validate_contains(spec: dict[str, Any]) -> list[str]:
    return needs_strings(spec, "all")


def _check_contains(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    wanted = spec["all"]
    missing = [s for s in wanted if s not in files[path]]
    score = (len(wanted) - len(missing)) / len(wanted)
    if missing:
        quoted = ", ".join(short(s, 80) for s in missing)
        evidence = f"{path} lacks {len(missing)} of {len(wanted)} required strings: {quoted}"
        return make_report("contains", False, score, evidence)
    return make_report("contains", True, 1.0, f"all {len(wanted)} required strings occur in {path}")


def _validate_regex(spec: dict[str, Any]) -> list[str]:
    pattern = spec.get("pattern")
    if not isinstance(pattern, str):
        return ["kind 'regex' needs 'pattern': a string"]
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        return [f"regex pattern {pattern!r} does not compile: {exc}"]
    return []


def _check_regex(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    # A pathological pattern can backtrack for ever and Python's re cannot be interrupted;
    # the regex package (same syntax) can: a time-out fails the check instead of the host.
    content = files[path]
    try:
        match = regex.search(spec["pattern"], content, regex.MULTILINE, timeout=REGEX_TIME_LIMIT_S)
    except TimeoutError:
        evidence = (
            f"pattern {spec['pattern']!r} took longer than {REGEX_TIME_LIMIT_S:g} s on {path}"
        )
        return make_report("regex", False, 0.0, evidence)
    if match is None:
        return make_report("regex", False, 0.0, f"pattern {spec['pattern']!r} not found in {path}")
    line = content.count("\n", 0, match.start()) + 1
    evidence = f"pattern matched at line {line} of {path}: {short(match.group(0))}"
    return make_report("regex", True, 1.0, evidence)


def _validate_json_schema(spec: dict[str, Any]) -> list[str]:
    schema = spec.get("schema")
    if not isinstance(schema, dict | bool):
        return ["kind 'json_schema' needs 'schema': a JSON Schema object"]
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the schema itself is invalid: {exc.message}"]
    return []


def _check_json_schema(spec: dict[str, Any], files: Mapping[str, str], path: str) -> CheckReport:
    try:
        instance = json.loads(files[path])
    except json.JSONDecodeError as exc:
        return make_report("json_schema", False, 0.0, f"{path} is not valid JSON: {exc}")
    schema = spec["schema"]
    cls = jsonschema.validators.extend(
        jsonschema.validators.validator_for(schema),
        {SORTED_BY: _sorted_by, HAS_KEYS: _has_keys, VALUES_OF: _values_of, SPELLED: _spelled},
    )
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = list(validator.iter_errors(instance))
    if not errors:
        return make_report("json_schema", True, 1.0, f"{path} is valid JSON matching the schema")
    return make_report("json_schema", False, 0.0, _errors_shown(errors))


MAX_ERRORS_SHOWN = 3


def _errors_shown(errors: list[Any]) -> str:
    """The most relevant error first, then the other different ones, up to
    :data:`MAX_ERRORS_SHOWN`: on the 1.5B, shown one error at a time ("not sorted by sku",
    then "no object has qty"), a revision fixed each and broke the other until the depth
    cap."""
    best = jsonschema.exceptions.best_match(errors)
    shown = [f"{best.json_path}: {best.message}"]
    for error in sorted(errors, key=jsonschema.exceptions.relevance, reverse=True):
        line = f"{error.json_path}: {error.message}"
        if line not in shown and len(shown) < MAX_ERRORS_SHOWN:
            shown.append(line)
    more = f" ({len(errors)} errors; {len(shown)} shown)" if len(errors) > len(shown) else ""
    return "; ".join(shown) + more


SORTED_BY = "x-sortedBy"
"""A keyword of our own in a ``json_schema`` check's schema (standard validators ignore
``x-`` keywords): ``[{"key": "sku", "descending": false}, ...]``, every list in the document
whose items are all objects with ``key`` must be in that order. The evidence floor adds it
when the goal says "sorted by sku" (``agent.plan.floor``): on the 1.5B an ``inventory.json``
in the goal's order passed a schema of its keys."""


HAS_KEYS = "x-hasKeys"
"""A keyword of our own: ``["sku", "qty"]``, each a key of some object in the document. The
floor adds the keys the goal spells inside its objects: on the 1.5B an ``inventory.json``
whose items had ``quantity`` and ``unit_price`` for the goal's ``qty`` and ``price`` passed a
schema of the top-level keys."""


VALUES_OF = "x-valuesOf"
"""A keyword of our own: ``{"out_of_stock": "sku"}``, the list under that key holds values
the document's objects have under ``sku`` (plain values, not the objects). The floor adds it
when the goal says ``"out_of_stock": the list of skus``: on the 1.5B the program put the
whole out-of-stock items there, and the schema of the keys passed it."""


SPELLED = "x-spelled"
"""A keyword of our own: ``["A-100", "B-220"]``, every string in the document that is one of
them but for case is spelled as it is. The floor adds the codes the goal spells: on the 1.5B
an ``inventory.json`` with ``"a-100"`` for the goal's ``A-100`` passed every other check."""


def _spelled(validator: Any, codes: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
    wanted = (
        {c.casefold(): c for c in codes if isinstance(c, str)} if isinstance(codes, list) else {}
    )
    for where, text in _strings(instance, "$"):
        right = wanted.get(text.casefold())
        if right is not None and text != right:
            yield jsonschema.exceptions.ValidationError(
                f"{where} is {json.dumps(text)[:80]}; the goal spells it {json.dumps(right)}: "
                "copy the goal's values as they are written"
            )
            return


def _strings(value: Any, where: str) -> Any:
    """``(path, string)`` of every string value and key anywhere in ``value``."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield f"{where} (a key)", name
            yield from _strings(item, f"{where}.{name}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _strings(item, f"{where}[{n}]")


def _values_of(validator: Any, wanted: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
    objects = [instance] if isinstance(instance, dict) else instance
    pairs = wanted.items() if isinstance(wanted, Mapping) else []
    for owner in (o for o in objects if isinstance(o, dict)) if isinstance(objects, list) else ():
        for name, key in pairs:
            if name not in owner or not isinstance(key, str):
                continue
            allowed = list(_values_under(owner, key))
            value = owner[name]
            if not isinstance(value, list):
                why = f"$.{name} is {json.dumps(value)[:80]}, not a list of {key!r} values"
                yield jsonschema.exceptions.ValidationError(why)
                continue
            for n, item in enumerate(value):
                if isinstance(item, dict | list) or item not in allowed:
                    shown = json.dumps(item)[:80]
                    yield jsonschema.exceptions.ValidationError(
                        f"$.{name}[{n}] is {shown}, not one of the document's {key!r} values "
                        f"(the goal asks for the list of {key}s)"
                    )
                    break


def _values_under(value: Any, key: str) -> Any:
    """Every plain value any object in ``value`` holds under ``key``."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key and not isinstance(item, dict | list):
                yield item
            yield from _values_under(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from _values_under(item, key)


def _has_keys(validator: Any, keys: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
    present = set(_object_keys(instance))
    missing = [k for k in keys if isinstance(k, str) and k not in present]
    if missing:
        shown = ", ".join(json.dumps(k) for k in missing)
        yield jsonschema.exceptions.ValidationError(f"no object in the document has {shown}")


def _object_keys(value: Any) -> Any:
    """Every key of every object anywhere in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _object_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _object_keys(item)


def _sorted_by(validator: Any, orders: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
    for order in orders if isinstance(orders, list) else []:
        key = order.get("key") if isinstance(order, Mapping) else None
        if not isinstance(key, str):
            continue
        descending = bool(order.get("descending"))
        for where, values in _keyed_lists(instance, key, "$"):
            if values != sorted(values, reverse=descending):
                way = "descending" if descending else "ascending"
                shown = ", ".join(json.dumps(v) for v in values[:8])
                wanted = ", ".join(json.dumps(v) for v in sorted(values, reverse=descending)[:8])
                yield jsonschema.exceptions.ValidationError(
                    f"{where} is not sorted by {key!r} ({way}): {shown}; "
                    f"sorted, its {key!r} values would be {wanted}: sort that list by its "
                    f"{key!r} before writing it"
                )


def _keyed_lists(value: Any, key: str, where: str) -> Any:
    """``(path, values of key)`` of every list of 2+ objects that all hold ``key`` with
    values of one comparable type (strings, or numbers), anywhere in ``value``."""
    if isinstance(value, list):
        items = [v for v in value if isinstance(v, dict) and key in v]
        if len(value) >= 2 and len(items) == len(value):
            values = [v[key] for v in items]
            if all(isinstance(v, str) for v in values) or all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in values
            ):
                yield where, values
        for n, item in enumerate(value):
            yield from _keyed_lists(item, key, f"{where}[{n}]")
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _keyed_lists(item, key, f"{where}.{name}")


def schema_in_words(schema: Any) -> tuple[Any, list[str]]:
    """``schema`` without our own keywords, and what those keywords ask, in words: a
    program's prompt shows them so (asked for ``inventory.json`` under ``"x-sortedBy":
    [{"key": "sku", ...}]``, the 1.5B copied the keyword into its program's comments and
    never sorted; "sorted by" is the goal's own wording)."""
    if not isinstance(schema, Mapping):
        return schema, []
    said: list[str] = []
    for order in schema.get(SORTED_BY) or []:
        if isinstance(order, Mapping) and isinstance(order.get("key"), str):
            way = "descending" if order.get("descending") else "ascending"
            said.append(
                f"every list of objects with {_names([order['key']])} is sorted by it, {way}"
            )
    if keys := [k for k in schema.get(HAS_KEYS) or [] if isinstance(k, str)]:
        said.append(f"its objects use the keys {_names(keys)}, spelled so")
    values = schema.get(VALUES_OF)
    for where, key in values.items() if isinstance(values, Mapping) else ():
        said.append(f"{_names([where])} lists {_names([key])} values, not whole objects")
    if codes := [c for c in schema.get(SPELLED) or [] if isinstance(c, str)]:
        said.append(f"these are spelled exactly so: {_names(codes)}")
    ours = (SORTED_BY, HAS_KEYS, VALUES_OF, SPELLED)
    return {k: v for k, v in schema.items() if k not in ours}, said


def _names(values: list[str]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def register() -> None:
    """Register the text kinds; ``agent.checks`` calls this once."""
    register_check("exists", _check_exists, describe='{"kind": "exists"}')
    register_check("non_empty", _check_non_empty, describe='{"kind": "non_empty"}')
    register_check(
        "contains",
        _check_contains,
        validate=_validate_contains,
        describe='{"kind": "contains", "all": ["..."]}',
    )
    register_check(
        "regex",
        _check_regex,
        validate=_validate_regex,
        describe='{"kind": "regex", "pattern": "..."}',
    )
    register_check(
        "json_schema",
        _check_json_schema,
        validate=_validate_json_schema,
        describe='{"kind": "json_schema", "schema": {...}}',
    )
