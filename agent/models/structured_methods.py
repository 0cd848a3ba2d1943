"""Which structured-output method works with each model, learnt as calls go
(``structured_output="auto"``): the order to try them in, and what each attempt taught."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.models.refusals import refusal_of
from agent.vocabulary import StructuredOutput

__all__ = [
    "AUTO_METHODS",
    "LEARNT",
    "TOOL_CHOICES",
    "TOOL_CHOICE_OBJECT",
    "TOOL_CHOICE_REQUIRED",
    "StructuredMethods",
    "learnt_event",
    "methods_from",
]

AUTO_METHODS: tuple[StructuredOutput, ...] = (
    StructuredOutput.FUNCTION_CALLING,
    StructuredOutput.JSON_SCHEMA,
    StructuredOutput.TEXT,
)
"""The methods ``auto`` tries, in the order it starts with: ``text`` needs nothing of the
server, so it comes last and is never dropped."""

# ``tool_choice`` shapes, most forcing first: an object naming the function, the string
# "required", and none at all (the server's default, "auto").
TOOL_CHOICE_OBJECT = "object"
TOOL_CHOICE_REQUIRED = "required"
TOOL_CHOICES: tuple[str, ...] = (TOOL_CHOICE_OBJECT, TOOL_CHOICE_REQUIRED)


@dataclass
class _ModelMemory:
    order: list[str]
    refusals: dict[str, int] = field(default_factory=dict)  # method -> refused requests
    misses: dict[str, int] = field(default_factory=dict)  # method -> failures in a row
    dropped: set[str] = field(default_factory=set)
    tool_choice_refusals: dict[str, int] = field(default_factory=dict)
    last_success: str | None = None


class StructuredMethods:
    """Which structured-output method to use with each model, learnt as calls go
    (``structured_output="auto"``). Thread-safe; one instance belongs to one node's calls,
    restored from its thread's trajectory (:func:`methods_from`), never to the process.

    For a model key (``provider:name@endpoint``, any string) :meth:`order` gives the
    methods to try, best first: tool calling, then ``json_schema``, then text JSON. The
    caller tries them in turn and reports each outcome:

    - :meth:`record_success` puts the method first for that model from then on;
    - :meth:`record_failure` with the reason (the error text, or what was wrong with the
      reply). A refusal of the request shape (HTTP 400 about ``tools`` or
      ``response_format``, see :func:`~agent.models.refusals.refusal_of`) counted
      ``refusals_to_drop`` times drops the method for that model. Any other failure (no
      tool call, invalid JSON) ``misses_to_demote`` times in a row moves the method to the
      back. ``text`` needs nothing of the server and is never dropped.
    - A refusal of ``tool_choice`` counts against the shape that was sent, not the method:
      :meth:`tool_choice` never again returns a shape refused ``refusals_to_drop`` times
      ("object", then "required", then None: send no ``tool_choice``).
    """

    def __init__(
        self,
        methods: Sequence[str] = AUTO_METHODS,
        *,
        refusals_to_drop: int = 2,
        misses_to_demote: int = 2,
    ) -> None:
        unknown = [m for m in methods if m not in AUTO_METHODS]
        if unknown or not methods:
            known = tuple(map(str, AUTO_METHODS))
            msg = f"unknown structured-output methods {unknown}; expected some of {known}"
            raise ValueError(msg)
        self._methods = [str(m) for m in dict.fromkeys(methods)]  # plain strings in snapshots
        self._refusals_to_drop = max(1, refusals_to_drop)
        self._misses_to_demote = max(1, misses_to_demote)
        self._models: dict[str, _ModelMemory] = {}
        self._lock = threading.Lock()

    def _memory(self, model_key: str, first: Sequence[str] = ()) -> _ModelMemory:
        key = str(model_key)
        memory = self._models.get(key)
        if memory is None:
            lead = [m for m in first if m in self._methods]
            order = list(dict.fromkeys([*lead, *self._methods]))
            memory = self._models[key] = _ModelMemory(order=order)
        return memory

    def order(self, model_key: str, first: Sequence[str] = ()) -> list[str]:
        """The methods to try for ``model_key``, best first (never empty when ``text`` is
        among the methods). ``first``: the methods to start with for a model not seen yet
        (``json_schema`` where the server constrains decoding); what was learnt about a
        model seen before wins."""
        with self._lock:
            memory = self._memory(model_key, first)
            return [m for m in memory.order if m not in memory.dropped]

    def preferred(self, model_key: str) -> str:
        """The method to try first."""
        order = self.order(model_key)
        return order[0] if order else StructuredOutput.TEXT

    def record_success(self, model_key: str, method: str) -> None:
        """``method`` gave a valid answer: it goes first for this model."""
        self._check(method)
        with self._lock:
            memory = self._memory(model_key)
            memory.misses[method] = 0
            memory.dropped.discard(method)
            memory.order = [method, *(m for m in memory.order if m != method)]
            memory.last_success = method

    def record_failure(
        self, model_key: str, method: str, reason: str, *, tool_choice: str | None = None
    ) -> str:
        """``method`` failed for ``reason``; ``tool_choice`` is the shape that request sent
        (see :data:`TOOL_CHOICES`), if any. Returns what was concluded: ``"tool_choice"``
        (the refusal counted against the shape), ``"refused"`` (against the method),
        ``"dropped"`` (the method will not be tried again), ``"demoted"`` or ``"miss"``."""
        self._check(method)
        refusal = refusal_of(reason)
        with self._lock:
            memory = self._memory(model_key)
            if refusal == "tool_choice" and tool_choice in TOOL_CHOICES:
                counts = memory.tool_choice_refusals
                counts[tool_choice] = counts.get(tool_choice, 0) + 1
                return "tool_choice"
            if refusal is not None and method != StructuredOutput.TEXT:
                memory.refusals[method] = memory.refusals.get(method, 0) + 1
                if memory.refusals[method] >= self._refusals_to_drop:
                    memory.dropped.add(method)
                    return "dropped"
                return "refused"
            memory.misses[method] = memory.misses.get(method, 0) + 1
            if memory.misses[method] >= self._misses_to_demote and len(memory.order) > 1:
                memory.misses[method] = 0
                memory.order.remove(method)
                memory.order.append(method)
                if memory.last_success == method:
                    memory.last_success = None
                return "demoted"
            return "miss"

    def tool_choice(self, model_key: str, wanted: str | None = TOOL_CHOICE_OBJECT) -> str | None:
        """The ``tool_choice`` shape to send for a forced tool call: ``wanted`` unless the
        server refused it ``refusals_to_drop`` times, then the next less forcing one;
        None when every shape was refused (send no ``tool_choice``)."""
        if wanted is None:
            return None
        if wanted not in TOOL_CHOICES:
            msg = f"unknown tool_choice shape {wanted!r}; expected one of {TOOL_CHOICES}"
            raise ValueError(msg)
        with self._lock:
            counts = self._memory(model_key).tool_choice_refusals
            for shape in TOOL_CHOICES[TOOL_CHOICES.index(wanted) :]:
                if counts.get(shape, 0) < self._refusals_to_drop:
                    return shape
            return None

    def snapshot(self, model_key: str) -> dict[str, Any]:
        """What is remembered about ``model_key``, for logs and the trajectory."""
        with self._lock:
            memory = self._memory(model_key)
            # plain strings: a checkpoint holding an enum needs its module allowed to load
            last = memory.last_success
            return {
                "order": [str(m) for m in memory.order if m not in memory.dropped],
                "dropped": sorted(str(m) for m in memory.dropped),
                "refusals": {str(k): v for k, v in memory.refusals.items()},
                "tool_choice_refusals": {str(k): v for k, v in memory.tool_choice_refusals.items()},
                "last_success": None if last is None else str(last),
            }

    def restore(self, model_key: str, snapshot: Mapping[str, Any]) -> None:
        """Remember about ``model_key`` what :meth:`snapshot` said (a thread's record of
        what its calls learnt); a method not known, or a malformed value, is left out."""
        order = [m for m in _strings(snapshot.get("order")) if m in self._methods]
        dropped = {m for m in _strings(snapshot.get("dropped")) if m in self._methods}
        order = list(dict.fromkeys([*order, *(m for m in self._methods if m not in order)]))
        last = snapshot.get("last_success")
        with self._lock:
            self._models[str(model_key)] = _ModelMemory(
                order=order,
                refusals=_counts(snapshot.get("refusals"), self._methods),
                dropped=dropped - {StructuredOutput.TEXT},
                tool_choice_refusals=_counts(snapshot.get("tool_choice_refusals"), TOOL_CHOICES),
                last_success=last if last in self._methods else None,
            )

    def forget(self, model_key: str | None = None) -> None:
        """Forget one model (or all): a server restarted with other settings."""
        with self._lock:
            if model_key is None:
                self._models.clear()
            else:
                self._models.pop(str(model_key), None)

    def _check(self, method: str) -> None:
        if method not in self._methods:
            msg = f"unknown structured-output method {method!r}; expected one of {self._methods}"
            raise ValueError(msg)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _counts(value: Any, known: Sequence[str]) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        k: v
        for k, v in value.items()
        if k in known and isinstance(v, int) and not isinstance(v, bool) and v > 0
    }


LEARNT = "structured_methods"
"""The ``action`` of a trajectory event recording what a node's structured calls learnt
about a model: ``{"action": LEARNT, "model": key, "learnt": snapshot}``."""


def learnt_event(model_key: str, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The trajectory event that keeps what was learnt about ``model_key`` with the thread."""
    return {"action": LEARNT, "model": str(model_key), "learnt": dict(snapshot)}


def methods_from(trajectory: Iterable[Mapping[str, Any]] | None) -> StructuredMethods:
    """A memory holding what a thread's trajectory last recorded about each model (the
    latest event per model wins): the facts live in the thread's checkpoints, so one
    thread never changes how another asks its model."""
    methods = StructuredMethods()
    latest: dict[str, Mapping[str, Any]] = {}
    for event in trajectory or ():
        if isinstance(event, Mapping) and event.get("action") == LEARNT:
            learnt = event.get("learnt")
            if isinstance(learnt, Mapping) and isinstance(event.get("model"), str):
                latest[event["model"]] = learnt
    for key, snapshot in latest.items():
        methods.restore(key, snapshot)
    return methods
