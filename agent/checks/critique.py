"""Grounded, stateless critique: the schema a critic answers in, a parser that fails safe, and
the critic call itself (every issue carries evidence; a malformed critique
is never approval)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent.prompts import render
from agent.vfs.quoting import quote_data

Severity = Literal["blocking", "major", "minor"]
SEVERITY_ORDER: dict[str, int] = {"blocking": 0, "major": 1, "minor": 2}
RUBRIC_ONLY_EVIDENCE = "rubric review only (no executable evidence)"
_EVIDENCE_CHARS = 500  # a CheckReport's evidence is a short quote, not a transcript
CRITIC_EVIDENCE_CHARS = 2_000  # the most of a check's evidence the critic is shown

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
# Where a failure points: a traceback frame, `path.ext:12`, or a bare `line 12`.
_LOCATION = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+)'
    r"|(?P<path>[\w./-]*\w\.[A-Za-z]\w*:\d+)"
    r"|\b(?P<bare>line \d+)\b",
    re.IGNORECASE,
)


class ChatModelLike(Protocol):
    """What a critic or judge needs of a model: ``invoke(messages)``. A chat model, one bound
    to callbacks (``with_config``) and a ``Metered`` all qualify."""

    def invoke(self, input: list[BaseMessage], /) -> Any: ...


class Issue(BaseModel):
    """One problem in a draft, with the quote (tool result or task text) that proves it."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str
    severity: Severity
    location: str | None = None
    evidence: str = ""
    suggestion: str = ""

    @field_validator("severity", mode="before")
    @classmethod
    def _normalise_severity(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("location", mode="before")
    @classmethod
    def _blank_location_is_none(cls, value: object) -> object:
        # "no location" decides rewrite over patch, so "" and "  " must mean the same as null.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("evidence", "suggestion", mode="before")
    @classmethod
    def _null_is_empty(cls, value: object) -> object:
        return "" if value is None else value


class Critique(BaseModel):
    """A critic's structured verdict on one draft.

    `score` must lie in 0..1: an out-of-range score (say 85 on a 0-100 scale) makes the whole
    critique malformed instead of being clamped into a perfect 1.0.
    """

    issues: list[Issue] = Field(default_factory=list)
    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    requirements_checked: list[str] = Field(default_factory=list)


def parse_critique(raw: Critique | Mapping[str, Any] | str | None) -> Critique | None:
    """Validate a critic's answer; anything malformed is None, never an exception."""
    if isinstance(raw, Critique):
        return raw
    try:
        if isinstance(raw, str):
            raw = json.loads(_json_text(raw))
        if isinstance(raw, Mapping):
            return Critique.model_validate(dict(raw))
    except (ValueError, TypeError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None
    return None


def _json_text(text: str) -> str:
    """The JSON object in a reply: in a ``` fence if there is one, else first `{` to last `}`."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    return body[start : end + 1] if 0 <= start < end else body


def ground(critique: Critique) -> Critique:
    """Drop issues without evidence (this removes most hallucinated criticism)."""
    kept = [issue for issue in critique.issues if issue.evidence.strip()]
    return critique.model_copy(update={"issues": kept})


def blocking(critique: Critique) -> list[Issue]:
    """The issues that force another round."""
    return [issue for issue in critique.issues if issue.severity == "blocking"]


def feedback(issues: Iterable[Issue], cap: int | None = 5) -> list[dict[str, Any]]:
    """Issues as plain dicts, blocking first, then major, then minor; at most `cap` (None: all)."""
    ordered = sorted(issues, key=lambda issue: SEVERITY_ORDER[issue.severity])
    return [issue.model_dump() for issue in ordered[:cap]]


def critique_from_check(report: Mapping[str, Any]) -> Critique:
    """Turn a CheckReport into a critique: a failed check is one blocking issue quoting it."""
    kind = report.get("kind", "check")
    passed = bool(report.get("passed"))
    score = float(report.get("score", 1.0 if passed else 0.0))
    checked = [f"check-{kind}"]
    if passed:
        return Critique(score=score, requirements_checked=checked)
    # A failed check must survive `ground`, so it never has blank evidence.
    evidence = str(report.get("evidence") or "").strip() or f"the {kind} check failed (no output)"
    issue = Issue(
        id=f"check-{kind}",
        severity="blocking",
        location=_location(evidence),
        evidence=evidence,
        suggestion=f"change the artifact so that its {kind} check passes",
    )
    return Critique(issues=[issue], score=score, requirements_checked=checked)


def _location(evidence: str) -> str | None:
    """The last place the evidence names (the innermost frame of a traceback), if any."""
    matches = list(_LOCATION.finditer(evidence))
    if not matches:
        return None
    last = matches[-1]
    if last["file"]:
        return f"{last['file']}:{last['line']}"
    return last["path"] or last["bare"]


def merge(a: Critique, b: Critique) -> Critique:
    """Combine two critiques of one draft (a check's and a critic's): all issues, lower score."""
    return Critique(
        issues=[*a.issues, *b.issues],
        score=min(a.score, b.score),
        requirements_checked=list(
            dict.fromkeys([*a.requirements_checked, *b.requirements_checked])
        ),
    )


def critic_messages(
    task: str,
    path: str,
    draft: str,
    evidence: str | Mapping[str, Any],
    rubric: str | Sequence[str],
) -> list[BaseMessage]:
    """The critic's whole input. Stateless by construction: there is no parameter through which
    the generator's reasoning or an earlier critique could reach it."""
    human = render(
        "judge_input",
        task=task,
        path=json.dumps(path, ensure_ascii=False),
        fence=artifact_fence(draft),
        draft=draft,
        evidence=_evidence_text(evidence),
        rubric=_rubric_text(rubric),
    )
    return [SystemMessage(render("judge")), HumanMessage(human)]


def artifact_fence(draft: str) -> str:
    """The tag around the draft in the critic's prompt, named after the draft's own hash:
    a draft cannot contain the tag that closes it, so it cannot go on as evidence or as
    instructions after a forged end of the artifact."""
    return "artifact-" + hashlib.sha256(draft.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _evidence_text(evidence: str | Mapping[str, Any]) -> str:
    """The check's verdict in our words, its evidence (text the artifact influences) as
    quoted data (:func:`agent.vfs.quoting.quote_data`)."""
    if isinstance(evidence, Mapping):
        verdict = "passed" if evidence.get("passed") else "FAILED"
        score = float(evidence.get("score", 0.0))
        kind = evidence.get("kind", "check")
        quoted = quote_data("evidence", evidence.get("evidence", ""), CRITIC_EVIDENCE_CHARS)
        return f"{kind} check {verdict} (score {score:.2f}): {quoted}"
    if not evidence.strip() or evidence == RUBRIC_ONLY_EVIDENCE:
        return evidence.strip() or "(none)"  # our own words
    return quote_data("evidence", evidence, CRITIC_EVIDENCE_CHARS)


def _rubric_text(rubric: str | Sequence[str]) -> str:
    criteria = [rubric] if isinstance(rubric, str) else list(rubric)
    lines = [f"- {c.strip()}" for c in criteria if c and c.strip()]
    return "\n".join(lines) or "- the task itself: does the artifact do everything it asks?"


def run_critic(
    model: ChatModelLike,
    task: str,
    path: str,
    draft: str,
    evidence: str | Mapping[str, Any],
    rubric: str | Sequence[str],
) -> tuple[Critique | None, int]:
    """Ask `model` for a critique: (the parsed critique or None if malformed, tokens used).

    The critique is returned ungrounded; the revise loop grounds it. Model errors propagate so
    the caller can classify them.
    """
    reply = model.invoke(critic_messages(task, path, draft, evidence, rubric))
    usage = getattr(reply, "usage_metadata", None) or {}
    return parse_critique(reply.text), int(usage.get("total_tokens", 0))


def rubric_report(
    judge: ChatModelLike, *, task: str, path: str, content: str, criteria: list[str]
) -> dict[str, Any]:
    """The `rubric` check kind: passes when the judge finds no blocking issue it can support."""
    critique, _tokens = run_critic(judge, task, path, content, RUBRIC_ONLY_EVIDENCE, criteria)
    if critique is None:
        evidence = "malformed critique: the judge's reply is not a valid Critique JSON object"
        return {"kind": "rubric", "passed": False, "score": 0.0, "evidence": evidence}
    blockers = blocking(ground(critique))
    evidence = "; ".join(f"{issue.id}: {issue.evidence}" for issue in blockers)
    return {
        "kind": "rubric",
        "passed": not blockers,
        "score": critique.score,
        "evidence": _clip(evidence) or "no blocking issue",
    }


def _clip(text: str) -> str:
    return text if len(text) <= _EVIDENCE_CHARS else text[: _EVIDENCE_CHARS - 1] + "…"
