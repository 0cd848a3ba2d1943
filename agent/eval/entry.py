"""The entry point the CLI uses: check the options, load the dataset and the models, run one
evaluation and return its report as plain data."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from agent.errors import ConfigError
from agent.eval.common import Progress
from agent.eval.datasets import load_dataset
from agent.eval.reflection import Evidence, run_reflection_eval
from agent.eval.seeded import SEEDED_TIMEOUT_S, run_seeded_eval
from agent.limits import FRESH_DRAFTS, MAX_REVISIONS
from agent.models.factory import JUDGE, load_model


def evaluate(
    dataset: str = "humaneval",
    *,
    model: str | BaseChatModel | None = None,
    critic: str | BaseChatModel | None = None,
    seeded_errors: bool = False,
    rounds: int = MAX_REVISIONS,
    fresh_drafts: int = FRESH_DRAFTS,
    limit: int | None = None,
    evidence: Evidence = "check",
    workers: int | None = None,
    seed: int = 0,
    timeout_s: float = SEEDED_TIMEOUT_S,
    temperature: float | None = 0.0,
    request_timeout_s: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load the dataset and models (ConfigError when unusable), then run one evaluation.

    Seeded errors need no model; ``critic`` (else ``model``) adds the model critic. The
    reflection comparison needs ``model``; ``critic`` adds a model critic to the loop.
    ``temperature``: what models built from a ``provider:name`` sample with (0, greedy, as
    published pass@1 figures are measured; None: the provider's default, which for a local
    server is often 0.8). ``request_timeout_s``: seconds one model request may take (None:
    the provider default, 120 s; a loaded CPU server needs more).
    """
    _check_options(
        model,
        seeded_errors=seeded_errors,
        rounds=rounds,
        timeout_s=timeout_s,
        request_timeout_s=request_timeout_s,
        fresh_drafts=fresh_drafts,
    )
    sampling = {"temperature": temperature, "timeout": request_timeout_s}
    generator = _sampling(model, "coder", **sampling) if model is not None else None
    critic_spec = critic if critic is not None else (model if seeded_errors else None)
    judge = _sampling(critic_spec, JUDGE, **sampling) if critic_spec is not None else None
    tasks = load_dataset(dataset, limit=limit)
    labels = {"dataset": dataset, "model": _name(model), "critic": _name(critic_spec)}
    if seeded_errors:
        return run_seeded_eval(
            tasks,
            critic=judge,
            seed=seed,
            timeout_s=timeout_s,
            workers=workers,
            progress=progress,
            labels=labels,
        )
    assert generator is not None  # _check_options refused no model without seeded errors
    return run_reflection_eval(
        tasks,
        generator,
        critic=judge,
        max_revisions=rounds,
        fresh_drafts=fresh_drafts,
        evidence=evidence,
        workers=workers or 4,
        progress=progress,
        labels=labels,
    )


def _sampling(
    spec: str | BaseChatModel, role: str, *, temperature: float | None, timeout: float | None
) -> BaseChatModel:
    """The model of ``spec``; one built here from a string samples at ``temperature`` and
    waits ``timeout`` seconds per request (a model object passed in is used as it is)."""
    model = load_model(spec, role, timeout=timeout)
    if (
        isinstance(spec, str)
        and temperature is not None
        and "temperature" in type(model).model_fields
    ):
        return model.model_copy(update={"temperature": temperature})
    return model


def _check_options(
    model: str | BaseChatModel | None,
    *,
    seeded_errors: bool,
    rounds: int,
    timeout_s: float,
    request_timeout_s: float | None = None,
    fresh_drafts: int = 0,
) -> None:
    """Refuse what cannot run before a model or a dataset is loaded."""
    for flag, count in (("--rounds", rounds), ("--fresh-drafts", fresh_drafts)):
        if count < 0:
            msg = f"{flag} must be 0 or more, not {count}"
            raise ConfigError(msg)
    if timeout_s <= 0:
        msg = f"--timeout must be positive, not {timeout_s}"
        raise ConfigError(msg)
    if request_timeout_s is not None and request_timeout_s <= 0:
        msg = f"--request-timeout must be positive, not {request_timeout_s}"
        raise ConfigError(msg)
    if not seeded_errors and model is None:
        msg = "eval needs --model provider:name (e.g. openai:gpt-4.1-mini), or --seeded-errors"
        raise ConfigError(msg)


def _name(spec: str | BaseChatModel | None) -> str | None:
    """How a report names a model: its spec string, else the model's own name."""
    if spec is None or isinstance(spec, str):
        return spec
    return getattr(spec, "model_name", None) or getattr(spec, "name", None) or type(spec).__name__
