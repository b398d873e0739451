"""The request invariant: what a model request carries is what the log holds."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, Literal

from turnlog.core.fold import Message
from turnlog.errors import TurnlogError, UsageError
from turnlog.providers import render, validate
from turnlog.providers.common import parts_of, unique_call_ids
from turnlog.text import message_text

CheckMode = Literal["warn", "strict", "off"]
CHECK_MODES: Final = ("warn", "strict", "off")

_log = logging.getLogger("turnlog.models")

# One entry of a conversation as both sides can be read: who said it, and
# the text, call or result it carries.
Entry = tuple[Any, ...]


class RequestCheckError(TurnlogError):
    """A model request that would not carry the log as it is."""

    hint = (
        "the request was not sent; report the session (turnlog show SESSION) with this "
        "message, or pass check='warn' to send and log instead"
    )


def expected_entries(messages: Sequence[Message]) -> list[Entry]:
    """The conversation the log holds, in order: system text is left out
    (providers carry it beside the messages)."""
    out: list[Entry] = []
    for message in unique_call_ids(messages):
        if message.role == "system":
            continue
        if message.role == "tool":
            out.append(("result", str(message.call_id)))
            continue
        text = message_text(message.content)
        if text:
            out.append((message.role, text))
        for call in message.tool_calls:
            out.append(("call", call.id, call.name))
    return out


def _anthropic_entries(payload: dict[str, Any]) -> list[Entry]:
    out: list[Entry] = []
    for message in payload.get("messages", []):
        role = message.get("role")
        texts: list[str] = []
        tail: list[Entry] = []
        for block in parts_of(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "tool_use":
                tail.append(("call", block.get("id"), block.get("name")))
            elif kind == "tool_result":
                out.append(("result", block.get("tool_use_id")))
        if texts:
            # A user message after results is merged into the results' message.
            out.append((role, "\n".join(texts)))
        out.extend(tail)
    return out


def _chat_entries(payload: dict[str, Any]) -> list[Entry]:
    out: list[Entry] = []
    for message in payload.get("messages", []):
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            out.append(("result", message.get("tool_call_id")))
            continue
        if message.get("content"):
            out.append((role, message_text(message["content"])))
        for call in message.get("tool_calls") or ():
            out.append(("call", call.get("id"), call.get("function", {}).get("name")))
    return out


def _responses_entries(payload: dict[str, Any]) -> list[Entry]:
    out: list[Entry] = []
    for item in payload.get("input", []):
        kind = item.get("type")
        if kind == "function_call":
            out.append(("call", item.get("call_id"), item.get("name")))
        elif kind == "function_call_output":
            out.append(("result", item.get("call_id")))
        elif kind == "message" and item.get("role") != "system":
            content = item.get("content")
            text = (
                content
                if isinstance(content, str)
                else "\n".join(p.get("text", "") for p in content)
            )
            if text:
                out.append((item["role"], text))
    return out


_READERS = {
    "anthropic": _anthropic_entries,
    "openai-chat": _chat_entries,
    "openai-responses": _responses_entries,
}


def _normalise(entries: list[Entry]) -> list[Entry]:
    # Consecutive texts of one role may be joined by a provider's rendering.
    out: list[Entry] = []
    for entry in entries:
        if out and entry[0] in ("user", "assistant") and out[-1][0] == entry[0]:
            out[-1] = (entry[0], out[-1][1] + "\n" + entry[1])
        else:
            out.append(entry)
    return [(e[0], " ".join(e[1].split())) if e[0] in ("user", "assistant") else e for e in out]


def check_request(
    provider: str, payload: dict[str, Any], messages: Sequence[Message], mode: CheckMode
) -> list[str]:
    """Check a request before it is sent: the provider's pairing rules hold, and
    it carries the log's roles, texts, calls and ids in the log's order, with
    no result before its call. Returns the problems; `strict` raises on any,
    `warn` logs them, `off` checks nothing."""
    if mode not in CHECK_MODES:
        raise UsageError(f"check must be one of {CHECK_MODES}, not {mode!r}")
    if mode == "off":
        return []
    problems = [f"at {v.index}: {v.message}" for v in validate(provider, payload)]
    sent = _normalise(_READERS[provider](payload))
    held = _normalise(expected_entries(messages))
    if sent != held:
        at = next(
            (i for i, (a, b) in enumerate(zip(sent, held, strict=False)) if a != b),
            min(len(sent), len(held)),
        )
        problems.append(
            f"the request differs from the log at entry {at}: sends "
            f"{sent[at] if at < len(sent) else 'nothing'}, the log holds "
            f"{held[at] if at < len(held) else 'nothing'}"
        )
    if problems:
        message = f"{provider} request breaks the request invariant: " + "; ".join(problems)
        if mode == "strict":
            raise RequestCheckError(message)
        _log.warning(message)
    return problems


def rendered(provider: str, messages: Sequence[Message], mode: CheckMode) -> dict[str, Any]:
    """The provider request for the log's transcript, checked before it is sent."""
    payload = render(provider, messages)
    check_request(provider, payload, messages, mode)
    return payload
