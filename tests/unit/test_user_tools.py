"""Tools as users write them, without a graph: what ``as_tool`` accepts, the names a role's
tools may have, and the step's workspace handed to the tools that declare it."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from langchain_core.tools import InjectedToolArg, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent.controller.subagents import build_registry
from agent.errors import ConfigError
from agent.tools.custom import (
    WORKSPACE_ARG,
    as_tool,
    coerce_tools,
    declares_workspace,
    inject_workspace,
    output_text,
)
from agent.vfs.entries import PathError, Workspace


def lookup_price(item: str, currency: str = "EUR") -> str:
    """Price of an item in the catalogue.

    Args:
        item: The catalogue name of the item.
        currency: ISO code of the currency to answer in.
    """
    return f"{item}=3 {currency}"


async def fetch_rate(currency: str) -> str:
    """Today's exchange rate of a currency."""
    await asyncio.sleep(0)
    return f"{currency}:1.1"


def count_words(text: str) -> int:
    return len(text.split())


def save_report(title: str, workspace: Workspace) -> str:
    """Write the report artifact."""
    return workspace.write("out/report.md", f"# {title}\n")


@tool
def save_notes(text: str, workspace: Annotated[Workspace, InjectedToolArg]) -> str:
    """Write notes."""
    return workspace.write("out/notes.md", text)


def parameters(t) -> dict:
    return convert_to_openai_tool(t)["function"]["parameters"]


def a_workspace() -> Workspace:
    return Workspace({"in.md": "input"}, writable=["out/report.md"], scratch="work/S1/")


# -- what as_tool accepts -------------------------------------------------------------------


def test_a_base_tool_is_used_as_it_is():
    assert as_tool(save_notes) is save_notes


def test_a_plain_function_becomes_a_tool_from_its_signature_and_docstring():
    t = as_tool(lookup_price)
    assert t.name == "lookup_price"
    assert t.description == "Price of an item in the catalogue."
    params = parameters(t)
    assert params["required"] == ["item"]
    assert params["properties"]["item"]["description"] == "The catalogue name of the item."
    assert t.invoke({"item": "apple"}) == "apple=3 EUR"


def test_an_async_function_becomes_a_coroutine_only_tool():
    t = as_tool(fetch_rate)
    assert isinstance(t, StructuredTool) and t.func is None and t.coroutine is not None
    assert asyncio.run(t.ainvoke({"currency": "USD"})) == "USD:1.1"


def test_a_function_without_a_docstring_is_described_by_its_name():
    t = as_tool(count_words)
    assert t.description == "Count words."
    assert t.invoke({"text": "a b c"}) == 3


def test_a_coroutine_only_structured_tool_is_accepted():
    only_async = StructuredTool.from_function(coroutine=fetch_rate, name="rate")
    assert as_tool(only_async) is only_async


def test_a_bound_method_becomes_a_tool_without_self():
    class Catalogue:
        def stock(self, item: str) -> str:
            """Units in stock."""
            return f"{item}: 7"

    t = as_tool(Catalogue().stock)
    assert list(parameters(t)["properties"]) == ["item"] and t.invoke({"item": "x"}) == "x: 7"


@pytest.mark.parametrize(
    ("obj", "words"),
    [
        (lambda text: text, "lambda"),
        (42, "int"),
        (print, "builtin"),
        (str, "class"),
        ("lookup_price", "str"),
    ],
)
def test_what_cannot_be_a_tool_is_a_config_error_saying_why(obj, words):
    with pytest.raises(ConfigError, match=words):
        as_tool(obj)


