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
from turnlog.formats.builder import Builder, Call, Transcript, foreign_time
from turnlog.formats.foreign import Parsed, parse, read_file
from turnlog.stores.base import validate_session_id
from turnlog.text import foreign_text

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
        return foreign_text(output.get("content", output)), output.get("success") is False
    return foreign_text(output), False


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
    rollout = _Rollout(Builder(_header(session_id, meta, first_ts), first_ts), first_ts)
    events = rollout.read(lines)
    build = rollout.build
    if damaged:
        build.counted["record on a damaged line (Codex skips the line)"] += damaged
    return Transcript(
        kind=CODEX,
        session_id=session_id,
        events=events,
        calls=rollout.calls,
        problems=tuple(problems),
        torn=parsed.torn,
        counted=dict(build.counted),
        variant=variant,
        open_calls=rollout.open_calls(),
        stopped_by_user=rollout.aborted,
    )


def _header(session_id: str, meta: dict[str, Any], first_ts: str | None) -> ev.Session:
    """The session header: the rollout's id, first time and the tool's own details."""
    return ev.Session(
        session_id=session_id,
        created_at=foreign_time(first_ts),
        agent=ev.Agent(type=CODEX),
        meta={
            "source": CODEX,
            **{k: meta[k] for k in ("cli_version", "cwd", "originator") if k in meta},
        },
    )


