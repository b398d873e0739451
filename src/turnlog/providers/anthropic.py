"""The Anthropic Messages API: render the neutral transcript, validate the pairing rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnlog.core.fold import Message
from turnlog.providers.common import Violation, arguments_object, parts_of
from turnlog.text import message_text

NAME = "anthropic"
# Blocks replayed verbatim: signed reasoning must come back byte for byte.
_VERBATIM = frozenset({"thinking", "redacted_thinking"})
# User-side blocks the API accepts as they are.
_USER_NATIVE = frozenset({"image", "document"})


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    blocks = []
    for part in parts_of(content):
        kind = part.get("type")
        if kind == "text" and _has_text(part):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind in _USER_NATIVE:
            blocks.append(dict(part))
    return blocks


def _has_text(part: dict[str, Any]) -> bool:
    """The API rejects a text block that is empty or only white space."""
    text = part.get("text")
    return isinstance(text, str) and not text.isspace() and bool(text)


def _result_block(message: Message) -> dict[str, Any]:
    text = message_text(message.content)
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.call_id,
        "content": text if text and not text.isspace() else "(empty result)",
    }
    if message.is_error:
        block["is_error"] = True
    return block


def render(messages: Sequence[Message]) -> dict[str, Any]:
    """`{"system"?: str, "messages": [...]}` for `messages.create`.

    Tool results and a user message after them become one user message,
    results first. Assistant content keeps its order and its signed blocks.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add_user(blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "user", "content": blocks})

    for message in messages:
        if message.role == "system":
            if text := message_text(message.content):
                system.append(text)
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            for part in parts_of(message.content):
                kind = part.get("type")
                if kind in _VERBATIM:
                    blocks.append(part)
                elif kind == "text" and _has_text(part):
                    blocks.append({"type": "text", "text": part["text"]})
            for call in message.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": arguments_object(call.arguments),
                    }
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif message.role == "tool":
            add_user([_result_block(message)])
        else:
            add_user(_user_blocks(message.content))
    payload: dict[str, Any] = {"messages": out}
    if system:
        payload["system"] = "\n\n".join(system)
    return payload


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def validate(payload: dict[str, Any]) -> list[Violation]:
    """Every rule of the Messages API that the pairing of a transcript can break."""
    violations: list[Violation] = []
    messages = payload.get("messages", [])
    if not messages:
        return [Violation(index=0, message="messages must not be empty")]
    if messages[0].get("role") != "user":
        violations.append(Violation(index=0, message="the first message must use the user role"))
    seen_uses: set[str] = set()
    previous_uses: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        blocks = _blocks(message)
        if role not in ("user", "assistant"):
            violations.append(Violation(index=index, message=f"unknown role {role!r}"))
        if not blocks:
            violations.append(Violation(index=index, message="message content must not be empty"))
        for block in blocks:
            if block.get("type") == "text" and not _has_text(block):
                violations.append(
                    Violation(
                        index=index,
                        message="text content blocks must contain non-whitespace text",
                    )
                )
            if block.get("type") == "thinking" and not block.get("signature"):
                violations.append(
                    Violation(index=index, message="thinking block without its signature")
                )
        if role == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            leading = 0
            while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
                leading += 1
            if len(results) > leading:
                violations.append(
                    Violation(
                        index=index,
                        message="tool_result blocks must come first in the user message",
                    )
                )
            answered: list[str] = [str(b.get("tool_use_id")) for b in results]
            for call_id in answered:
                if call_id not in previous_uses:
                    violations.append(
                        Violation(
                            index=index,
                            message="tool_result block without a matching tool_use "
                            "in the previous message",
                            call_id=call_id,
                        )
                    )
            for call_id in set(answered):
                if answered.count(call_id) > 1:
                    violations.append(
                        Violation(
                            index=index, message="tool_use id answered twice", call_id=call_id
                        )
                    )
            previous_uses = []
            continue
        uses = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        for call_id in uses:
            if call_id in seen_uses:
                violations.append(
                    Violation(index=index, message="tool_use ids must be unique", call_id=call_id)
                )
            seen_uses.add(call_id)
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered_next: set[str] = set()
        if following is not None and following.get("role") == "user":
            answered_next = {
                str(b.get("tool_use_id"))
                for b in _blocks(following)
                if b.get("type") == "tool_result"
            }
        for call_id in uses:
            if call_id not in answered_next:
                violations.append(
                    Violation(
                        index=index,
                        message="tool_use ids were found without tool_result blocks "
                        "immediately after",
                        call_id=call_id,
                    )
                )
        previous_uses = uses
    return violations
