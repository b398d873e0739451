"""Message content (`Content`) and its text in the three senses turnlog needs, each by name."""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec

#: Message content: a string (one text part) or a list of provider-neutral
#: parts such as {"type": "text", "text": ...} or opaque reasoning, kept verbatim.
#: Defined beside the rules that read it; `turnlog.events` re-exports it.
Content: TypeAlias = str | list[dict[str, Any]]


def display_text(content: Content) -> str:
    """Every part's text, one per line: what a person reads and searches
    (`show`, the demo). Reasoning and other parts that carry text count."""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part.get("text"), str))


def message_text(content: Content) -> str:
    """The text of the `text` parts only, joined by blank lines: what a
    provider request carries as a message's text (no reasoning, no empty
    parts)."""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        part["text"]
        for part in content
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]
    )


def says_something(content: Content) -> bool:
    """True when a provider request would carry text for `content`: a
    message of only empty or white-space text is dropped by every export."""
    text = message_text(content)
    return bool(text) and not text.isspace()


def foreign_text(value: Any) -> str:
    """Plain text of a content value another program wrote (a Claude Code or
    Codex transcript, a framework's tool output): a string, a list of blocks,
    or an object, read by its `text`, `content` or `output` member, else as
    its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(foreign_text(item) for item in value if item is not None)
    if isinstance(value, dict):
        for key in ("text", "content", "output"):
            if key in value:
                return foreign_text(value[key])
    return msgspec.json.encode(value).decode()
