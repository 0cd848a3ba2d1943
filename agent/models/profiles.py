"""Model profiles: what a model needs beyond the loop every model gets, as data.

The loop of docs/architecture.md (the planner plans, its checks run as written, the judge
reviews prose, reflection asks its model) is the ``default`` profile, and it is what every
model runs unless a profile says otherwise. A small local model needs help a capable one
does not — a plan made in code from the files the goal names, repairs of the plans it
writes, fresh drafts before revisions, data files printed by a program — and each of those
is a switch here, keyed by the model (``provider:name`` patterns, as deepagents keys its
harness profiles), chosen by ``Context.profile`` (``auto``: by the model's name).

Facts a run learns about a model (whether its revisions help) are not kept here: they live
with the thread (:mod:`agent.controller.habits`), so one thread never changes another's run.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from agent.vocabulary import ProfileChoice

if TYPE_CHECKING:  # the CLI's --help lists the profiles without loading the model stack
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "AUTO",
    "DEFAULT",
    "PROFILES",
    "Profile",
    "ProfileError",
    "model_name",
    "profile_for",
    "profile_names",
]

AUTO = str(ProfileChoice.AUTO)


@dataclass(frozen=True)
class Profile:
    """One model profile: every switch off is the seeds' loop for a capable model."""

    name: str
    description: str
    patterns: tuple[str, ...] = ()
    """``fnmatch`` patterns of model names (lower case) that ``auto`` picks this profile for."""
    plan_in_code: bool = False
    """The first plan is made in code (one step per file the goal names) before the planner
    model is asked; the planner plans what code cannot (no file named, tests, many files)."""
    plan_repairs: bool = False
    """A plan the model wrote is repaired where that is safe (references cut back to a file,
    scratch outputs moved, steps writing one file merged, unneeded steps dropped, a planner
    check that cannot pass left out) before it is validated, instead of sent back."""
    goal_as_asked: bool = False
    """The first draft of a plan made in code whose one step is the whole goal (the goal
    names one file; no human answer told) is asked as the user asked the goal: its words,
    its files, one reply line — no step framing, no check line (revisions keep their
    evidence): the prompt a user asking the model once would write. On the 1.5B, held out:
    9 of 16 goals right with it, 7 without (the plain model 7); tuning 4 of 8, 5 without."""
    fresh_drafts_first: bool = False
    """Once a model's revisions have been flat and never helped (learnt in the thread), its
    loops draw fresh drafts before revising."""
    computed_data: bool = False
    """A ``.json`` / ``.csv`` artifact is printed by a program the model writes, not typed."""
    model_questions: bool = True
    """The planner model's reading that the goal asks the user something first pauses the
    thread before any plan runs (``question_first``). Off, the plan runs, and a value the goal
    leaves open still holds the end (:mod:`agent.plan.open_values`). On the 1.5B, of 24
    goals, the criteria call read a question into three that asked none (a refactor, a
    function, a query: each paused before any work) and into one of the three that did."""
    model_ends: bool = True
    """An ``end`` reflection's model decides (no rule ended the run: some check did not
    execute or parse the artifact against stated criteria) stands. Off, it pauses
    ``unverified`` for a human to accept: the model's judgement is not evidence. On the 1.5B,
    both of its ends over 24 goals were false successes (an order and a dependency the goal
    stated only in words, which no check read); every goal it solved ended by rule."""
    judge_proves: bool = True
    """A rubric this model passed as the judge proves its artifact: an end by rule may rest
    on it (prose no program can check). Off, the judge still reads and revises prose, but a
    run whose prose only the judge passed goes to reflection's model (and, with
    ``model_ends`` off, pauses ``unverified``). On the 1.5B its judge passed a report citing
    no source for a goal asking for two, and the run ended ``success``."""
    unchanged_fails: bool = False
    """A draft that hands back the user's module as the user gave it (the same code), or a
    workspace folder's file as found, fails its check with that as its evidence, so the step
    revises instead of handing in work nobody did (a file a step wrote may stay as it was).
    Off, the check's own verdict stands (and an ``end`` over a user's module still as given
    pauses ``unverified``). On the 1.5B, two of three bug-fix goals returned ``stats.py`` as
    given, passed the checks of what the goal kept, and paused with no second draft."""
    planner_reads: bool = True
    """What this model, as the planner, reads from the goal's words (criteria quoting them,
    verified to occur in the goal) is taken as what the words ask, so an end by rule may rest
    on checks of those criteria and of the goal's literals. Off, the words count as read
    only once a human answered in the thread: before that, a run whose every check passed
    pauses ``unverified`` (accept, or answer with what the files must do). On the 1.5B, its
    criteria call read nothing from 15 of 16 held-out goals, and two ended ``success`` with
    a wrong artifact whose fault the goal stated in words only (an order, an error to raise)."""

    def switches(self) -> dict[str, bool]:
        """The profile's switches by name (what docs and ``--profile`` listings show)."""
        return {
            f.name: bool(getattr(self, f.name))
            for f in fields(self)
            if f.name not in ("name", "description", "patterns")
        }


