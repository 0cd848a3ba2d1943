"""Chat models of real providers, built once per (provider, name, endpoint)."""

from __future__ import annotations

import os
import threading

from langchain_core.language_models import BaseChatModel

from agent.errors import ConfigError

__all__ = ["provider_model"]

_OPENAI_CACHE: dict[tuple[str, str | None], BaseChatModel] = {}
_OPENAI_LOCK = threading.Lock()


def provider_model(provider: str, name: str) -> BaseChatModel:
    """The chat model ``name`` of ``provider`` (every provider but ``scripted``)."""
    if provider == "openai":
        return _openai(name)
    msg = f"unknown model provider {provider!r} in {provider}:{name}; supported: openai, scripted"
    raise ConfigError(msg)


def _openai(name: str) -> BaseChatModel:
    key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not key and not base_url:
        msg = (
            f"model openai:{name} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            "OpenAI-compatible server); to try deepreflect without a key run `deepreflect demo`"
        )
        raise ConfigError(msg)
    with _OPENAI_LOCK:
        cache_key = (name, base_url)
        if cache_key not in _OPENAI_CACHE:
            from langchain_openai import ChatOpenAI

            # Retries belong to the graph's RetryPolicy (one bounded place), not the client.
            _OPENAI_CACHE[cache_key] = ChatOpenAI(
                model=name,
                api_key=key or "not-needed",
                base_url=base_url,
                max_retries=0,
                timeout=120,
                stream_usage=True,  # meter streamed runs too (Studio streams messages)
            )
        return _OPENAI_CACHE[cache_key]
