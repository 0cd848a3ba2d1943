"""Chat models: one factory for ``provider:name`` (:mod:`agent.models.factory`), real
providers (:mod:`agent.models.providers`), structured answers from small models (JSON read
from reply text, :mod:`agent.models.reply_json`, validated by
:mod:`agent.models.reply_schema`; the method that works per model,
:mod:`agent.models.structured_methods`, told refusals by :mod:`agent.models.refusals`) and
the scripted models of the demo and the tests."""

from agent.models.scripted import ScriptedChatModel

__all__ = ["ScriptedChatModel"]
