"""Values the goal leaves open, and whether the artifact's values for them come from anywhere.

A goal that writes its JSON file as a template with a placeholder (``"region": <the cloud
region the operations team chose>``, in any language) gives every value but that one. An
artifact that fills it with a value no source holds — not the goal, not the user's files, not
a human's answer — holds the agent's guess, and a check of the template's keys passes it all
the same. On the 1.5B both wordings of the deployment goal ended ``success`` that way, with
``us-east-1`` where the team had chosen ``eu-north-1``. An ``end`` over such a value asks the
human to accept it or give it (:func:`agent.reflection.rules.held_to_evidence`); the answer
joins the goal (:mod:`agent.graph.turn`), so the next draft's value is sourced.

The placeholder is read from the goal's literal (``"key": <...>``), which needs no language;
a value counts as sourced when its text occurs in a source, compared as
:mod:`agent.plan.criteria` compares quotes (NFKC, case-folded, runs of white space as one).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

from agent.plan.criteria import MAX_SCANNED_CHARS, folded
from agent.plan.needs import named_files
from agent.vfs.origin import given, is_user_file

__all__ = ["open_keys", "unsourced_values"]

_OPEN = re.compile(r"[\"']([A-Za-z_][\w.-]{0,80})[\"']\s*:\s*<([^<>\n]{1,300})>")
MAX_LEAVES = 50  # values of one key compared, at most (a list of items' values)
MAX_NUMBERS = 5_000  # numbers of the sources a number is compared with, at most
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


def open_keys(goal: str) -> dict[str, str]:
    """Each key the goal's JSON literal leaves open, with its placeholder's words."""
    return {m.group(1): m.group(2).strip() for m in _OPEN.finditer(goal[:MAX_SCANNED_CHARS])}


def unsourced_values(
    goal: str, files: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[tuple[str, str, str]]]:
    """Per JSON file the goal asks for (its one JSON file, as the literal's keys are
    assigned: :func:`agent.plan.criteria.literal_criteria`): ``(key, value, placeholder)``
    for each open key whose value in the artifact no source gives. A file that does not
    parse, or lacks the key, is left to its checks."""
    opened = open_keys(goal)
    jsons = [f for f in named_files(goal) if f.lower().endswith(".json")]
    if not opened or len(jsons) != 1 or jsons[0] not in files:
        return {}
    path = jsons[0]
    try:
        doc = json.loads(str(files[path].get("content", "")))
    except (ValueError, RecursionError):
        return {}
    sources = folded(_OPEN.sub(lambda m: m.group(1), goal))
    sources += "\n" + "\n".join(
        folded(given(entry)) for entry in files.values() if is_user_file(entry)
    )
    found = []
    for key, placeholder in opened.items():
        for value in islice(_values_of(doc, key), MAX_LEAVES):
            if not _sourced(value, sources):
                found.append((key, json.dumps(value, ensure_ascii=False)[:120], placeholder))
    return {path: found} if found else {}


def _values_of(doc: Any, key: str) -> Iterator[Any]:
    """The values ``doc`` holds under ``key``: its own, else its items' (any depth)."""
    if isinstance(doc, Mapping):
        if key in doc:
            yield doc[key]
            return
        for value in doc.values():
            yield from _values_of(value, key)
    elif isinstance(doc, list):
        for item in doc:
            yield from _values_of(item, key)


def _sourced(value: Any, sources: str) -> bool:
    """Whether every leaf of ``value`` occurs in ``sources`` (already folded): a number as
    a number the sources write (``2.50`` gives ``2.5``), anything else as whole words."""
    if isinstance(value, Mapping):
        return all(_sourced(v, sources) for v in value.values())
    if isinstance(value, list):
        return all(_sourced(v, sources) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and any(
            float(n) == value for n in _NUMBER.findall(sources)[:MAX_NUMBERS]
        )
    text = json.dumps(value) if value is None or isinstance(value, bool) else folded(str(value))
    pattern = rf"(?<![\w.-]){re.escape(text.strip())}(?![\w-])"
    return bool(text.strip()) and re.search(pattern, sources) is not None
