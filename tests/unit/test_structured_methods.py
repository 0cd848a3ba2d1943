"""Which structured-output method works per model (``agent.models.structured_methods``),
told by the refusals read from a server's error text (``agent.models.refusals``)."""

from __future__ import annotations

import threading

import pytest

from agent.models.refusals import refusal_of
from agent.models.structured_methods import StructuredMethods
from agent.vocabulary import StructuredOutput as Method

# --------------------------------------------------------------------- refusal_of


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        # llama.cpp's server, as issue 14 met it
        (
            "Error code: 400 - {'error': {'code': 400, 'message': '[json.exception.type_error"
            ".302] type must be string, but is object', 'type': 'invalid_request_error'}}",
            "tool_choice",
        ),
        ("400: tool_choice must be a string", "tool_choice"),
        ("Error code: 400 - response_format type json_schema is not supported", "response_format"),
        ("400 Bad Request: this model does not support tools", "tools"),
        ("Request timed out.", None),
        ("no structured answer (answer: '```json ...')", None),
        ("the JSON does not match the Plan schema: - steps: Field required", None),
        ("", None),
    ],
)
def test_refusals_are_told_from_other_failures(reason, kind):
    assert refusal_of(reason) == kind


# ---------------------------------------------------------------- StructuredMethods

TOOL_CHOICE_400 = "Error code: 400 - type must be string, but is object"


def test_the_default_order_is_tools_then_json_schema_then_text():
    methods = StructuredMethods()
    assert methods.order("m") == [Method.FUNCTION_CALLING, Method.JSON_SCHEMA, Method.TEXT]
    assert methods.preferred("m") == Method.FUNCTION_CALLING


def test_a_success_is_remembered_per_model():
    methods = StructuredMethods()
    methods.record_success("local", Method.JSON_SCHEMA)
    assert methods.order("local") == [Method.JSON_SCHEMA, Method.FUNCTION_CALLING, Method.TEXT]
    assert methods.order("other") == [Method.FUNCTION_CALLING, Method.JSON_SCHEMA, Method.TEXT]
    assert methods.snapshot("local")["last_success"] == Method.JSON_SCHEMA
    # kept in checkpoints: plain strings, which every serializer loads without an allow-list
    methods.record_failure("local", Method.FUNCTION_CALLING, "no structured answer")
    snapshot = methods.snapshot("local")
    kinds = {type(v) for v in [snapshot["last_success"], *snapshot["order"], *snapshot["refusals"]]}
    assert kinds == {str}


def test_repeated_misses_demote_a_method_and_a_success_resets_them():
    methods = StructuredMethods()
    assert methods.record_failure("m", Method.FUNCTION_CALLING, "no structured answer") == "miss"
    assert methods.order("m")[0] == Method.FUNCTION_CALLING
    assert methods.record_failure("m", Method.FUNCTION_CALLING, "no structured answer") == "demoted"
    assert methods.order("m") == [Method.JSON_SCHEMA, Method.TEXT, Method.FUNCTION_CALLING]
    methods.record_failure("m", Method.JSON_SCHEMA, "invalid")
    methods.record_success("m", Method.JSON_SCHEMA)
    methods.record_failure("m", Method.JSON_SCHEMA, "invalid")
    assert methods.preferred("m") == Method.JSON_SCHEMA  # one miss after a success: still first


def test_a_method_the_server_refused_twice_is_dropped_but_text_never_is():
    methods = StructuredMethods()
    refusal = "Error code: 400 - response_format json_schema is not supported"
    assert methods.record_failure("m", Method.JSON_SCHEMA, refusal) == "refused"
    assert Method.JSON_SCHEMA in methods.order("m")
    assert methods.record_failure("m", Method.JSON_SCHEMA, refusal) == "dropped"
    assert methods.order("m") == [Method.FUNCTION_CALLING, Method.TEXT]
    tools_refusal = "400: tools are not supported"
    methods.record_failure("m", Method.FUNCTION_CALLING, tools_refusal)
    methods.record_failure("m", Method.FUNCTION_CALLING, tools_refusal)
    assert methods.order("m") == [Method.TEXT]
    methods.record_failure("m", Method.TEXT, "400 invalid tools")  # text sends nothing to refuse
    assert methods.order("m") == [Method.TEXT]
    assert methods.snapshot("m")["dropped"] == [Method.FUNCTION_CALLING, Method.JSON_SCHEMA]


