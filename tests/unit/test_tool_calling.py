"""agent.tools.binding: when a subagent's tools are bound as schemas."""

from __future__ import annotations

from agent.tools.binding import ToolCallingMemory


def test_native_and_text_modes_are_what_they_say():
    memory = ToolCallingMemory()
    assert memory.binds("native", "m") and not memory.binds("text", "m")


def test_auto_stops_binding_after_text_answers_only_and_never_after_a_native_call():
    memory = ToolCallingMemory(text_after=2)
    assert memory.binds("auto", "small")
    memory.record("small", native=False)
    assert memory.binds("auto", "small")
    memory.record("small", native=False)
    assert not memory.binds("auto", "small")
    assert memory.binds("native", "small")  # an explicit mode wins
    assert memory.binds("auto", "other")  # per model

    memory.record("capable", native=True)
    for _ in range(5):
        memory.record("capable", native=False)
    assert memory.binds("auto", "capable")  # it can call tools: keep giving them


def test_the_context_refuses_an_unknown_mode():
    from agent.context import Context

    assert any("tool_calling" in p for p in Context(tool_calling="sometimes").validate())
    assert not Context(tool_calling="text").validate()
