"""Tool calls that small models write as text instead of making them.

A model served without (working) tool-call parsing, or one too small to use its chat
template's format, often answers a tool-enabled request with the call in its reply text.
:func:`tool_calls_from_text` recognises the forms seen in practice (Qwen2.5-Coder 0.5B and
1.5B on llama.cpp's server among them; see tests/unit/test_text_tools.py for recorded
replies):

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``: Qwen's and Hermes' own
  format (the closing tag may be missing at the end of the reply). When a reply has such
  tags, only the calls inside them count;
- a JSON object with ``name`` and ``arguments`` (or ``parameters``, ``args``, ``input``),
  in a code fence or bare, with prose around it or not; ``arguments`` may be a JSON string,
  as OpenAI's wire format has it;
- the same under ``{"function": {...}}`` (``{"type": "function", ...}``), a
  ``{"tool_calls": [...]}`` or ``{"function_call": {...}}`` wrapper, and a list of calls;
- ``{"tool": ..., "args"/"arguments"/"tool_input": ...}`` and LangChain's JSON-agent
  ``{"action": ..., "action_input": ...}``.

Only names in ``tool_names`` count (a name written ``functions.write_file`` or
``write_file()`` is read as ``write_file``); the arguments must be an object. A tool's
definition echoed back (with a ``description``, or a JSON schema as its parameters) is no
call. A call is
given the id ``text-call-<n>`` (n from 1, in reply order), the same for the same text.
The function never raises: garbage in, no calls out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.messages.tool import tool_call

from agent.models.reply_json import MAX_TEXT, json_values

ID_PREFIX = "text-call"
MAX_CALLS = 16

_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|(?=<tool_call>)|\Z)", re.S | re.I)
_NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "action_input", "params")
_WRAPPERS = ("tool_calls", "function_call", "tool_call", "calls")


def tool_calls_from_text(
    text: str, tool_names: Collection[str], *, id_prefix: str = ID_PREFIX
) -> list[ToolCall]:
    """The calls to ``tool_names`` written in ``text``, in order; [] when there are none.

    Identical calls (same name and arguments) are kept once: a model that writes its call
    in a fence and again in prose meant one call."""
    try:
        return _calls(text, tool_names, id_prefix)
    except Exception:  # never take a subagent down over a reply it could not read
        return []


def has_text_tool_call(text: str, tool_names: Collection[str]) -> bool:
    """Whether ``text`` holds at least one call to one of ``tool_names``."""
    return bool(tool_calls_from_text(text, tool_names))


def _calls(text: str, tool_names: Collection[str], id_prefix: str) -> list[ToolCall]:
    if not isinstance(text, str) or not text.strip():
        return []
    names = {str(n) for n in tool_names}
    if not names:
        return []
    text = text[:MAX_TEXT]
    tagged = [m.group(1) for m in _TAG.finditer(text)]
    sources = tagged if tagged else [text]
    found: list[tuple[str, dict[str, Any]]] = []
    for source in sources:
        for _, value in json_values(source):
            for name, args in _from_value(value, names, depth=0):
                if (name, args) not in found:
                    found.append((name, args))
                if len(found) >= MAX_CALLS:
                    break
    if not found and "write_file" in names:
        found = [("write_file", args) for args in _loose_writes(text)][:MAX_CALLS]
    return [
        tool_call(name=name, args=args, id=f"{id_prefix}-{n}")
        for n, (name, args) in enumerate(found, 1)
    ]


_LOOSE_WRITE = re.compile(
    r'"name"\s*:\s*"write_file"(?P<rest>.*?)"content"\s*:\s*"(?P<content>.*)"\s*\}\s*\}', re.S
)
_LOOSE_PATH = re.compile(r'"path"\s*:\s*"(?P<path>[^"\\]+)(?:"|$)')
_BARE_QUOTE = re.compile(r'(?<!\\)"')


def _loose_writes(text: str) -> Iterator[dict[str, Any]]:
    """A ``write_file`` call written as JSON that does not parse because its ``content``
    holds bare quotes (a Python docstring's triple quotes, as Qwen2.5-Coder writes them):
    the content is everything up to the last quote before the closing braces, its escapes
    read as JSON's, its bare quotes as quotes. One call at most (the content runs to the
    end of the last object, so two such calls cannot be told apart)."""
    found = _LOOSE_WRITE.search(text)
    if found is None:
        return
    raw = found["content"]
    path = _LOOSE_PATH.search(found["rest"])
    if path is None:  # "path" written after "content": the greedy content swallowed it
        path = _LOOSE_PATH.search(raw)
        if path is None:
            return
        raw = raw[: path.start()].rstrip().rstrip(",").rstrip().removesuffix('"')
    try:
        content = json.loads('"' + _BARE_QUOTE.sub('\\"', raw) + '"', strict=False)
    except json.JSONDecodeError:
        content = raw.replace("\\n", "\n").replace('\\"', '"')
    if isinstance(content, str) and content.strip():
        yield {"path": path["path"], "content": content}


_FENCED = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*\r?\n(.*?)\r?\n?```", re.S)
_LANGUAGES = {  # the fence tags of a file's suffix, the one to write first
    ".py": ("python", "py", "python3"),
    ".md": ("markdown", "md"),
    ".json": ("json",),
    ".sql": ("sql",),
    ".js": ("javascript", "js"),
    ".ts": ("typescript", "ts"),
    ".sh": ("bash", "sh", "shell"),
    ".yaml": ("yaml", "yml"),
    ".yml": ("yaml", "yml"),
    ".toml": ("toml",),
    ".html": ("html",),
    ".csv": ("csv",),
    ".txt": ("text", "txt"),
}


def fenced_file(text: str, path: str) -> str | None:
    """The content of ``path`` when a reply that made no tool call holds it as the one code
    fence of the file's language (or an untagged one): small models asked to write a file
    through a tool often answer with the file in a fence instead, where code is not escaped
    into a JSON string (which they get wrong). None when there is no such fence, or more
    than one (which one would be the file is a guess)."""
    if not isinstance(text, str) or "```" not in text:
        return None
    accepted = {*_LANGUAGES.get(_suffix(path), ()), ""}
    blocks = [
        body
        for tag, body in _FENCED.findall(text[:MAX_TEXT])
        if tag.lower() in accepted and body.strip()
    ]
    if len(blocks) != 1:
        return None
    return blocks[0] if blocks[0].endswith("\n") else blocks[0] + "\n"


def fence_language(path: str) -> str:
    """The tag to fence the file ``path`` with ("" when its suffix has none)."""
    return next(iter(_LANGUAGES.get(_suffix(path), ())), "")


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _from_value(value: Any, names: set[str], depth: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The calls one parsed JSON value holds: itself, a list of calls, or a wrapper."""
    if depth > 3:
        return
    if isinstance(value, list):
        for item in value[:MAX_CALLS]:
            yield from _from_value(item, names, depth + 1)
        return
    if not isinstance(value, Mapping):
        return
    for key in _WRAPPERS:
        inner = value.get(key)
        if isinstance(inner, list | Mapping):
            yield from _from_value(inner, names, depth + 1)
            return
    call = _one_call(value, names)
    if call is not None:
        yield call


