"""Chat models of real providers, built once per (provider, name, endpoint settings).

Every ``provider:name`` but ``scripted`` goes to LangChain's ``init_chat_model``, so any
provider it knows works (anthropic, google_genai, google_vertexai, ollama, bedrock_converse,
azure_openai, openai, groq, mistralai, ... and those it learns later). What deepreflect adds:

- one client per (provider, name, endpoint settings, timeout), built under a lock;
- the client's own retries off (retries belong to the graph's ``RetryPolicy``, one bounded
  place), a request timeout, and usage in streamed answers where the client offers each;
- configuration errors a person can act on: a missing package names the extra to install,
  a missing key names its environment variable, an unknown provider lists the known ones.

``OPENAI_BASE_URL`` points ``openai:`` at any OpenAI-compatible server; Anthropic's client
reads ``ANTHROPIC_API_URL``/``ANTHROPIC_BASE_URL`` and Ollama's ``OLLAMA_HOST``.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import threading
import typing
from collections.abc import Mapping
from typing import Any, cast

from langchain_core.language_models import BaseChatModel

from agent.errors import ConfigError
from agent.vocabulary import StructuredOutput

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EXTRAS",
    "constrained_decoding",
    "known_providers",
    "provider_model",
    "structured_method_for",
]

DEFAULT_TIMEOUT_S = 120.0
_CLIENT_METHODS = (
    StructuredOutput.FUNCTION_CALLING,
    StructuredOutput.JSON_SCHEMA,
    StructuredOutput.JSON_MODE,
    "prompt_prefill",  # Anthropic's; never asked for here
)
"""The ``with_structured_output`` methods LangChain's clients may declare."""

# The deepreflect extra that installs each integration package (pyproject.toml); a package
# without one is named as it is published on PyPI.
EXTRAS = {
    "langchain_anthropic": "anthropic",
    "langchain_google_genai": "google",
    "langchain_google_vertexai": "vertexai",
    "langchain_ollama": "ollama",
    "langchain_aws": "aws",
    "langchain_groq": "groq",
    "langchain_mistralai": "mistralai",
}
# The key a provider's client needs and does not ask for when it is built (it would fail on
# the first request with an unclear error instead), unless one of the base-URL variables
# points it at a server of one's own. Clients that check their key when built (openai's,
# google_genai's, groq's, azure_openai's) say so themselves, and their error is passed on.
_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "anthropic": ("ANTHROPIC_API_KEY", ("ANTHROPIC_API_URL", "ANTHROPIC_BASE_URL")),
    "mistralai": ("MISTRAL_API_KEY", ()),
}
# The environment variables that say where and as whom a provider's client connects: a
# change of any makes a new client. By default the provider's first word, upper-cased.
_ENV_PREFIXES = {
    "azure_openai": ("AZURE_OPENAI_", "OPENAI_API_VERSION"),
    "bedrock": ("AWS_", "BEDROCK_"),
    "google": ("GOOGLE_", "GEMINI_"),
    "mistralai": ("MISTRAL_",),
    "anthropic": ("ANTHROPIC_",),
}
# Clients whose ``max_retries`` counts attempts, the first included: 1 is "no retry", and
# google-genai reads 0 as "the SDK's default".
_ATTEMPTS_MODULES = ("langchain_google_genai", "langchain_aws")

_CACHE: dict[tuple[Any, ...], BaseChatModel] = {}
_LOCK = threading.Lock()


def provider_model(
    provider: str, name: str, *, timeout: float | None = None, max_tokens: int | None = None
) -> BaseChatModel:
    """The chat model ``name`` of ``provider`` (every provider but ``scripted``).

    ``timeout`` is the request timeout in seconds (None: ``DEFAULT_TIMEOUT_S``);
    ``max_tokens`` the most tokens one answer may have, under the name the client takes it
    by (``max_tokens``, ``max_output_tokens``, Ollama's ``num_predict``; None: the client's
    default)."""
    provider = provider.strip().replace("-", "_").lower()  # as init_chat_model reads it
    seconds = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
    spec = f"{provider}:{name}"
    if provider == "openai":
        _check_openai_key(name)
    init_chat_model = _init_chat_model(provider, spec)
    cls = _model_class(provider, spec)
    _check_key(provider, spec)
    cache_key = (provider, name, seconds, max_tokens, _endpoint(provider))
    with _LOCK:
        cached = _CACHE.get(cache_key)
        if cached is None:
            built = _build(init_chat_model, provider, name, cls, seconds, max_tokens)
            cached = _CACHE[cache_key] = built
        return cached


