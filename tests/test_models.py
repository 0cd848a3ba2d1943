import threading

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from agent.errors import ConfigError
from agent.models import Metered, ScriptedChatModel, load_model, merge_usage, tool_call


class Answer(BaseModel):
    decision: str


def test_scripted_model_replays_in_order_and_records_prompts():
    model = ScriptedChatModel(["one", {"a": 1}, tool_call("ls")])
    assert model.invoke("first").content == "one"
    assert model.invoke("second").content == '{"a": 1}'
    third = model.invoke([HumanMessage("third")])
    assert third.tool_calls[0]["name"] == "ls" and third.tool_calls[0]["id"]
    assert [m[0].content for m in model.calls] == ["first", "second", "third"]
    with pytest.raises(RuntimeError, match="ran out of responses after 3"):
        model.invoke("fourth")


def test_scripted_model_reports_usage_metadata():
    usage = ScriptedChatModel(["hello world"]).invoke("a prompt of some length").usage_metadata
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_scripted_model_raises_scripted_exceptions():
    with pytest.raises(TimeoutError):
        ScriptedChatModel([TimeoutError("slow")]).invoke("x")


def test_scripted_model_scripts_per_step_stay_deterministic_across_threads():
    model = ScriptedChatModel({"S1": ["s1-a", "s1-b"], "S2": ["s2-a"]})
    out = {}

    def call(step_id):
        out[step_id] = model.invoke(f"step_id: {step_id}\n").content

    threads = [threading.Thread(target=call, args=(s,)) for s in ("S1", "S2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {"S1": "s1-a", "S2": "s2-a"}
    assert model.invoke("step_id: S1\n").content == "s1-b"


def test_structured_output_parses_json_and_tool_calls_and_reports_errors():
    model = ScriptedChatModel(
        [
            '{"decision": "end"}',
            "nope",
            AIMessage("", tool_calls=[{"name": "Answer", "args": {"decision": "go"}, "id": "c1"}]),
        ]
    )
    runnable = model.with_structured_output(Answer, include_raw=True)
    assert runnable.invoke("x")["parsed"] == Answer(decision="end")
    bad = runnable.invoke("x")
    assert bad["parsed"] is None and bad["parsing_error"] is not None
    assert runnable.invoke("x")["parsed"].decision == "go"


def test_metered_structured_returns_none_with_the_raw_text_when_malformed():
    metered = Metered(
        ScriptedChatModel(['```json\n{"decision": "end"}\n```', "garbage"]),
        "reflection",
        "function_calling",
    )
    parsed, _ = metered.structured([HumanMessage("x")], Answer)
    assert parsed == Answer(decision="end")
    parsed, raw = metered.structured([HumanMessage("x")], Answer)
    assert parsed is None and "garbage" in raw
    assert metered.usage["reflection"]["calls"] == 2


def test_merge_usage_sums_per_role():
    merged = merge_usage(
        {"a": {"total_tokens": 5, "calls": 1}},
        {"a": {"total_tokens": 2, "calls": 1}, "b": {"total_tokens": 1}},
    )
    assert merged == {"a": {"total_tokens": 7, "calls": 2}, "b": {"total_tokens": 1}}


def test_openai_without_key_or_base_url_names_both_and_the_demo(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError) as err:
        load_model("openai:gpt-4.1-mini")
    text = str(err.value)
    assert "OPENAI_API_KEY" in text and "OPENAI_BASE_URL" in text and "deepreflect demo" in text


def test_openai_with_a_base_url_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = load_model("openai:local-model")
    assert model.model_name == "local-model"
    assert str(model.openai_api_base).startswith("http://127.0.0.1:9")


@pytest.mark.parametrize("spec", ["gpt-4", "anthropic:claude", "scripted:nope", 42])
def test_bad_model_strings_are_config_errors(spec):
    with pytest.raises(ConfigError):
        load_model(spec)
