import asyncio
import dataclasses
import json
import threading

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from agent import Context
from agent.errors import ConfigError
from agent.graph.roles import Roles
from agent.models.factory import JUDGE, NOSTREAM_TAGS, Metered, load_model, merge_usage
from agent.models.scripted import ScriptedChatModel, prompt_json, tool_call


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
        out[step_id] = model.invoke("x", config={"metadata": {"step_id": step_id}}).content

    threads = [threading.Thread(target=call, args=(s,)) for s in ("S1", "S2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {"S1": "s1-a", "S2": "s2-a"}
    assert model.invoke("x", config={"metadata": {"step_id": "S1"}}).content == "s1-b"


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
    parsed, _ = asyncio.run(metered.astructured([HumanMessage("x")], Answer))
    assert parsed == Answer(decision="end")
    parsed, raw = asyncio.run(metered.astructured([HumanMessage("x")], Answer))
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


def test_a_two_argument_responder_gets_the_calls_metadata_and_a_one_argument_one_still_works():
    seen = []
    model = ScriptedChatModel(responder=lambda messages, metadata: seen.append(metadata) or "ok")
    assert model.invoke("x", config={"metadata": {"step_id": "S7", "revision": 1}}).content == "ok"
    assert (seen[0]["step_id"], seen[0]["revision"]) == ("S7", 1)
    assert model.call_metadata[0]["step_id"] == "S7"
    plain = ScriptedChatModel(responder=lambda messages: f"{len(messages)} message")
    assert plain.invoke("x").content == "1 message"


class Seen(BaseCallbackHandler):
    """The tags and metadata each chat model call started with."""

    def __init__(self) -> None:
        self.starts: list[tuple[list[str], dict]] = []

    def on_chat_model_start(self, serialized, messages, *, tags=None, metadata=None, **kwargs):
        self.starts.append((list(tags or []), dict(metadata or {})))


def test_metered_calls_carry_their_role_and_only_json_calls_are_kept_out_of_chat_streams():
    seen = Seen()
    model = ScriptedChatModel(['{"decision": "end"}', "a draft", "{}"], callbacks=[seen])
    metered = Metered(model, "planner", "function_calling", {"reason": "why"})
    asyncio.run(metered.astructured([HumanMessage("x")], Answer, metadata={"answer": "yes"}))
    Metered(model, "writer", "function_calling").invoke(
        [HumanMessage("x")], metadata={"step_id": "S1"}
    )
    judge, _usage = Metered(model, "judge", "function_calling").observed()
    judge.invoke([HumanMessage("x")])
    (planner_tags, planner), (writer_tags, writer), (judge_tags, judge_meta) = seen.starts
    assert {k: planner[k] for k in ("role", "reason", "answer")} == {
        "role": "planner",
        "reason": "why",
        "answer": "yes",
    }
    assert (writer["role"], writer["step_id"], judge_meta["role"]) == ("writer", "S1", "judge")
    assert set(NOSTREAM_TAGS) <= set(planner_tags) and set(NOSTREAM_TAGS) <= set(judge_tags)
    assert "langsmith:nostream" in NOSTREAM_TAGS and not set(NOSTREAM_TAGS) & set(writer_tags)


def test_the_judge_role_is_judge_and_critic_names_only_the_critic_subagent():
    judge, critic = ScriptedChatModel([]), ScriptedChatModel([])
    ctx = Context(model="scripted:happy")
    only_critic = Roles({}, {"critic": critic})
    assert only_critic.model_for("critic", ctx) is critic
    assert only_critic.model_for(JUDGE, ctx) is not critic  # the judge falls back to `model`
    assert Roles({}, {"critic": critic, JUDGE: judge}).model_for(JUDGE, ctx) is judge


def test_context_names_the_judge_model_judge_model_and_has_no_critic_model():
    assert Context(judge_model="scripted:happy").judge_model == "scripted:happy"
    assert "critic_model" not in {f.name for f in dataclasses.fields(Context)}
    with pytest.raises(TypeError, match="critic_model"):
        Context(critic_model="scripted:happy")  # type: ignore[call-arg]


def test_prompt_json_finds_the_data_a_prompt_carries_whatever_words_surround_it():
    situation = {"plan": {"version": 1, "steps": []}, "step": 3}
    text = f'Noise {{"decoy": 1}} then the situation:\n{json.dumps(situation, indent=1)}\nBye.'
    assert prompt_json([SystemMessage("{}"), HumanMessage(text)]) == situation
    assert prompt_json([HumanMessage("no data here")]) == {}


class _TextOnly(BaseChatModel):
    """A small local model: it writes its JSON in the reply's text, never as a tool call,
    and its server refuses requests with tools when ``refuse_tools`` is set."""

    reply: str = ""
    refuse_tools: bool = False
    calls: list[dict] = []

    @property
    def _llm_type(self) -> str:
        return "text-only"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        self.calls.append(kwargs)
        if self.refuse_tools and "tools" in kwargs:
            raise RuntimeError("Error code: 400 - tools are not supported by this server")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])


