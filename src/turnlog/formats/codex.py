"""Codex CLI rollouts (the envelope format and the oldest one) read as turnlog events."""

from __future__ import annotations

import json
import os
from typing import Any, Final

from turnlog import events as ev
from turnlog.core.damage import Problem
from turnlog.core.sniff import CODEX
from turnlog.errors import InvalidSessionIdError
from turnlog.events import ToolCall
from turnlog.formats.builder import Builder, Call, Transcript, text_of
from turnlog.formats.foreign import Parsed, parse, read_file
from turnlog.stores.base import validate_session_id

# Items the model writes; consecutive ones form one assistant message.
_MODEL_ITEMS: Final = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
_CALL_KINDS: Final = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
}
_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
# Events that say a call started, and ones that carry its real output.
_BEGINS: Final = frozenset({"exec_command_begin", "patch_apply_begin", "mcp_tool_call_begin"})
_ENDS: Final = frozenset({"exec_command_end", "patch_apply_end", "mcp_tool_call_end"})
RECORDED_NOTE: Final = (
    "[turnlog] This output was recorded by Codex when the command finished "
    "({event}), but its function_call_output never reached the session file; "
    "it is the command's real output."
)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"raw": raw}
    return raw if raw is not None else {}


def output_text(output: Any) -> tuple[str, bool]:
    """A call output in any of its versions: a string, a list of content items,
    or an object `{content, success}`. Returns (text, is_error)."""
    if isinstance(output, dict):
        return text_of(output.get("content", output)), output.get("success") is False
    return text_of(output), False


def _envelopes(records: list[dict[str, Any]]) -> tuple[list[tuple[str, str | None, Any]], str]:
    """(type, timestamp, payload) per line, for the envelope format and the
    oldest one (a bare first line, then bare items and state lines)."""
    if records and not any("payload" in record for record in records):
        # The oldest format: a bare first line, then bare items (or, in a
        # tail read, only the items).
        out: list[tuple[str, str | None, Any]] = []
        rest = records
        if "instructions" in records[0] or "git" in records[0]:
            out.append(("session_meta", records[0].get("timestamp"), records[0]))
            rest = records[1:]
        for record in rest:
            if "record_type" in record:
                out.append(("state", None, record))
            else:
                out.append(("response_item", None, record))
        return out, "legacy"
    return [
        (str(r.get("type")), r.get("timestamp"), r.get("payload") or {}) for r in records
    ], "envelope"


def _finished_output(payload: dict[str, Any]) -> str:
    text = payload.get("aggregated_output")
    if text is None:
        text = "\n".join(
            str(payload[k]) for k in ("stdout", "stderr", "formatted_output") if payload.get(k)
        )
    exit_code = payload.get("exit_code")
    prefix = f"Exit code: {exit_code}\n" if exit_code is not None else ""
    return f"{prefix}Output:\n{text}" if text else prefix.rstrip() or "(no output recorded)"


def _session_id(found: Any, path: str, problems: list[Problem]) -> str:
    """The rollout's id, or the file's name: content names store keys, so it
    is validated first, never trusted."""
    if found is not None:
        try:
            return validate_session_id(str(found))
        except InvalidSessionIdError as error:
            problems.append(Problem(message=f"unusable session id: {error.message}"))
    try:
        return validate_session_id(os.path.basename(path).removesuffix(".jsonl"))
    except InvalidSessionIdError:
        return "codex-session"


def read_codex(path: str) -> Transcript:
    """Read a Codex rollout file as turnlog events."""
    return from_parsed(parse(read_file(path)), path)


