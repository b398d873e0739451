"""Recognise a foreign transcript from its first line: a leaf below the stores and formats."""

from __future__ import annotations

from typing import Any, Final

import msgspec

CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"

# Members only Claude Code's transcript lines carry.
_CLAUDE_KEYS: Final = frozenset({"parentUuid", "sessionId", "leafUuid", "isSidechain", "userType"})
_CLAUDE_TYPES: Final = frozenset({"summary", "file-history-snapshot"})
# Codex rollout line types (the envelope format) and the legacy first line.
_CODEX_TYPES: Final = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def sniff(first_line: bytes) -> str | None:
    """`"claude-code"`, `"codex"`, or None for anything else (or nothing JSON)."""
    try:
        record: Any = msgspec.json.decode(first_line.strip())
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    if _CLAUDE_KEYS & record.keys() or record.get("type") in _CLAUDE_TYPES:
        return CLAUDE_CODE
    if record.get("type") in _CODEX_TYPES and "payload" in record:
        return CODEX
    if {"id", "timestamp", "instructions"} <= record.keys() or "record_type" in record:
        return CODEX
    return None


def foreign_hint(first_line: bytes) -> str:
    """The hint for a file that is not a turnlog session."""
    kind = sniff(first_line)
    if kind is not None:
        return (
            f"this looks like a {'Claude Code' if kind == CLAUDE_CODE else 'Codex'} transcript: "
            f"`turnlog doctor {kind} FILE` repairs it in place by appending, and "
            f"`turnlog import {kind} FILE` copies it into a turnlog store; it was left unchanged"
        )
    return (
        "a turnlog session starts with a 'session' header line; this file was left unchanged. "
        "Claude Code and Codex transcripts go through `turnlog doctor` or `turnlog import`"
    )