def test_json_written_in_the_reply_text_instead_of_a_tool_call_is_the_answer():
    model = _TextOnly(reply='Here it is:\n```json\n{"decision": "end"}\n```', calls=[])
    metered = Metered(model, "reflection", "function_calling")
    parsed, _ = asyncio.run(metered.astructured([HumanMessage("x")], Answer))
    assert parsed == Answer(decision="end")


def test_auto_moves_past_a_server_that_refuses_tools_and_then_asks_by_text_first():
    from agent.models.factory import model_key
    from agent.models.structured_methods import methods_from

    model = _TextOnly(reply='{"decision": "end"}', refuse_tools=True, calls=[])
    metered = Metered(model, "reflection", "auto")
    parsed, _ = asyncio.run(metered.astructured([HumanMessage("x")], Answer))
    assert parsed == Answer(decision="end")
    assert ["tools" in c for c in model.calls] == [True, True, False]  # two refusals, then text
    model.calls.clear()
    again, _ = asyncio.run(metered.astructured([HumanMessage("y")], Answer))
    assert again == Answer(decision="end") and len(model.calls) == 1  # it remembered
    assert metered.methods.snapshot(model_key(model))["last_success"] == "text"
    # what it learnt is a trajectory event; a node of the same thread reads it back ...
    event = metered.learnt
    assert event is not None and event["model"] == model_key(model)
    model.calls.clear()
    later = Metered(model, "planner", "auto", methods=methods_from([event]))
    asyncio.run(later.astructured([HumanMessage("z")], Answer))
    assert len(model.calls) == 1 and later.learnt is None  # asked by text at once: nothing new
    # ... and another thread, whose trajectory holds none, starts from the beginning
    model.calls.clear()
    other = Metered(model, "planner", "auto", methods=methods_from([]))
    asyncio.run(other.astructured([HumanMessage("z")], Answer))
    assert ["tools" in c for c in model.calls] == [True, True, False]


def test_a_malformed_learnt_event_is_read_as_nothing_learnt():
    from agent.models.structured_methods import LEARNT, methods_from

    events = [
        {"action": LEARNT, "model": "m", "learnt": {"order": ["nope", 3], "dropped": "x"}},
        {"action": LEARNT, "model": 5, "learnt": {}},
        {"action": "result", "model": "m"},
        "not an event",
    ]
    methods = methods_from(events)
    assert methods.order("m") == ["function_calling", "json_schema", "text"]
    refusing = {"action": LEARNT, "model": "m", "learnt": {"dropped": ["function_calling", "text"]}}
    assert methods_from([refusing]).order("m") == ["json_schema", "text"]  # text never dropped


def test_auto_lets_an_error_that_is_no_refusal_reach_the_caller():
    class _Down(_TextOnly):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            raise TimeoutError("the server is gone")

    metered = Metered(_Down(calls=[]), "reflection", "auto")
    with pytest.raises(TimeoutError):
        asyncio.run(metered.astructured([HumanMessage("x")], Answer))


def _length_limit_error():
    import openai
    from openai.types.chat import ChatCompletion
    from openai.types.completion_usage import CompletionUsage

    usage = CompletionUsage(prompt_tokens=700, completion_tokens=1536, total_tokens=2236)
    completion = ChatCompletion.model_construct(
        id="c", choices=[], created=0, model="m", object="chat.completion", usage=usage
    )
    return openai.LengthFinishReasonError(completion=completion)


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "auto"])
def test_an_answer_cut_off_at_the_token_limit_is_a_miss_to_retry_with_its_tokens_counted(method):
    class _Rambles(_TextOnly):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            raise _length_limit_error()

    model = _Rambles(calls=[])
    metered = Metered(model, "planner", method)
    parsed, raw = asyncio.run(metered.astructured([HumanMessage("x")], Answer))
    assert parsed is None
    assert "cut off at the token limit" in raw
    assert metered.usage["planner"]["output_tokens"] == 1536
    assert metered.usage["planner"]["input_tokens"] == 700


def test_cut_off_tells_a_length_limit_from_other_failures():
    from agent.errors import cut_off

    assert cut_off(_length_limit_error())
    assert cut_off(RuntimeError("wrapped")) is False
    wrapped = RuntimeError("the call failed")
    wrapped.__cause__ = _length_limit_error()
    assert cut_off(wrapped)


def test_metered_sampling_sets_the_temperature_of_the_calls_inside_only():
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="x", temperature=0)
    metered = Metered(model, "coder", "auto")
    with metered.sampling(0.7):
        assert metered._bound(None).temperature == 0.7
        assert metered._bound([]).temperature == 0.7
    assert metered._bound(None) is model and model.temperature == 0
    scripted = Metered(ScriptedChatModel(["x"]), "coder", "auto")  # no such setting: as it is
    with scripted.sampling(0.7):
        assert scripted._bound(None) is scripted.model


def test_production_code_never_branches_on_the_scripted_test_model():
    # a scripted model is asked the way any model is: a branch on its class would let the
    # tests pass a path no user's model takes
    from pathlib import Path

    import agent

    root = Path(agent.__file__).parent
    branches = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "isinstance(" in line and "ScriptedChatModel" in line
    ]
    assert branches == []