def _build(
    init_chat_model: Any,
    provider: str,
    name: str,
    cls: type | None,
    timeout: float,
    max_tokens: int | None = None,
) -> BaseChatModel:
    """One client. A provider that init_chat_model builds without naming its class in its
    registry is built plainly first, to learn its class and so the settings it takes."""
    spec = f"{provider}:{name}"
    endpoint = _endpoint_kwargs(provider)
    try:
        if cls is None:
            plain = init_chat_model(name, model_provider=provider, **endpoint)
            kwargs = _client_kwargs(type(plain), timeout, max_tokens)
            if not kwargs:
                return cast(BaseChatModel, plain)
            return cast(
                BaseChatModel, init_chat_model(name, model_provider=provider, **endpoint, **kwargs)
            )
        kwargs = _client_kwargs(cls, timeout, max_tokens) | endpoint
        return cast(BaseChatModel, init_chat_model(name, model_provider=provider, **kwargs))
    except ImportError as exc:
        raise _missing_package(provider, spec, None) from exc
    except ValueError as exc:
        if str(exc).startswith("Unsupported"):  # init_chat_model's unknown provider
            raise _unknown(provider, spec) from exc
        raise ConfigError(f"model {spec} could not be set up: {_first_line(exc)}") from exc
    except Exception as exc:  # the client refused its settings: credentials, region, ...
        raise ConfigError(f"model {spec} could not be set up: {_first_line(exc)}") from exc


def known_providers() -> list[str]:
    """Providers ``init_chat_model`` of the installed ``langchain`` knows by name."""
    try:
        from langchain.chat_models import base
    except ImportError:
        return ["openai"]
    registry = getattr(base, "_BUILTIN_PROVIDERS", None)
    return sorted(registry) if isinstance(registry, Mapping) else []


def structured_method_for(model: BaseChatModel, requested: str) -> str:
    """The ``with_structured_output`` method to use with ``model`` for ``requested``.

    ``requested`` when the model's class accepts it; otherwise the nearest it does:
    ``json_mode`` becomes ``json_schema`` (Anthropic's and Bedrock's clients have no JSON
    mode; Anthropic's warns and Bedrock's silently calls a function), anything else
    ``function_calling``. A class that does not declare its methods gets ``requested``."""
    accepted = _structured_methods(type(model))
    if not accepted or requested in accepted:
        return requested
    if requested == StructuredOutput.JSON_MODE and StructuredOutput.JSON_SCHEMA in accepted:
        return StructuredOutput.JSON_SCHEMA
    if StructuredOutput.FUNCTION_CALLING in accepted:
        return StructuredOutput.FUNCTION_CALLING
    return requested


# Hosts whose OpenAI-compatible API is the vendor's own, where tool calling is the reliable
# way to a structured answer; any other base URL is a server of one's own (llama.cpp, vLLM,
# LM Studio, Ollama's /v1) that enforces a response_format schema while decoding.
_HOSTED_OPENAI = ("api.openai.com", "openai.azure.com")


def constrained_decoding(model: BaseChatModel) -> bool:
    """Whether ``model``'s server constrains decoding to a JSON schema, so a structured
    answer asked that way cannot come back as prose: Ollama (``format``), and an
    OpenAI-compatible server of one's own (``response_format`` json_schema, which llama.cpp
    and vLLM turn into a grammar). ``structured_output="auto"`` then tries ``json_schema``
    first: a small local model asked for a tool call often answers in prose instead."""
    name = type(model).__name__
    if name == "ChatOllama":
        return True
    if name != "ChatOpenAI":
        return False
    base = getattr(model, "openai_api_base", None) or os.environ.get("OPENAI_BASE_URL") or ""
    return bool(base) and not any(host in base for host in _HOSTED_OPENAI)


# ---------------------------------------------------------------------------- internals


def _first_line(exc: BaseException) -> str:
    """What went wrong, shortly: a pydantic error's messages (its first line only counts
    them), else the first line of the text."""
    text = str(exc).strip()
    errors = getattr(exc, "errors", None)
    if isinstance(exc, ValueError) and callable(errors):
        try:
            text = "; ".join(str(e.get("msg", "")) for e in errors()) or text
        except Exception:  # not pydantic's errors(): keep the text
            pass
    return (text.splitlines() or [type(exc).__name__])[0][:400]


def _check_openai_key(name: str) -> None:
    if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
        msg = (
            f"model openai:{name} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            "OpenAI-compatible server); to try deepreflect without a key run `deepreflect demo`"
        )
        raise ConfigError(msg)


def _check_key(provider: str, spec: str) -> None:
    if provider not in _KEYS:
        return
    key, base_urls = _KEYS[provider]
    if os.environ.get(key) or any(os.environ.get(url) for url in base_urls):
        return
    where = f" (or {' or '.join(base_urls)} for a server of your own)" if base_urls else ""
    raise ConfigError(f"model {spec} needs {key}{where}")


def _init_chat_model(provider: str, spec: str) -> Any:
    """LangChain's ``init_chat_model`` (``langchain`` is a dependency of deepreflect)."""
    from langchain.chat_models import init_chat_model

    return init_chat_model


def _registry_entry(provider: str) -> tuple[str, str] | None:
    """(module, class name) of ``provider`` in init_chat_model's registry, if it shows one."""
    from langchain.chat_models import base

    registry = getattr(base, "_BUILTIN_PROVIDERS", None)
    if not isinstance(registry, Mapping) or provider not in registry:
        return None  # init_chat_model decides (and names an unknown provider)
    entry = registry[provider]
    return str(entry[0]), str(entry[1])


