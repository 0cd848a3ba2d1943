"""The words a run is reported in, each defined once.

Every status, stop reason, decision, workload and mode the code writes or compares is a
member of one ``StrEnum`` here. Their string values are the contract (state, streams, the
CLI's JSON, the docs' tables), and a ``StrEnum`` member *is* its string, so a caller that
compares with ``"success"`` keeps working. The docs' tables are tested against these
classes (``tests/unit/test_vocabulary.py``).

What goes into state or a journal is the member's plain string (``.value``, or ``str(x)``):
LangGraph's serializer keeps an enum member as an object of this module, which a checkpoint's
other readers refuse or warn about (``tests/integration/test_plain_state.py``). Compare and
pass members freely; store strings.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Where a thread stands (the ``status`` state key and ``Result.status``).

    ``deepreflect show`` and ``threads`` print a ``running`` thread that no process holds as
    ``interrupted`` (``agent.store.threads``): a way of showing ``running``, never stored.
    """

    RUNNING = "running"
    SUCCESS = "success"
    AWAITING_INPUT = "awaiting_input"
    BUDGET_EXHAUSTED = "budget_exhausted"
    FAILED = "failed"


WAITING: tuple[Status, ...] = (Status.AWAITING_INPUT, Status.BUDGET_EXHAUSTED)
"""The statuses in which a thread waits for a human's answer."""


class StopReason(StrEnum):
    """Why the last run of a thread stopped (the ``stop_reason`` state key), grouped by the
    status it comes with (docs/how-it-stops.md's table)."""

    # success
    END = "end"
    ACCEPTED_BY_HUMAN = "accepted_by_human"
    # awaiting_input: an escalation, or tool calls waiting for a human's approval
    DEPTH_CAP = "depth_cap"
    REPEATED_DEFECT = "repeated_defect"
    SUBAGENT_FAILED_TWICE = "subagent_failed_twice"
    MODEL_ESCALATED = "model_escalated"
    INVALID_PLAN = "invalid_plan"
    QUESTION_FIRST = "question_first"
    """The goal tells the agent to ask the user before the work: paused before any plan."""
    UNKNOWN_ERROR = "unknown_error"
    MODEL_UNAVAILABLE = "model_unavailable"
    """The planner's or reflection's model kept failing with transient errors (a provider
    down or rate-limited) through every retry: the thread waits for a human to retry."""
    AWAITING_APPROVAL = "awaiting_approval"
    SUBAGENT_ASKED = "subagent_asked"
    """A subagent's own graph (``{"graph": ...}``) or one of its tools paused on
    ``interrupt()``: its value is the question, and the answer resumes it."""
    UNVERIFIED = "unverified"
    """Every artifact passed its check, but no check ran some function the checks say is
    defined (the goal gave no example of it): a human accepts the work or gives examples."""
    # budget_exhausted
    TOKEN_BUDGET = "token_budget"
    TIME_BUDGET = "time_budget"
    STEP_BUDGET = "step_budget"
    # failed: a permanent error (the error classes of agent.errors) or a human's stop
    INVALID_INPUT = "invalid_input"
    PERMISSION_DENIED = "permission_denied"
    POLICY_REJECTED = "policy_rejected"
    STOPPED_BY_HUMAN = "stopped_by_human"


class Decision(StrEnum):
    """What reflection decides after a round (``decisions[*].decision``)."""

    CONTINUE = "continue"
    REPLAN = "replan"
    END = "end"
    ESCALATE = "escalate"
    FAIL = "fail"


class LoopStop(StrEnum):
    """Why a subagent's revise loop stopped (``LoopResult.stop_reason``)."""

    PASS = "pass"
    STALLED = "stalled"
    OSCILLATING = "oscillating"
    BUDGET = "budget"
    TIMEOUT = "timeout"
    CRITIC_ERROR = "critic_error"
    GENERATOR_ERROR = "generator_error"


class ApprovalStatus(StrEnum):
    """Where a request for a human's approval of a tool call stands (``approvals[*].status``)."""

    PENDING = "pending"
    DECIDED = "decided"


class CallStatus(StrEnum):
    """A tool call's record in the journal of calls that happen once (``agent.store.journal``)."""

    STARTED = "started"
    DONE = "done"
    """Settled with a result, which is reused from then on."""
    FAILED = "failed"
    """Settled with a definite error: the call may be made again."""


class Workload(StrEnum):
    """The kind of goal, which sets the reflection depth cap (``Context.workload``)."""

    QA = "qa"
    RESEARCH = "research"
    REPORT = "report"
    CODING = "coding"
    BUGHUNT = "bughunt"


class FileStatus(StrEnum):
    """A file entry's ``status``."""

    ACTIVE = "active"
    DONE = "done"
    FAILED = "failed"


class Planning(StrEnum):
    """How far ahead the planner commits (``Context.planning``)."""

    UPFRONT = "upfront"
    """Every step at once."""
    ROLLING = "rolling"
    """Only the steps that can run now, then the next segment once reflection has seen them."""


class AnswerAction(StrEnum):
    """What a human's answer to an escalation does (``{"action": ...}``)."""

    ANSWER = "answer"
    ACCEPT = "accept"
    STOP = "stop"
    CONTINUE = "continue"


class StructuredOutput(StrEnum):
    """How a role's JSON answers are asked for: ``auto``, or the method of one request."""

    AUTO = "auto"
    """Learn per model which method works (``agent.models.structured_methods``)."""
    FUNCTION_CALLING = "function_calling"
    JSON_SCHEMA = "json_schema"
    JSON_MODE = "json_mode"
    TEXT = "text"
    """No constraint on the request: the JSON is read from the reply's text."""


STRUCTURED_OUTPUT_SETTINGS: tuple[str, ...] = tuple(
    m.value for m in StructuredOutput if m is not StructuredOutput.TEXT
)
"""What ``Context.structured_output`` accepts (``--structured-output``'s choices): ``text``
is only ``auto``'s last resort."""


class ToolCalling(StrEnum):
    """Whether a subagent's model gets its tools as schemas (``Context.tool_calling``)."""

    AUTO = "auto"
    NATIVE = "native"
    TEXT = "text"


class ProfileChoice(StrEnum):
    """The model profiles ``Context.profile`` names (:mod:`agent.models.profiles`)."""

    AUTO = "auto"
    """By the model's name: the first built-in profile whose pattern matches, else default."""
    DEFAULT = "default"
    """The whole loop, nothing added."""
    SMALL_LOCAL = "small-local"
    """Plans in code, plan repairs, fresh drafts first, data files printed by a program."""
