"""What every provider module shares: violations and neutral-content helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from turnlog.core.fold import Message
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


def reused_id(call_id: str, use: int) -> str:
    """The id a provider request gives the `use`-th request of a reused call id."""
    return f"{call_id}__{use}"


def original_id(call_id: str) -> str:
    """The id a request's call had in the log, from the one `reused_id` gave it."""
    head, sep, tail = call_id.rpartition("__")
    return head if sep and tail.isdigit() else call_id


def unique_call_ids(messages: Sequence[Message]) -> list[Message]:
    """The transcript with every tool call id unique, as every provider wants.

    Call ids may repeat across turns in a log (some models number their calls
    afresh each turn); a provider rejects the repeat. The first use of an id is
    kept as it is; a later request reusing it becomes `<id>__2`, `<id>__3`, …,
    and so do the results that answer that request (those after it). Letters,
    digits, `_` and `-` only: Anthropic refuses a `tool_use` id with any other
    character.
    """
    seen: dict[str, int] = {}
    current: dict[str, str] = {}
    out: list[Message] = []
    # Every id the transcript uses as it is: a new name never takes one.
    taken = {call.id for message in messages for call in message.tool_calls}
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = []
            for call in message.tool_calls:
                uses = seen.get(call.id, 0) + 1
                seen[call.id] = uses
                renamed = call.id
                if uses > 1:
                    renamed = reused_id(call.id, uses)
                    while renamed in taken:
                        uses += 1
                        renamed = reused_id(call.id, uses)
                    seen[call.id] = uses
                    taken.add(renamed)
                current[call.id] = renamed
                calls.append(
                    call if renamed == call.id else msgspec.structs.replace(call, id=renamed)
                )
            if any(a is not b for a, b in zip(calls, message.tool_calls, strict=True)):
                message = msgspec.structs.replace(message, tool_calls=tuple(calls))
        elif message.role == "tool" and message.call_id is not None:
            renamed = current.get(message.call_id, message.call_id)
            if renamed != message.call_id:
                message = msgspec.structs.replace(message, call_id=renamed)
        out.append(message)
    return out