def test_an_annotation_that_does_not_resolve_is_a_config_error():
    def use(thing: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        """Use a thing."""
        return "used"

    with pytest.raises(ConfigError, match="cannot use function 'use'.*Missing"):
        as_tool(use)


def test_a_generator_function_is_refused():
    def facts(term: str):
        """Facts."""
        yield term

    with pytest.raises(ConfigError, match="generator"):
        as_tool(facts)


def test_a_tool_name_providers_refuse_is_a_config_error():
    bad = StructuredTool.from_function(func=count_words, name="count words", description="x")
    with pytest.raises(ConfigError, match="not usable"):
        as_tool(bad)


class Opaque:
    """A Python class pydantic cannot describe in JSON schema."""


def test_an_argument_no_model_can_be_told_about_is_a_config_error():
    def use(thing: Opaque) -> str:
        """Use a thing."""
        return "used"

    with pytest.raises(ConfigError, match="'use' has arguments a model cannot be told about"):
        as_tool(use)


# -- a role's tools -------------------------------------------------------------------------


def test_two_tools_with_one_name_for_a_role_are_a_config_error():
    twin = StructuredTool.from_function(func=count_words, name="lookup_price", description="x")
    with pytest.raises(ConfigError, match="'coder' has two tools named 'lookup_price'"):
        coerce_tools("coder", [lookup_price, twin])


@pytest.mark.parametrize("name", ["ls", "read_file", "write_file", "edit_file"])
def test_a_tool_named_like_a_filesystem_tool_is_a_config_error(name):
    clash = StructuredTool.from_function(func=count_words, name=name, description="x")
    with pytest.raises(ConfigError, match=f"{name!r} clashes with a built-in filesystem tool"):
        coerce_tools("researcher", [clash])


def test_tools_must_be_a_list():
    with pytest.raises(ConfigError, match="must be a list"):
        coerce_tools("coder", save_notes)


def test_the_registry_coerces_the_tools_of_specs_and_of_the_tools_mapping():
    spec = {"name": "pricer", "description": "Prices.", "prompt": "p", "tools": [lookup_price]}
    registry = build_registry(
        [spec], {"researcher": [fetch_rate, save_notes], "pricer": [count_words]}
    )
    assert [t.name for t in registry["pricer"]["tools"]] == ["lookup_price", "count_words"]
    assert [t.name for t in registry["researcher"]["tools"]] == ["fetch_rate", "save_notes"]
    assert "tools" not in registry["coder"]


def test_a_bad_tool_fails_at_build_time_naming_its_role():
    spec = {"name": "pricer", "description": "Prices.", "prompt": "p", "tools": [lambda x: x]}
    with pytest.raises(ConfigError, match="role 'pricer'.*lambda"):
        build_registry([spec])
    with pytest.raises(ConfigError, match="role 'coder'.*int"):
        build_registry(None, {"coder": [count_words, 3]})


def test_a_name_given_twice_across_spec_and_mapping_fails_at_build_time():
    spec = {"name": "pricer", "description": "Prices.", "prompt": "p", "tools": [lookup_price]}
    with pytest.raises(ConfigError, match="'pricer' has two tools named 'lookup_price'"):
        build_registry([spec], {"pricer": [lookup_price]})


def test_a_single_tool_instead_of_a_list_in_the_mapping_is_a_config_error():
    with pytest.raises(ConfigError, match="tools of role 'coder' must be a list"):
        build_registry(None, {"coder": save_notes})  # type: ignore[dict-item]


# -- the step's workspace -------------------------------------------------------------------


def test_a_workspace_parameter_is_hidden_from_the_model():
    for t in (as_tool(save_report), save_notes):
        assert declares_workspace(t)
        assert WORKSPACE_ARG not in parameters(t)["properties"]
    assert not declares_workspace(as_tool(lookup_price))


def test_the_tool_writes_its_artifact_through_the_injected_workspace():
    t, ws = as_tool(save_report), a_workspace()
    args = {"title": "Prices"}
    call_args = inject_workspace(t, args, ws)
    assert call_args[WORKSPACE_ARG] is ws and args == {"title": "Prices"}  # the model's, untouched
    assert asyncio.run(t.ainvoke(call_args)) == "out/report.md"
    assert ws.written == {"out/report.md": "# Prices\n"}


def test_the_model_cannot_supply_the_workspace():
    t, ws = as_tool(save_report), a_workspace()
    call_args = inject_workspace(t, {"title": "x", "workspace": {"writable": ["/etc"]}}, ws)
    assert call_args[WORKSPACE_ARG] is ws


def test_a_write_outside_the_step_scope_is_refused():
    t, ws = save_notes, a_workspace()  # writes out/notes.md; the step may write out/report.md
    with pytest.raises(PathError, match="permission_denied"):
        asyncio.run(t.ainvoke(inject_workspace(t, {"text": "x"}, ws)))
    assert ws.written == {}


def test_tools_without_a_workspace_get_the_model_arguments_unchanged():
    @tool
    def post(channel: str, workspace: str) -> str:
        """Post to a channel of a chat workspace (the model chooses which)."""
        return f"{workspace}#{channel}"

    t = as_tool(post)
    assert not declares_workspace(t) and "workspace" in parameters(t)["properties"]
    args = {"channel": "general", "workspace": "acme"}
    assert inject_workspace(t, args, a_workspace()) == args
    assert inject_workspace(as_tool(lookup_price), {"item": "x"}, a_workspace()) == {"item": "x"}


def test_an_async_tool_gets_the_workspace_too():
    async def save_async(title: str, workspace: Workspace) -> str:
        """Write the report."""
        return workspace.write("out/report.md", title)

    t, ws = as_tool(save_async), a_workspace()
    assert asyncio.run(t.ainvoke(inject_workspace(t, {"title": "T"}, ws))) == "out/report.md"
    assert ws.written == {"out/report.md": "T"}


def test_a_workspace_the_model_would_see_is_a_config_error():
    @tool
    def visible(text: str, workspace: Workspace) -> str:
        """Write."""
        return workspace.write("a", text)

    with pytest.raises(ConfigError, match="Annotated\\[Workspace, InjectedToolArg\\]"):
        as_tool(visible)


def test_a_workspace_under_another_name_is_a_config_error():
    def misnamed(text: str, ws: Workspace) -> str:
        """Write."""
        return ws.write("a", text)

    with pytest.raises(ConfigError, match="name its Workspace parameter 'workspace'"):
        as_tool(misnamed)


def test_an_injected_argument_deepreflect_cannot_supply_is_a_config_error():
    @tool
    def needs_user(text: str, user_id: Annotated[str, InjectedToolArg]) -> str:
        """Needs a user."""
        return user_id

    with pytest.raises(ConfigError, match="'user_id'.*injects only 'workspace'"):
        as_tool(needs_user)


# -- what a tool returns ---------------------------------------------------------------------


def test_content_blocks_become_their_text():
    blocks = [{"type": "text", "text": "one", "id": "lc_1"}, {"type": "text", "text": "two"}]
    assert output_text(blocks) == "one\ntwo"
    assert output_text("plain") == "plain"
    assert output_text(3) == "3"
    image = [{"type": "image", "url": "http://x"}]
    assert output_text(image) == str(image)