DEFAULT = Profile(
    name=str(ProfileChoice.DEFAULT),
    description="the whole loop: the planner plans, its checks run as written, the judge "
    "reviews prose, reflection asks its model",
)

SMALL_LOCAL = Profile(
    name=str(ProfileChoice.SMALL_LOCAL),
    description="small local models (about 3B parameters or fewer): plans made in code when the "
    "goal names its files, a one-step goal asked as written, plan repairs, fresh drafts first, "
    "data files printed by a program, no pause on a question the model reads into the goal, "
    "no end on the model's word alone, no end resting on its judge's pass, a draft that leaves "
    "its file as found revised, no end before a human has read the goal's words",
    patterns=(
        "*qwen2.5-coder-0.5b*",
        "*qwen2.5-coder-1.5b*",
        "*qwen2.5-coder-3b*",
        "*qwen2.5-coder:0.5b*",
        "*qwen2.5-coder:1.5b*",
        "*qwen2.5-coder:3b*",
        "*qwen2.5-0.5b*",
        "*qwen2.5-1.5b*",
        "*qwen2.5:0.5b*",
        "*qwen2.5:1.5b*",
        "*llama-3.2-1b*",
        "*llama3.2:1b*",
        "*smollm*",
    ),
    plan_in_code=True,
    plan_repairs=True,
    goal_as_asked=True,
    fresh_drafts_first=True,
    computed_data=True,
    model_questions=False,
    model_ends=False,
    judge_proves=False,
    unchanged_fails=True,
    planner_reads=False,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (DEFAULT, SMALL_LOCAL)}


class ProfileError(ValueError):
    """A profile name that is neither ``auto`` nor a known profile."""


def profile_names() -> list[str]:
    """The values ``Context.profile`` accepts (``agent.vocabulary.ProfileChoice``)."""
    return [str(choice) for choice in ProfileChoice]


def model_name(model: BaseChatModel | str | None) -> str:
    """The name a profile pattern is matched against: ``provider:name`` strings as given,
    a model object's ``model_name`` / ``model`` attribute; lower case."""
    if model is None:
        return ""
    if isinstance(model, str):
        return model.lower()
    name: Any = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    return str(name).lower()


def profile_for(choice: str, model: BaseChatModel | str | None = None) -> Profile:
    """The profile ``choice`` names; ``auto`` picks the first built-in profile one of whose
    patterns matches ``model``'s name, else ``default``."""
    if choice != AUTO:
        try:
            return PROFILES[choice]
        except KeyError:
            msg = f"unknown profile {choice!r}; expected one of {', '.join(profile_names())}"
            raise ProfileError(msg) from None
    name = model_name(model)
    for profile in PROFILES.values():
        if name and any(fnmatch.fnmatchcase(name, p) for p in profile.patterns):
            return profile
    return DEFAULT
