"""The ``finalize`` node: the run's last AI message and its ``Result``
(``agent.graph.result``) in state.

The message is what a chat front end (agent-chat-ui, Studio's chat) shows as the result
itself, not only "Done: x.md": the answer, then the main artifact — its content when it is
text and small, else its path and a short excerpt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from agent.graph.inputs import StateView, thread_id
from agent.graph.result import build_result, failure_text
from agent.vfs.quoting import code_span, fenced_block, screen_text
from agent.vocabulary import FileStatus, Status, StopReason

__all__ = [
    "EXCERPT_CHARS",
    "INLINE_LIMIT",
    "final_message",
    "finalize",
    "main_artifact",
]

INLINE_LIMIT = 6_000
"""Characters up to which the main artifact is shown whole."""
EXCERPT_CHARS = 800
"""Characters of a larger artifact shown as its excerpt."""
REASON_CHARS = 1000
"""Characters of a failed run's reason, or of one line of the final answer, shown."""
ANSWER_LINES = 60
"""Lines of the final answer shown."""
PATH_CHARS = 300
"""Characters of an artifact's path shown (escaped)."""
_FENCES = {
    ".py": "python",
    ".sql": "sql",
    ".json": "json",
    ".js": "javascript",
    ".ts": "ts",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
}


def finalize(state: StateView) -> dict[str, Any]:
    """The final answer as an AI message and the ``Result`` in state."""
    last = (state.get("decisions") or [{}])[-1]
    files, plan = state.get("files") or {}, state.get("plan")
    update: dict[str, Any] = {"dispatch": []}
    if state.get("status") == Status.FAILED:
        update["messages"] = [AIMessage(failure_text(state))]
    elif state.get("stop_reason") == StopReason.ACCEPTED_BY_HUMAN:
        done = [p for p, e in files.items() if e.get("status") == FileStatus.DONE]
        text = "Accepted as they are." + (
            f" Artifacts done: {', '.join(screen_text(p, PATH_CHARS) for p in sorted(done))}."
            if done
            else ""
        )
        update["messages"] = [AIMessage(final_message(text, plan, files))]
    else:
        answer = final_message(shown_lines(last.get("final_answer") or "Done."), plan, files)
        update |= {
            "status": Status.SUCCESS.value,
            "stop_reason": StopReason.END.value,
            "messages": [AIMessage(answer)],
        }
    return update | {"result": build_result({**state, **update}, thread_id())}


def main_artifact(plan: Mapping[str, Any] | None, files: Mapping[str, Any]) -> str | None:
    """The artifact the goal was for: the output of the last step that no other step depends
    on (the plan's sink) and that exists, else the last existing step output."""
    steps: Sequence[Mapping[str, Any]] = (plan or {}).get("steps") or []
    needed = {d for s in steps for d in s.get("depends_on") or ()}
    outputs = [s["expected_output"] for s in steps if s.get("expected_output") in files]
    sinks = [s["expected_output"] for s in steps if s["step_id"] not in needed]
    present_sinks = [p for p in sinks if p in files]
    if present_sinks:
        return present_sinks[-1]
    return outputs[-1] if outputs else None


def _is_text(content: object) -> bool:
    return isinstance(content, str) and "\x00" not in content


def _shown(path: str, content: str) -> str:
    """The artifact as a fenced block (with its language when known): its text as written,
    markdown and HTML included, never live markup on a chat screen (a report's image link
    would make the reader's browser fetch it, a way out of a sandbox with no network)."""
    suffix = path[path.rfind(".") :].lower() if "." in path else ""
    return fenced_block(content.rstrip("\n"), _FENCES.get(suffix, "text"))


def shown_lines(text: str) -> str:
    """A model's answer, which may quote what an artifact wrote, as the chat shows it: each
    line through :func:`agent.vfs.quoting.screen_text`, at most ``ANSWER_LINES`` lines."""
    lines = str(text).splitlines()[:ANSWER_LINES]
    return "\n".join(screen_text(line, REASON_CHARS) if line.strip() else "" for line in lines)


def final_message(
    answer: str, plan: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]
) -> str:
    """``answer`` followed by the main artifact (whole when small text, else an excerpt)."""
    path = main_artifact(plan, files)
    if path is None:
        return answer
    entry = files[path]
    content = entry.get("content")
    status = entry.get("status", FileStatus.ACTIVE)
    # the path is the model's choice, and may be markup of its own: shown as text
    head = (
        f"{answer}\n\n**{screen_text(path, PATH_CHARS)}** ({status}, {entry.get('bytes', 0)} bytes)"
    )
    if not _is_text(content) or not content:
        return head
    assert isinstance(content, str)
    if len(content) <= INLINE_LIMIT:
        return f"{head}\n\n{_shown(path, content)}"
    excerpt = content[:EXCERPT_CHARS].rstrip()
    more = len(content) - len(excerpt)
    return (
        f"{head}\n\n{_shown(path, excerpt)}\n\n… {more} more characters: "
        f"{code_span(f'deepreflect show THREAD --file {path}')} or "
        "`deepreflect export THREAD DIR`."
    )
