"""What a repair appends to a foreign transcript: an answer per owed call, in its tool's lines."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from turnlog.core.sniff import CLAUDE_CODE, CODEX
from turnlog.events import Risk
from turnlog.formats.builder import Transcript

_TOOL_NAMES: Final = {CLAUDE_CODE: "Claude Code", CODEX: "Codex"}
# What a repair says for a call the file leaves without a result. A foreign
# file proves only what it holds: a line showing the call started, or nothing.
# It never proves a call did not start (Claude Code records no call start at
# all, save a progress line for a tool with hooks; Codex records the start of
# shell commands and patches only), so no foreign call is ever "did not run".
_STARTED_TEXT: Final = (
    "[turnlog] The session ended while tool call {what} was running: {tool} recorded "
    "that it started, and its result never reached the transcript. It may have run, "
    "fully or in part. Check the state it was changing before running it again; do not "
    "retry it blindly."
)
_UNKNOWN_TEXT: Final = (
    "[turnlog] The session ended before tool call {what} had a result in the transcript. "
    "{tool} does not record every call's start, so whether it ran is unknown: it may "
    "have run, fully or in part. Check the state it was changing before running it "
    "again; do not retry it blindly."
)


class OwedOutput(msgspec.Struct, frozen=True, kw_only=True):
    """One call the file leaves without an output, and what the repair says for it."""

    call_id: str
    name: str | None
    risk: str | None
    text: str
    # The tool's real output, which the file recorded elsewhere.
    recorded: bool = False
    # "R1": the file shows the call started; "R4": it shows nothing either way.
    rule: str | None = None


def _now_ms() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def owed_outputs(transcript: Transcript) -> tuple[OwedOutput, ...]:
    """The calls a repair answers, in call order: the real output where the file
    recorded it elsewhere, else an honest result claiming only what the file
    proves (the call started, or nothing either way)."""
    tool = _TOOL_NAMES.get(transcript.kind, transcript.kind)
    out = []
    for call_id in transcript.open_calls:
        call = transcript.calls[call_id]
        if call.recorded_output is not None:
            out.append(
                OwedOutput(
                    call_id=call.call_id,
                    name=call.name,
                    risk=None,
                    text=call.recorded_output,
                    recorded=True,
                )
            )
            continue
        what = f"`{call.name}` ({call.call_id})" if call.name else f"({call.call_id})"
        template, rule = (_STARTED_TEXT, "R1") if call.started else (_UNKNOWN_TEXT, "R4")
        out.append(
            OwedOutput(
                call_id=call.call_id,
                name=call.name,
                risk=Risk.OUTCOME_UNKNOWN.value,
                text=template.format(what=what, tool=tool),
                rule=rule,
            )
        )
    return tuple(out)


def _claude_code_lines(transcript: Transcript, owed: Sequence[OwedOutput]) -> list[str]:
    """`user` lines answering every orphan `tool_use`, shaped exactly like the
    lines Claude Code writes, their envelope copied from the session's newest
    line: one line per `tool_use` line, parented on it and naming it in
    `sourceToolAssistantUUID`, as Claude Code does for parallel results.

    Parented on the calls' own lines, the repair is the chain the next
    request loads wherever the file went after the crash: a prompt typed on
    resume (and the API error it got) stay in the file on a branch the tool
    no longer follows.
    """
    tip = transcript.tip or {}
    header = transcript.events[0].data
    # Fields a system line may lack come from the session's first line.
    first: dict[str, Any] = dict(getattr(header, "meta", None) or {})
    source = {**first, **tip}
    calls = transcript.calls
    groups: dict[str | None, list[OwedOutput]] = {}
    for item in owed:
        groups.setdefault(calls[item.call_id].asked_by, []).append(item)
    out = []
    for asked_by, items in groups.items():
        line: dict[str, Any] = {
            "parentUuid": asked_by if asked_by is not None else tip.get("uuid"),
            # A subagent's own file is all side chain: the repair joins it.
            "isSidechain": bool(tip.get("isSidechain", False)),
            "userType": source.get("userType", "external"),
            "cwd": source.get("cwd"),
            "sessionId": source.get("sessionId", transcript.session_id),
            "version": source.get("version"),
            "gitBranch": source.get("gitBranch"),
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": o.call_id,
                        "type": "tool_result",
                        "content": o.text,
                        "is_error": True,
                    }
                    for o in items
                ],
            },
            "uuid": str(uuid.uuid4()),
            "timestamp": _now_ms(),
        }
        if asked_by is not None:
            line["sourceToolAssistantUUID"] = asked_by
        if isinstance(tip.get("agentId"), str):
            line["agentId"] = tip["agentId"]
        line = {k: v for k, v in line.items() if v is not None or k == "parentUuid"}
        out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    return out


def _codex_lines(transcript: Transcript, owed: Sequence[OwedOutput]) -> list[str]:
    """One output item per orphan call (`custom_tool_call_output` for a custom
    tool call), in the file's own envelope, each with a timestamp."""
    out = []
    for item in owed:
        call = transcript.calls[item.call_id]
        kind = "custom_tool_call_output" if call.kind == "custom" else "function_call_output"
        payload = {"type": kind, "call_id": item.call_id, "output": item.text}
        if transcript.variant == "legacy":
            record: dict[str, Any] = payload
        else:
            record = {"timestamp": _now_ms(), "type": "response_item", "payload": payload}
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return out


def repair_lines(transcript: Transcript, owed: Sequence[OwedOutput]) -> tuple[str, ...]:
    """The lines answering `owed`, shaped as the transcript's own tool writes them."""
    return tuple(
        _claude_code_lines(transcript, owed)
        if transcript.kind == CLAUDE_CODE
        else _codex_lines(transcript, owed)
    )
