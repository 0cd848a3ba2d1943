"""What a markdown screen (agent-chat-ui, Studio) makes of a text: the markup it would
render, and the words a reader sees; shared by the tests of text that reaches a screen."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u2069")
"""Terminal escapes and bidi controls: none may reach a screen."""
CARD_LAYOUT = {
    "paragraph_open",
    "paragraph_close",
    "strong_open",
    "strong_close",
    "code_inline",
    "bullet_list_open",
    "bullet_list_close",
    "list_item_open",
    "list_item_close",
}
"""The markup of the review card's own layout: bold headings, and lists of code spans."""
_MARKDOWN = MarkdownIt("commonmark")
# what GFM's autolinks would link although CommonMark does not (escaped, they are not)
_BARE_LINK = re.compile(r"(?<!\\)(?::(?=//)|(?<=www)\.|@)")


def rendered(text: str) -> tuple[list[str], str]:
    """What a markdown renderer makes of ``text``: the kinds of markup other than plain
    text and paragraphs, and the text a reader sees."""
    kinds, seen = [], []
    for block in _MARKDOWN.parse(text):
        if block.type not in ("paragraph_open", "paragraph_close", "inline"):
            kinds.append(block.type)
        for child in block.children or []:
            if child.type == "text":
                seen.append(child.content)
            elif child.type != "softbreak":
                kinds.append(child.type)
    return kinds, "".join(seen)


def assert_plain(text: str) -> str:
    """``text`` renders as plain text, with no control code and no bare link; its words."""
    kinds, seen = rendered(text)
    assert kinds == [], (kinds, text)
    assert not any(c in text for c in CONTROLS), text
    assert not _BARE_LINK.search(text), text
    return seen
