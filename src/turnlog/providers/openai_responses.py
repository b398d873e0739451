"""OpenAI Responses: render input items from the neutral transcript, validate the pairing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnlog.core.fold import Message
from turnlog.providers.common import Violation, arguments_json, parts_of
from turnlog.text import message_text

NAME = "openai-responses"


def render(messages: Sequence[Message]) -> dict[str, Any]:
    """`{"input": [...]}` for `responses.create`.

    Reasoning items (with `encrypted_content`) are replayed verbatim, in
    their place, followed by the message or function call they led to. A
    reasoning item that led to nothing the transcript holds (a crash right
    after it, a server-side item not imported, another reasoning item) is
    left out: the API refuses a reasoning item without its following item,
    and the item is opaque model state, never something the model said.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            text: list[str] = []
            held: dict[str, Any] | None = None
            for part in parts_of(message.content):
                if part.get("type") == "reasoning":
                    if text:
                        items.append(
                            {"type": "message", "role": "assistant", "content": "\n\n".join(text)}
                        )
                        text = []
                    # A reasoning item right before another led to nothing.
                    held = part
                elif part.get("type") == "text" and part.get("text"):
                    if held is not None:
                        items.append(held)
                        held = None
                    text.append(part["text"])
            if text:
                items.append({"type": "message", "role": "assistant", "content": "\n\n".join(text)})
            for call in message.tool_calls:
                if held is not None:
                    items.append(held)
                    held = None
                item: dict[str, Any] = {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": arguments_json(call.arguments),
                }
                if call.extra and isinstance(call.extra.get("item_id"), str):
                    item["id"] = call.extra["item_id"]
                items.append(item)
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.call_id,
                    "output": message_text(message.content) or "(empty result)",
                }
            )
        elif text_value := message_text(message.content):
            role = "system" if message.role == "system" else "user"
            if message.render_as == "system":
                role = "developer"  # a notice styled as the system's
            items.append(
                {
                    "type": "message",
                    "role": role,
                    "content": [{"type": "input_text", "text": text_value}],
                }
            )
    return {"input": items}


def validate(payload: dict[str, Any]) -> list[Violation]:
    """One `function_call_output` per `call_id`, none without its call, and every
    reasoning item followed by the item it produced."""
    violations: list[Violation] = []
    items = payload.get("input", [])
    if not items:
        return [Violation(index=0, message="input must not be empty")]
    calls: dict[str, int] = {}
    outputs: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = str(item.get("call_id"))
            if call_id in calls:
                violations.append(
                    Violation(index=index, message="duplicate function call", call_id=call_id)
                )
            calls[call_id] = index
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                violations.append(
                    Violation(
                        index=index,
                        message="No tool call found for function call output",
                        call_id=call_id,
                    )
                )
            elif call_id in outputs:
                violations.append(
                    Violation(index=index, message="function call answered twice", call_id=call_id)
                )
            outputs.add(call_id)
        elif kind == "reasoning":
            following = items[index + 1] if index + 1 < len(items) else None
            if following is None or following.get("type") not in ("message", "function_call"):
                violations.append(
                    Violation(
                        index=index,
                        message="reasoning item provided without its required following item",
                    )
                )
            elif following.get("type") == "message" and following.get("role") != "assistant":
                violations.append(
                    Violation(
                        index=index, message="reasoning item must be followed by assistant output"
                    )
                )
        elif kind == "message":
            if not item.get("content"):
                violations.append(Violation(index=index, message="empty message"))
        else:
            violations.append(Violation(index=index, message=f"unknown item type {kind!r}"))
    for call_id, index in calls.items():
        if call_id not in outputs:
            violations.append(
                Violation(
                    index=index, message="No tool output found for function call", call_id=call_id
                )
            )
    return violations
