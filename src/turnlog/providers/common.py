"""What every provider module shares: violations and neutral-content helpers."""

from __future__ import annotations

from typing import Any

import msgspec

from turnlog.events import Content


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    """One rule a provider would reject the request for, located by index."""

    index: int
    message: str
    call_id: str | None = None


def parts_of(content: Content) -> list[dict[str, Any]]:
    """Content as a list of parts; a string is one text part (none if empty)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def text_of(content: Content) -> str:
    """The text of the text parts, joined by blank lines."""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        part["text"]
        for part in content
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]
    )


def arguments_object(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments as a JSON object, whatever form they were stored in."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            decoded = msgspec.json.decode(arguments)
        except msgspec.DecodeError:
            return {"input": arguments}
        return decoded if isinstance(decoded, dict) else {"input": decoded}
    return {} if arguments is None else {"input": arguments}


def arguments_json(arguments: Any) -> str:
    """Tool-call arguments as the JSON string OpenAI's APIs carry."""
    if isinstance(arguments, str):
        return arguments
    return msgspec.json.encode(arguments if arguments is not None else {}).decode()