def _one_call(value: Mapping[str, Any], names: set[str]) -> tuple[str, dict[str, Any]] | None:
    function = value.get("function")
    if isinstance(function, Mapping):  # {"type": "function", "function": {...}}
        return _one_call(function, names)
    for name_key in _NAME_KEYS:
        name = _tool_name(value.get(name_key), names)
        if name is None:
            continue
        present = [k for k in _ARG_KEYS if k in value]
        if not present:
            # {"name": "list_files"} alone is a call with no arguments; an object with
            # other keys beside the name is something else that happens to have a name
            return (name, {}) if len(value) == 1 else None
        if "description" in value:  # a tool's definition echoed back, not a call
            return None
        args = _arguments(value[present[0]])
        return (name, args) if args is not None and not _is_schema(args) else None
    return None


_SCHEMA_KEYS = {"type", "properties", "required", "additionalProperties", "title", "description"}


def _is_schema(args: Mapping[str, Any]) -> bool:
    """Arguments that are a JSON schema (``{"type": "object", "properties": ...}``): the
    tool's parameters echoed back, not values for them."""
    return args.get("type") == "object" and set(args) <= _SCHEMA_KEYS


def _tool_name(raw: Any, names: set[str]) -> str | None:
    if not isinstance(raw, str):
        return None
    name = raw.strip()
    if name in names:
        return name
    name = re.sub(r"^(?:functions|tools)\.", "", name)
    name = re.sub(r"\(.*\)$", "", name).strip()
    return name if name in names else None


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        for _, value in json_values(raw):
            return dict(value) if isinstance(value, Mapping) else None
    return None


__all__ = ["ID_PREFIX", "fenced_file", "has_text_tool_call", "tool_calls_from_text"]
