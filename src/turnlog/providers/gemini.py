"""Gemini generateContent: render contents from the neutral transcript, validate the pairing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnlog.core.fold import Message
from turnlog.providers.common import Violation, arguments_object, parts_of
from turnlog.text import message_text

NAME = "gemini"


def _model_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in parts_of(message.content):
        kind = part.get("type")
        signature = part.get("thought_signature")
        if kind not in ("text", "thought") or not (part.get("text") or signature):
            continue
        rendered: dict[str, Any] = {"text": part.get("text", "")}
        if kind == "thought":
            rendered["thought"] = True
        if signature:
            rendered["thoughtSignature"] = signature
        parts.append(rendered)
    for call in message.tool_calls:
        rendered = {
            "functionCall": {
                "id": call.id,
                "name": call.name,
                "args": arguments_object(call.arguments),
            }
        }
        if call.extra and call.extra.get("thought_signature"):
            rendered["thoughtSignature"] = call.extra["thought_signature"]
        parts.append(rendered)
    return parts


def render(messages: Sequence[Message]) -> dict[str, Any]:
    """`{"systemInstruction"?: {...}, "contents": [...]}` for `generateContent`.

    All results for one model turn go into one user content, as many
    `functionResponse` parts as there were `functionCall` parts, followed by
    any user text. Thought signatures are replayed where they were.
    """
    system: list[str] = []
    contents: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for message in messages:
        if message.role == "system":
            if text := message_text(message.content):
                system.append(text)
        elif message.role == "assistant":
            add("model", _model_parts(message))
        elif message.role == "tool":
            key = "error" if message.is_error else "output"
            add(
                "user",
                [
                    {
                        "functionResponse": {
                            "id": message.call_id,
                            "name": message.name or "tool",
                            "response": {key: message_text(message.content)},
                        }
                    }
                ],
            )
        elif text := message_text(message.content):
            add("user", [{"text": text}])
    payload: dict[str, Any] = {"contents": contents}
    if system:
        payload["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    return payload


def validate(payload: dict[str, Any]) -> list[Violation]:
    """Alternating roles from a user turn, and after every model turn with
    function calls, a user turn with the same number of function responses."""
    violations: list[Violation] = []
    contents = payload.get("contents", [])
    if not contents:
        return [Violation(index=0, message="contents must not be empty")]
    if contents[0].get("role") != "user":
        violations.append(Violation(index=0, message="the first content must have the user role"))
    pending: list[str] = []
    for index, content in enumerate(contents):
        role = content.get("role")
        parts = content.get("parts") or []
        if role not in ("user", "model"):
            violations.append(Violation(index=index, message=f"unknown role {role!r}"))
        if not parts:
            violations.append(Violation(index=index, message="content must have at least one part"))
        if index and role == contents[index - 1].get("role"):
            violations.append(
                Violation(
                    index=index, message="multiturn requests must alternate between user and model"
                )
            )
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        if role == "user":
            answered = [str(r.get("id") or r.get("name")) for r in responses]
            if pending or responses:
                if len(responses) != len(pending):
                    violations.append(
                        Violation(
                            index=index,
                            message="the number of function response parts must equal the number "
                            "of function call parts of the function call turn",
                            call_id=next((c for c in pending if c not in answered), None),
                        )
                    )
                for call_id in answered:
                    if call_id not in pending:
                        violations.append(
                            Violation(
                                index=index,
                                message="function response without its function call",
                                call_id=call_id,
                            )
                        )
            pending = []
        else:
            if pending:
                for call_id in pending:
                    violations.append(
                        Violation(
                            index=index - 1,
                            message="function call without a function response",
                            call_id=call_id,
                        )
                    )
            pending = [str(c.get("id") or c.get("name")) for c in calls]
    for call_id in pending:
        violations.append(
            Violation(
                index=len(contents) - 1,
                message="function call without a function response",
                call_id=call_id,
            )
        )
    return violations
