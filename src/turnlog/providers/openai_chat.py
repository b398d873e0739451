"""OpenAI Chat Completions: render the neutral transcript, validate the pairing rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnlog.core.fold import Message
from turnlog.providers.common import Violation, arguments_json
from turnlog.text import message_text

NAME = "openai-chat"


def render(messages: Sequence[Message]) -> dict[str, Any]:
    """`{"messages": [...]}` for `chat.completions.create`.

    Chat Completions takes no reasoning input, so reasoning parts are left
    out; each result is a `tool` message right after its assistant message.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        text = message_text(message.content)
        if message.role == "system":
            if text:
                out.append({"role": "system", "content": text})
        elif message.role == "assistant":
            if not text and not message.tool_calls:
                continue
            rendered: dict[str, Any] = {"role": "assistant", "content": text or None}
            if message.tool_calls:
                rendered["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": arguments_json(call.arguments),
                        },
                    }
                    for call in message.tool_calls
                ]
            out.append(rendered)
        elif message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.call_id,
                    "content": text or "(empty result)",
                }
            )
        elif text:
            # A notice styled as the system's speaks in the developer role,
            # which Chat Completions has inside the conversation.
            role = "developer" if message.render_as == "system" else "user"
            out.append({"role": role, "content": text})
    return {"messages": out}


def validate(payload: dict[str, Any]) -> list[Violation]:
    """Every tool call answered by one `tool` message right after its assistant
    message, no `tool` message without its call, no empty messages."""
    violations: list[Violation] = []
    messages = payload.get("messages", [])
    if not messages:
        return [Violation(index=0, message="messages must not be empty")]
    open_calls: set[str] = set()
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                violations.append(
                    Violation(
                        index=index,
                        message="messages with role 'tool' must be a response to a preceding "
                        "message with 'tool_calls'",
                        call_id=call_id,
                    )
                )
            elif call_id in answered:
                violations.append(
                    Violation(index=index, message="tool call answered twice", call_id=call_id)
                )
            answered.add(str(call_id))
            continue
        for call_id in sorted(open_calls - answered):
            violations.append(
                Violation(
                    index=index - 1,
                    message="an assistant message with 'tool_calls' must be followed by tool "
                    "messages responding to each 'tool_call_id'",
                    call_id=call_id,
                )
            )
        open_calls, answered = set(), set()
        if role not in ("system", "developer", "user", "assistant"):
            violations.append(Violation(index=index, message=f"unknown role {role!r}"))
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") in (None, "") and not calls:
                violations.append(
                    Violation(
                        index=index, message="an assistant message needs content or tool_calls"
                    )
                )
            open_calls = {str(call.get("id")) for call in calls}
        elif not message.get("content"):
            violations.append(Violation(index=index, message=f"empty {role} message"))
    for call_id in sorted(open_calls - answered):
        violations.append(
            Violation(
                index=len(messages) - 1,
                message="an assistant message with 'tool_calls' must be followed by tool "
                "messages responding to each 'tool_call_id'",
                call_id=call_id,
            )
        )
    return violations