def _model_class(provider: str, spec: str) -> type[BaseChatModel] | None:
    """The chat-model class ``provider`` is built with, imported (a missing package is a
    ConfigError naming its extra); None when the registry does not say."""
    entry = _registry_entry(provider)
    if entry is None:
        return None
    module_name, class_name = entry
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise _missing_package(provider, spec, module_name) from exc
    cls = getattr(module, class_name, None)
    return cls if isinstance(cls, type) else None


def _missing_package(provider: str, spec: str, module: str | None) -> ConfigError:
    """``module`` (None: the provider's integration package) is not installed."""
    root = (module or "").split(".", 1)[0]
    if root in ("", "langchain"):
        root = _package_of(provider) or f"langchain_{provider}"  # langchain's own naming
    extra = EXTRAS.get(root)
    if extra:
        how = f'pip install "deepreflect[{extra}]"'
    else:
        how = f"pip install {root.replace('_', '-')}"
    return ConfigError(f"model {spec} needs the {provider} integration: {how}")


def _package_of(provider: str) -> str | None:
    from langchain.chat_models import base

    registry = getattr(base, "_BUILTIN_PROVIDERS", None)
    entry = registry.get(provider) if isinstance(registry, Mapping) else None
    return str(entry[0]).split(".", 1)[0] if entry else None


def _unknown(provider: str, spec: str) -> ConfigError:
    known = ", ".join(["scripted", *known_providers()])
    return ConfigError(f"unknown model provider {provider!r} in {spec}; known: {known}")


def _endpoint(provider: str) -> str:
    """A digest of the environment that says where and as whom ``provider`` connects."""
    first = provider.split("_", 1)[0]
    prefixes = _ENV_PREFIXES.get(provider) or _ENV_PREFIXES.get(first) or (f"{first.upper()}_",)
    if provider in ("openai", "azure_openai"):
        prefixes = (*prefixes, "OPENAI_")
    found = sorted((k, v) for k, v in os.environ.items() if k.startswith(prefixes))
    return hashlib.sha256(repr(found).encode()).hexdigest()


def _fields(cls: type | None) -> set[str]:
    """The names a pydantic model class accepts: its fields and their aliases."""
    names: set[str] = set()
    for field_name, field in (getattr(cls, "model_fields", None) or {}).items():
        names.add(field_name)
        if isinstance(field.alias, str):
            names.add(field.alias)
    return names


_MAX_TOKENS_FIELDS = ("max_tokens", "max_output_tokens", "num_predict", "max_new_tokens")
"""What clients call the most tokens of one answer, in the order they are tried."""


def _client_kwargs(
    cls: type | None, timeout: float, max_tokens: int | None = None
) -> dict[str, Any]:
    """No client retries, ``timeout``, streamed usage and ``max_tokens``, each where
    ``cls`` takes it."""
    fields = _fields(cls)
    kwargs: dict[str, Any] = {}
    if max_tokens is not None:
        name = next((f for f in _MAX_TOKENS_FIELDS if f in fields), None)
        if name is not None:
            kwargs[name] = int(max_tokens)
    if "max_retries" in fields:
        counts_attempts = getattr(cls, "__module__", "").startswith(_ATTEMPTS_MODULES)
        kwargs["max_retries"] = 1 if counts_attempts else 0
    if "timeout" in fields:
        kwargs["timeout"] = timeout
    elif "client_kwargs" in fields:  # ChatOllama hands these to its httpx client
        kwargs["client_kwargs"] = {"timeout": timeout}
    if "stream_usage" in fields:
        kwargs["stream_usage"] = True  # meter streamed runs too (Studio streams messages)
    return kwargs


def _endpoint_kwargs(provider: str) -> dict[str, Any]:
    """Settings of the provider's endpoint that its client does not read by itself."""
    if provider == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        return {"api_key": key or "not-needed", "base_url": os.environ.get("OPENAI_BASE_URL")}
    if provider in _KEYS:
        key, base_urls = _KEYS[provider]
        if not os.environ.get(key) and any(os.environ.get(url) for url in base_urls):
            return {"api_key": "not-needed"}  # a server of one's own, without a key
    return {}


def _structured_methods(cls: type) -> tuple[str, ...]:
    """The ``method`` values ``cls.with_structured_output`` declares (a Literal), if any."""
    method = getattr(cls, "with_structured_output", None)
    if method is None:
        return ()
    try:
        annotation = typing.get_type_hints(method).get("method")
    except Exception:  # unresolvable annotations: read the signature's text
        parameter = inspect.signature(method).parameters.get("method")
        annotation = parameter.annotation if parameter else None
        if isinstance(annotation, str):
            return tuple(str(m) for m in _CLIENT_METHODS if m in annotation)
    return tuple(_literal_values(annotation))


def _literal_values(annotation: Any) -> list[str]:
    if annotation is None:
        return []
    if typing.get_origin(annotation) is typing.Literal:
        return [a for a in typing.get_args(annotation) if isinstance(a, str)]
    values: list[str] = []
    for arg in typing.get_args(annotation):  # Optional[Literal[...]], Union[...]
        values += _literal_values(arg)
    return values