class _Rollout:
    """One pass over a rollout's lines, in file order, building its events.

    Consecutive model items are gathered into one assistant message, which is
    written (flushed) when a line of another kind comes.
    """

    def __init__(self, build: Builder, first_ts: str | None) -> None:
        self.build = build
        self.calls: dict[str, Call] = {}
        self.pending_parts: list[dict[str, Any]] = []
        self.pending_calls: list[ToolCall] = []
        # Outputs known only from `*_end` events: call id -> (event, text).
        self.recorded: dict[str, tuple[str, str]] = {}
        self.ts: str | None = first_ts
        # The newest model item was a reasoning item (what a reasoning item
        # belongs to is the item right after it).
        self.last_was_reasoning = False
        # The tool closed the newest turn itself (task_complete, turn_aborted).
        self.closed_by_tool = False
        self.aborted = False

    def read(self, lines: list[tuple[str, str | None, Any]]) -> list[ev.Event]:
        """Every line in order, then the last turn closed if the file shows it finished."""
        for kind, stamp, payload in lines:
            self.ts = stamp or self.ts
            if kind == "response_item" and isinstance(payload, dict):
                self._response_item(payload)
            elif kind == "event_msg" and isinstance(payload, dict):
                self._flush()
                self._event(payload)
            elif kind == "compacted" and isinstance(payload, dict):
                self._flush()
                self._compacted(payload)
            else:
                self.build.counted[f"{kind} line"] += 1
        self._flush()
        self._settle_recorded()
        return self.build.finish(self.ts)

    def open_calls(self) -> list[str]:
        """What a repair answers: the newest turn's calls with no output, unless
        Codex closed that turn itself. An older turn's orphan (a new prompt came
        after it) Codex answers "aborted" on its own at request time."""
        if self.closed_by_tool:
            return []
        newest = self.build.turn_number
        return [c.call_id for c in self.calls.values() if c.turn == newest and not c.answered]

    def _flush(self) -> None:
        """Write the gathered model items as one assistant message."""
        if self.pending_parts or self.pending_calls:
            self.build.assistant(self.pending_parts, self.pending_calls, self.ts)
            for call in self.pending_calls:
                self.calls[call.id].turn = self.build.turn_number
        self.pending_parts, self.pending_calls = [], []
        self.last_was_reasoning = False

    def _settle_recorded(self) -> None:
        # Outputs known only from `*_end` events, for calls the turn still owes.
        for call_id in self.build.fold.owed_in_open_turn():
            if call_id in self.recorded and call_id in self.calls:
                event, text = self.recorded[call_id]
                content = f"{RECORDED_NOTE.format(event=event)}\n\n{text}"
                self.calls[call_id].recorded_output = content
                self.build.result(call_id, self.calls[call_id].name, content, False, self.ts)

    def _response_item(self, payload: dict[str, Any]) -> None:
        item = str(payload.get("type"))
        role = payload.get("role")
        if item == "message" and role == "assistant":
            self.pending_parts.append(
                {"type": "text", "text": foreign_text(payload.get("content"))}
            )
            self._flush()
        elif item in _MODEL_ITEMS:
            self._model_item(item, payload)
        elif item in _OUTPUTS:
            self._flush()
            self._output_item(payload)
        elif item == "message":
            self._flush()
            self._message_item(role, payload)
        else:
            self._flush()
            self.build.counted[f"{item} item"] += 1

    def _model_item(self, item: str, payload: dict[str, Any]) -> None:
        """A reasoning item, a web search or a tool call: part of the message being gathered."""
        if item == "reasoning":
            self.pending_parts.append(payload)
            self.last_was_reasoning = True
            return
        if item == "web_search_call":
            # A search the server ran; turnlog's transcript has no such item,
            # so it is not imported, and neither is the reasoning item it
            # followed (a reasoning item is only valid with the item it led to).
            self.build.counted["web_search_call item (no output item)"] += 1
            if self.last_was_reasoning and self.pending_parts:
                self.pending_parts.pop()
                self.build.counted["reasoning item before a web_search_call"] += 1
        else:
            self._call_item(item, payload)
        self.last_was_reasoning = False

    def _call_item(self, item: str, payload: dict[str, Any]) -> None:
        call_id = str(payload.get("call_id") or payload.get("id"))
        name = str(payload.get("name") or ("local_shell" if item == "local_shell_call" else item))
        arguments = (
            _arguments(payload.get("arguments"))
            if item == "function_call"
            else {"input": payload.get("input")}
            if item == "custom_tool_call"
            else payload.get("action") or {}
        )
        extra = {"item_id": payload["id"]} if isinstance(payload.get("id"), str) else None
        self.pending_calls.append(ToolCall(id=call_id, name=name, arguments=arguments, extra=extra))
        self.calls[call_id] = Call(call_id=call_id, name=name, kind=_CALL_KINDS[item])

    def _output_item(self, payload: dict[str, Any]) -> None:
        call_id = str(payload.get("call_id"))
        text, is_error = output_text(payload.get("output"))
        known = self.calls.get(call_id)
        if known is not None:
            known.answered = True
        self.build.result(
            call_id, known.name if known is not None else None, text, is_error, self.ts
        )

    def _message_item(self, role: Any, payload: dict[str, Any]) -> None:
        """A message not the model's: a prompt, or input the tool gave the model."""
        text = foreign_text(payload.get("content"))
        if role == "user" and not text.lstrip().startswith("<"):
            self.closed_by_tool = self.aborted = False
            self.build.prompt(text, self.ts)
        elif role in ("system", "developer"):
            self.build.counted[f"{role} message"] += 1
        else:
            # Environment context and instructions: model input, not a prompt.
            self.build.user(text, self.ts, injected="context")

    def _event(self, payload: dict[str, Any]) -> None:
        """An `event_msg` line: a call's start or end, or the turn's start or end."""
        build, ts = self.build, self.ts
        event = str(payload.get("type"))
        call = self.calls.get(str(payload.get("call_id")))
        if event in _BEGINS and call is not None:
            # Proves this call started; says nothing about its siblings.
            call.started = True
            build.dispatch(call, ts)
        elif event in _ENDS and call is not None:
            call.started = True
            build.dispatch(call, ts)
            self.recorded[call.call_id] = (event, _finished_output(payload))
        elif event == "task_started":
            self.closed_by_tool = self.aborted = False
            if not build.turn_open:
                build.start_turn(ts)
        elif event == "task_complete":
            self._settle_recorded()
            self.closed_by_tool = True
            build.end_turn_if_settled(ev.TurnEndReason.COMPLETE.value, ts)
        elif event == "turn_aborted":
            self.closed_by_tool = self.aborted = True
            build.end_turn_if_settled(ev.TurnEndReason.CANCELLED.value, ts)
        else:
            build.counted[f"{event} event"] += 1

    def _compacted(self, payload: dict[str, Any]) -> None:
        """A compaction: the turn ends, and the history Codex kept follows its summary."""
        build, ts = self.build, self.ts
        build.end_turn(ev.TurnEndReason.COMPLETE.value, ts)
        build.add(
            ev.Compaction(
                through_seq=len(build.events) - 1,
                summary=foreign_text(payload.get("message")) or "(compacted)",
            ),
            ts,
        )
        for kept in payload.get("replacement_history") or ():
            if isinstance(kept, dict) and kept.get("type") == "message":
                text = foreign_text(kept.get("content"))
                if kept.get("role") == "assistant":
                    build.add(ev.AssistantMessage(content=text), ts)
                elif text:
                    build.user(text, ts, injected="compacted")
