"""One plan step: the subagent's revise loop and everything it drives.

:mod:`agent.controller.revise` is the loop (ordinary code decides when to stop);
:mod:`agent.controller.worker` drafts, checks and critiques one step inside it.
"""

from agent.controller.revise import LoopConfig, LoopResult, revise_loop

__all__ = ["LoopConfig", "LoopResult", "revise_loop"]
