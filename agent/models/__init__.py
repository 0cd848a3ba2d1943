"""Chat models: one factory for ``provider:name`` (:mod:`agent.models.factory`), real
providers (:mod:`agent.models.providers`), structured answers from small models
(:mod:`agent.models.structured`) and the scripted models of the demo and the tests."""

from agent.models.scripted import ScriptedChatModel

__all__ = ["ScriptedChatModel"]