def from_parsed(parsed: Parsed, path: str) -> Transcript:
    """The transcript of parsed lines: a whole file, or only its tail (a scan)."""
    # Codex parses each line whole and skips one it cannot: nothing salvaged
    # from a damaged line is part of the conversation it loads.
    damaged = sum(1 for r in parsed.records if r.damaged)
    lines, variant = _envelopes([r.data for r in parsed.records if not r.damaged])
    found_meta = next((p for t, _, p in lines if t == "session_meta"), None)
    meta: dict[str, Any] = found_meta if isinstance(found_meta, dict) else {}
    problems = list(parsed.problems)
    session_id = _session_id(meta.get("id"), path, problems)
    first_ts = meta.get("timestamp") or next((ts for _, ts, _ in lines if ts), None)
    header = ev.Session(
        session_id=session_id,
        created_at=first_ts,
        agent=ev.Agent(type=CODEX),
        meta={
            "source": CODEX,
            **{k: meta[k] for k in ("cli_version", "cwd", "originator") if k in meta},
        },
    )
    build = Builder(header, first_ts)
    calls: dict[str, Call] = {}
    pending_parts: list[dict[str, Any]] = []
    pending_calls: list[ToolCall] = []
    recorded: dict[str, tuple[str, str]] = {}
    ts: str | None = first_ts
    # The newest model item was a reasoning item (what a reasoning item
    # belongs to is the item right after it).
    last_was_reasoning = False
    # The tool closed the newest turn itself (task_complete, turn_aborted).
    closed_by_tool = False
    aborted = False

    def flush() -> None:
        nonlocal pending_parts, pending_calls, last_was_reasoning
        if pending_parts or pending_calls:
            build.assistant(pending_parts, pending_calls, ts)
            for call in pending_calls:
                calls[call.id].turn = build.turn_number
        pending_parts, pending_calls = [], []
        last_was_reasoning = False

    def settle_recorded() -> None:
        # Outputs known only from `*_end` events, for calls the turn still owes.
        for call_id in build.fold.owed_in_open_turn():
            if call_id in recorded and call_id in calls:
                event, text = recorded[call_id]
                content = f"{RECORDED_NOTE.format(event=event)}\n\n{text}"
                calls[call_id].recorded_output = content
                build.result(call_id, calls[call_id].name, content, False, ts)

    for kind, stamp, payload in lines:
        ts = stamp or ts
        if kind == "response_item" and isinstance(payload, dict):
            item = str(payload.get("type"))
            role = payload.get("role")
            if item == "message" and role == "assistant":
                pending_parts.append({"type": "text", "text": text_of(payload.get("content"))})
                flush()
            elif item in _MODEL_ITEMS:
                if item == "reasoning":
                    pending_parts.append(payload)
                    last_was_reasoning = True
                    continue
                if item == "web_search_call":
                    # A search the server ran; turnlog's transcript has no
                    # such item, so it is not imported, and neither is the
                    # reasoning item it followed (a reasoning item is only
                    # valid with the item it led to).
                    build.counted["web_search_call item (no output item)"] += 1
                    if last_was_reasoning and pending_parts:
                        pending_parts.pop()
                        build.counted["reasoning item before a web_search_call"] += 1
                else:
                    call_id = str(payload.get("call_id") or payload.get("id"))
                    name = str(
                        payload.get("name")
                        or ("local_shell" if item == "local_shell_call" else item)
                    )
                    arguments = (
                        _arguments(payload.get("arguments"))
                        if item == "function_call"
                        else {"input": payload.get("input")}
                        if item == "custom_tool_call"
                        else payload.get("action") or {}
                    )
                    extra = (
                        {"item_id": payload["id"]} if isinstance(payload.get("id"), str) else None
                    )
                    pending_calls.append(
                        ToolCall(id=call_id, name=name, arguments=arguments, extra=extra)
                    )
                    calls[call_id] = Call(call_id=call_id, name=name, kind=_CALL_KINDS[item])
                last_was_reasoning = False
            elif item in _OUTPUTS:
                flush()
                call_id = str(payload.get("call_id"))
                text, is_error = output_text(payload.get("output"))
                if call_id in calls:
                    calls[call_id].answered = True
                build.result(
                    call_id, calls[call_id].name if call_id in calls else None, text, is_error, ts
                )
            elif item == "message":
                flush()
                text = text_of(payload.get("content"))
                if role in ("user",) and not text.lstrip().startswith("<"):
                    closed_by_tool = aborted = False
                    build.prompt(text, ts)
                elif role in ("system", "developer"):
                    build.counted[f"{role} message"] += 1
                else:
                    # Environment context and instructions: model input, not a prompt.
                    build.user(text, ts, injected="context")
            else:
                flush()
                build.counted[f"{item} item"] += 1
        elif kind == "event_msg" and isinstance(payload, dict):
            flush()
            event = str(payload.get("type"))
            call_id = str(payload.get("call_id"))
            if event in _BEGINS and call_id in calls:
                # Proves this call started; says nothing about its siblings.
                calls[call_id].started = True
                build.dispatch(calls[call_id], ts)
            elif event in _ENDS and call_id in calls:
                calls[call_id].started = True
                build.dispatch(calls[call_id], ts)
                recorded[call_id] = (event, _finished_output(payload))
            elif event == "task_started":
                closed_by_tool = aborted = False
                if not build.turn_open:
                    build.start_turn(ts)
            elif event == "task_complete":
                settle_recorded()
                closed_by_tool = True
                build.end_turn_if_settled(ev.TurnEndReason.COMPLETE.value, ts)
            elif event == "turn_aborted":
                closed_by_tool = aborted = True
                build.end_turn_if_settled(ev.TurnEndReason.CANCELLED.value, ts)
            else:
                build.counted[f"{event} event"] += 1
        elif kind == "compacted" and isinstance(payload, dict):
            flush()
            build.end_turn(ev.TurnEndReason.COMPLETE.value, ts)
            build.add(
                ev.Compaction(
                    through_seq=len(build.events) - 1,
                    summary=text_of(payload.get("message")) or "(compacted)",
                ),
                ts,
            )
            for kept in payload.get("replacement_history") or ():
                if isinstance(kept, dict) and kept.get("type") == "message":
                    text = text_of(kept.get("content"))
                    if kept.get("role") == "assistant":
                        build.add(ev.AssistantMessage(content=text), ts)
                    elif text:
                        build.user(text, ts, injected="compacted")
        else:
            build.counted[f"{kind} line"] += 1
    flush()
    settle_recorded()
    events = build.finish(ts)
    if damaged:
        build.counted["record on a damaged line (Codex skips the line)"] += damaged
    # What a repair answers: the newest turn's calls with no output, unless
    # Codex closed that turn itself. An older turn's orphan (a new prompt came
    # after it) Codex answers "aborted" on its own at request time.
    open_calls = (
        []
        if closed_by_tool
        else [c.call_id for c in calls.values() if c.turn == build.turn_number and not c.answered]
    )
    return Transcript(
        kind=CODEX,
        session_id=session_id,
        events=events,
        calls=calls,
        problems=tuple(problems),
        torn=parsed.torn,
        counted=dict(build.counted),
        variant=variant,
        open_calls=open_calls,
        stopped_by_user=aborted,
    )
