"""Every ``provider:name`` through LangChain's ``init_chat_model``: the right class with its
key or base URL set, no client retries, a timeout, streamed usage, and configuration errors
that say what to do (the extra to install, the variable to set, the providers known)."""

from __future__ import annotations

import sys
import threading
from typing import Any, Literal

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agent.errors import ConfigError, ErrorClass
from agent.models import providers
from agent.models.factory import load_model
from agent.models.providers import (
    DEFAULT_TIMEOUT_S,
    _client_kwargs,
    constrained_decoding,
    provider_model,
    structured_method_for,
)
from agent.models.scripted import ScriptedChatModel

ChatAnthropic = pytest.importorskip("langchain_anthropic").ChatAnthropic
ChatOllama = pytest.importorskip("langchain_ollama").ChatOllama
ChatGoogleGenerativeAI = pytest.importorskip("langchain_google_genai").ChatGoogleGenerativeAI
from langchain_openai import ChatOpenAI  # noqa: E402

_KEYS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_API_URL",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
)


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for name in _KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(providers, "_CACHE", {})


def secret(value: Any) -> str:
    return value.get_secret_value() if hasattr(value, "get_secret_value") else str(value)


def test_anthropic_gets_its_key_no_retries_a_timeout_and_streamed_usage(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model = load_model("anthropic:claude-sonnet-4-5")
    assert type(model) is ChatAnthropic
    assert model.model == "claude-sonnet-4-5"
    assert secret(model.anthropic_api_key) == "sk-ant-test"
    assert model.max_retries == 0  # retries belong to the graph's RetryPolicy
    assert model.default_request_timeout == DEFAULT_TIMEOUT_S
    assert model.stream_usage is True


def test_anthropic_base_url_points_at_a_server_of_ones_own_without_a_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    model = load_model("anthropic:claude-test")
    assert type(model) is ChatAnthropic
    assert model.anthropic_api_url == "http://127.0.0.1:9/"
    assert secret(model.anthropic_api_key) == "not-needed"


def test_anthropic_without_a_key_names_the_variable():
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY") as err:
        load_model("anthropic:claude-sonnet-4-5")
    assert err.value.error_class is ErrorClass.INVALID_INPUT
    assert "ANTHROPIC_BASE_URL" in str(err.value)


def test_ollama_needs_no_key_and_honours_ollama_host(monkeypatch):
    model = load_model("ollama:llama3.1")
    assert type(model) is ChatOllama and model.model == "llama3.1"
    assert model.client_kwargs == {"timeout": DEFAULT_TIMEOUT_S}
    assert model.base_url is None  # the ollama client reads OLLAMA_HOST itself

    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    moved = load_model("ollama:llama3.1")
    assert moved is not model  # a new endpoint, a new client
    assert str(moved._client._client.base_url).startswith("http://127.0.0.1:9")


def test_google_genai_gets_its_key_and_one_attempt(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test")
    model = load_model("google_genai:gemini-2.5-flash")
    assert type(model) is ChatGoogleGenerativeAI
    assert model.model.endswith("gemini-2.5-flash")
    assert secret(model.google_api_key) == "g-test"
    assert model.max_retries == 1  # google-genai counts attempts; 0 would mean its default
    assert model.timeout == DEFAULT_TIMEOUT_S


def test_google_genai_without_a_key_is_a_config_error_naming_the_variable():
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY"):
        load_model("google_genai:gemini-2.5-flash")


def test_openai_keeps_its_key_base_url_and_message(monkeypatch):
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        load_model("openai:gpt-4.1-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = load_model("openai:local-model")
    assert type(model) is ChatOpenAI
    assert model.openai_api_base == "http://127.0.0.1:9/v1"
    assert secret(model.openai_api_key) == "not-needed"
    assert (model.max_retries, model.request_timeout, model.stream_usage) == (0, 120.0, True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    keyed = load_model("openai:local-model")
    assert keyed is not model and secret(keyed.openai_api_key) == "sk-test"


def test_a_provider_name_is_read_as_init_chat_model_reads_it(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test")
    assert type(load_model("google-genai:gemini-2.5-flash")) is ChatGoogleGenerativeAI


def test_models_are_cached_per_endpoint_and_timeout(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    first = provider_model("anthropic", "claude-a")
    assert provider_model("anthropic", "claude-a") is first
    assert provider_model("anthropic", "claude-b") is not first
    slow = provider_model("anthropic", "claude-a", timeout=600)
    assert slow is not first and slow.default_request_timeout == 600
    assert provider_model("anthropic", "claude-a", timeout=None) is first  # None: the default
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-other")
    assert provider_model("anthropic", "claude-a") is not first


def test_the_cache_builds_one_client_under_concurrency(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    got: list[BaseChatModel] = []
    threads = [
        threading.Thread(target=lambda: got.append(provider_model("anthropic", "claude-a")))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(m) for m in got}) == 1


def test_an_unknown_provider_is_a_config_error_listing_the_known_ones():
    with pytest.raises(ConfigError) as err:
        load_model("nosuchprovider:model-x")
    text = str(err.value)
    assert "unknown model provider 'nosuchprovider'" in text
    for known in ("scripted", "anthropic", "ollama", "google_genai", "openai", "bedrock_converse"):
        assert known in text


class _NewProviderModel(FakeListChatModel):
    """A chat model of a provider that init_chat_model learns after this release."""

    max_retries: int = 3
    timeout: float | None = None


def test_a_provider_init_chat_model_learns_later_is_built_with_no_retries(monkeypatch):
    import langchain.chat_models as chat_models

    real = chat_models.init_chat_model
    built: list[dict[str, Any]] = []

    def init_chat_model(model: str, *, model_provider: str | None = None, **kwargs: Any):
        if model_provider != "newprovider":
            return real(model, model_provider=model_provider, **kwargs)
        built.append(kwargs)
        return _NewProviderModel(responses=["hi"], **kwargs)

    monkeypatch.setattr(chat_models, "init_chat_model", init_chat_model)
    model = load_model("newprovider:model-1")
    assert type(model) is _NewProviderModel
    assert (model.max_retries, model.timeout) == (0, DEFAULT_TIMEOUT_S)
    assert built[-1] == {"max_retries": 0, "timeout": DEFAULT_TIMEOUT_S}


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("anthropic:claude-sonnet-4-5", "langchain_anthropic", "anthropic"),
        ("ollama:llama3.1", "langchain_ollama", "ollama"),
        ("google_genai:gemini-2.5-flash", "langchain_google_genai", "google"),
        ("bedrock_converse:anthropic.claude", "langchain_aws", "aws"),
        ("groq:llama-3.3-70b", "langchain_groq", "groq"),
        ("mistralai:mistral-large", "langchain_mistralai", "mistralai"),
        ("google_vertexai:gemini-2.5-pro", "langchain_google_vertexai", "vertexai"),
    ],
)
def test_a_missing_package_is_a_config_error_naming_the_extra(monkeypatch, spec, module, extra):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("MISTRAL_API_KEY", "k")
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    with pytest.raises(ConfigError) as err:
        load_model(spec)
    assert f'pip install "deepreflect[{extra}]"' in str(err.value)


def test_a_provider_without_an_extra_names_its_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain_cohere", None)
    with pytest.raises(ConfigError, match="pip install langchain-cohere"):
        load_model("cohere:command-r")


def test_scripted_models_never_reach_a_provider(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    assert isinstance(load_model("scripted:happy", "planner"), ScriptedChatModel)


# ---------------------------------------------------------------------------- structured


class _Declares(FakeListChatModel):
    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, method: Literal["function_calling", "json_schema"] = "json_schema"
    ) -> Any:
        raise NotImplementedError


class _Tools(FakeListChatModel):
    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, method: Literal["function_calling", "prompt_prefill"] | None = None
    ) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("model", "requested", "expected"),
    [
        (_Declares(responses=[]), "function_calling", "function_calling"),
        (_Declares(responses=[]), "json_schema", "json_schema"),
        (_Declares(responses=[]), "json_mode", "json_schema"),  # no JSON mode: the schema
        (_Tools(responses=[]), "json_mode", "function_calling"),
        (_Tools(responses=[]), "json_schema", "function_calling"),
        (FakeListChatModel(responses=[]), "json_mode", "json_mode"),  # declares nothing
        (ScriptedChatModel(), "json_schema", "json_schema"),
    ],
)
def test_structured_method_for_picks_one_the_class_accepts(model, requested, expected):
    assert structured_method_for(model, requested) == expected


def test_structured_methods_of_the_real_provider_classes(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    anthropic = load_model("anthropic:claude-sonnet-4-5")
    # langchain-anthropic has no JSON mode (it warns and uses json_schema): ask for that
    assert structured_method_for(anthropic, "json_mode") == "json_schema"
    for spec in ("ollama:llama3.1", "google_genai:gemini-2.5-flash", "openai:gpt-4.1-mini"):
        model = load_model(spec)
        for method in ("function_calling", "json_schema", "json_mode"):
            assert structured_method_for(model, method) == method, spec
    for method in ("function_calling", "json_schema"):
        assert structured_method_for(anthropic, method) == method


def test_the_contexts_request_timeout_reaches_the_client(monkeypatch):
    from agent import Context
    from agent.controller.subagents import build_registry
    from agent.graph.roles import Roles

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    roles = Roles(build_registry())
    ctx = Context(model="openai:gpt-4.1-mini", request_timeout_s=7.5)
    assert roles.model_for("planner", ctx).request_timeout == 7.5
    assert roles.model_for("planner", Context(model="openai:gpt-4.1-mini")).request_timeout == 120


def test_the_contexts_output_cap_reaches_the_client_under_the_name_it_takes(monkeypatch):
    from agent import Context
    from agent.controller.subagents import build_registry
    from agent.graph.roles import Roles

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    roles = Roles(build_registry())
    ctx = Context(model="openai:gpt-4.1-mini", max_output_tokens=1536)
    assert roles.model_for("planner", ctx).max_tokens == 1536
    assert roles.model_for("coder", ctx).max_tokens == 1536
    assert roles.model_for("planner", Context(model="openai:gpt-4.1-mini")).max_tokens is None
    assert Context(max_output_tokens=0).validate() == ["max_output_tokens must be positive, got 0"]
    chat_ollama = pytest.importorskip("langchain_ollama").ChatOllama
    assert _client_kwargs(chat_ollama, 5.0, 64)["num_predict"] == 64


@pytest.mark.parametrize(
    ("base_url", "constrained"),
    [
        ("http://127.0.0.1:8080/v1", True),  # llama.cpp
        ("http://gpu-box:8000/v1", True),  # vLLM
        ("http://localhost:11434/v1", True),  # Ollama's OpenAI endpoint
        (None, False),  # OpenAI itself: tool calling first
        ("https://api.openai.com/v1", False),
    ],
)
def test_a_server_of_ones_own_constrains_decoding(monkeypatch, base_url, constrained):
    from langchain_openai import ChatOpenAI

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = ChatOpenAI(model="m", api_key="k", base_url=base_url)
    assert constrained_decoding(model) is constrained


def test_ollama_constrains_decoding_and_other_providers_do_not():
    chat_ollama = pytest.importorskip("langchain_ollama").ChatOllama

    assert constrained_decoding(chat_ollama(model="qwen2.5-coder:1.5b")) is True
    assert constrained_decoding(ScriptedChatModel(["x"])) is False