def test_a_tool_choice_shape_refused_twice_is_never_sent_again():
    methods = StructuredMethods()
    assert methods.tool_choice("m") == "object"
    outcome = methods.record_failure(
        "m", Method.FUNCTION_CALLING, TOOL_CHOICE_400, tool_choice="object"
    )
    assert outcome == "tool_choice"
    assert methods.tool_choice("m") == "object"  # once may be a fluke
    methods.record_failure("m", Method.FUNCTION_CALLING, TOOL_CHOICE_400, tool_choice="object")
    assert methods.tool_choice("m") == "required"
    assert methods.order("m")[0] == Method.FUNCTION_CALLING  # the method itself still works
    methods.record_failure(
        "m", Method.FUNCTION_CALLING, "400 tool_choice invalid", tool_choice="required"
    )
    methods.record_failure(
        "m", Method.FUNCTION_CALLING, "400 tool_choice invalid", tool_choice="required"
    )
    assert methods.tool_choice("m") is None  # send none: the server's "auto"
    assert methods.tool_choice("m", "required") is None
    assert methods.tool_choice("other") == "object"
    assert methods.snapshot("m")["tool_choice_refusals"] == {"object": 2, "required": 2}


def test_forget_and_bad_names():
    methods = StructuredMethods()
    methods.record_success("m", Method.TEXT)
    methods.forget("m")
    assert methods.preferred("m") == Method.FUNCTION_CALLING
    with pytest.raises(ValueError, match="unknown structured-output method"):
        methods.record_success("m", "telepathy")
    with pytest.raises(ValueError, match="unknown tool_choice shape"):
        methods.tool_choice("m", "maybe")
    with pytest.raises(ValueError):
        StructuredMethods(["function_calling", "smoke_signals"])
    assert StructuredMethods([Method.JSON_SCHEMA, Method.TEXT]).order("m") == [
        Method.JSON_SCHEMA,
        Method.TEXT,
    ]


def test_the_memory_is_thread_safe():
    methods = StructuredMethods(misses_to_demote=3)
    errors: list[BaseException] = []

    def hammer(n: int) -> None:
        try:
            for i in range(300):
                key = f"m{i % 3}"
                method = (Method.FUNCTION_CALLING, Method.JSON_SCHEMA, Method.TEXT)[(i + n) % 3]
                if i % 4 == 0:
                    methods.record_success(key, method)
                else:
                    methods.record_failure(key, method, "miss", tool_choice="object")
                assert sorted(methods.order(key)) == sorted(
                    (Method.FUNCTION_CALLING, Method.JSON_SCHEMA, Method.TEXT)
                )
                methods.tool_choice(key)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_model_seen_first_starts_with_the_methods_asked_first():
    methods = StructuredMethods()
    assert methods.order("local", [Method.JSON_SCHEMA]) == [
        Method.JSON_SCHEMA,
        Method.FUNCTION_CALLING,
        Method.TEXT,
    ]
    assert methods.order("hosted") == [Method.FUNCTION_CALLING, Method.JSON_SCHEMA, Method.TEXT]
    assert methods.order("odd", ["smoke_signals", Method.JSON_SCHEMA]) == [
        Method.JSON_SCHEMA,
        Method.FUNCTION_CALLING,
        Method.TEXT,
    ]


def test_what_was_learnt_about_a_model_beats_the_first_methods():
    methods = StructuredMethods()
    methods.order("local", [Method.JSON_SCHEMA])
    methods.record_success("local", Method.FUNCTION_CALLING)
    assert methods.order("local", [Method.JSON_SCHEMA])[0] == Method.FUNCTION_CALLING
    for _ in range(2):
        methods.record_failure(
            "other", Method.JSON_SCHEMA, "HTTP 400: response_format is not supported"
        )
    assert Method.JSON_SCHEMA not in methods.order("other", [Method.JSON_SCHEMA])
