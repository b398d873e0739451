"""Rescue Claude Code and Codex sessions: repair in place by appending, or import."""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.damage import Problem, TornTail
from turnlog.errors import NotASessionError, SessionExistsError, UsageError
from turnlog.fold import Fold
from turnlog.formats import claude_code, codex
from turnlog.formats.foreign import (
    MAX_SCAN_TAIL_BYTES,
    SCAN_TAIL_BYTES,
    append_lines,
    parse,
    quarantine,
    read_tail,
    refuse_if_live,
)
from turnlog.formats.sniff import CLAUDE_CODE, CODEX, sniff
from turnlog.formats.transcript import Transcript
from turnlog.recovery import plan_verdict
from turnlog.stores import Store
from turnlog.transfer import write_events
from turnlog.verdict import decide

KINDS: Final = (CLAUDE_CODE, CODEX)
DEFAULT_FOLDERS: Final = {
    CLAUDE_CODE: os.path.join("~", ".claude", "projects"),
    CODEX: os.path.join("~", ".codex", "sessions"),
}


class OwedOutput(msgspec.Struct, frozen=True, kw_only=True):
    """One call the file leaves without an output, and what the repair says for it."""

    call_id: str
    name: str | None
    risk: str | None
    text: str
    # The tool's real output, which the file recorded elsewhere.
    recorded: bool = False


class Diagnosis(msgspec.Struct, frozen=True, kw_only=True):
    """What `doctor` finds in a file and would append to it."""

    path: str
    kind: str
    session_id: str
    status: str  # "crashed", "interrupted by the user", "healthy", "torn"
    owed: tuple[OwedOutput, ...] = ()
    lines: tuple[str, ...] = ()
    torn_tail: TornTail | None = None
    problems: tuple[Problem, ...] = ()
    counted: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def needs_repair(self) -> bool:
        return bool(self.lines) or self.torn_tail is not None


class Repair(msgspec.Struct, frozen=True, kw_only=True):
    """What `doctor` did to a file."""

    diagnosis: Diagnosis
    action: str  # "repaired", "nothing to repair", "would repair"
    appended_bytes: int = 0
    torn_tail: TornTail | None = None


def kind_of(path: str, kind: str) -> str:
    """The file's format, proved from its first line before any byte is read
    further or written: "auto" takes what the line shows, a named kind must
    match it. Anything else (a turnlog session, other JSONL) is refused."""
    if kind not in (*KINDS, "auto"):
        raise UsageError(f"unknown transcript kind {kind!r}", hint="use claude-code, codex or auto")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory", hint="pass a session file, or --all DIR")
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    found = sniff(first)
    if found is None or (kind != "auto" and found != kind):
        named = "a Claude Code or Codex" if kind == "auto" else f"a {kind}"
        seen = f" (it looks like a {found} transcript)" if found else ""
        raise NotASessionError(
            f"{path} is not {named} transcript{seen}; it was left unchanged",
            hint="name the right kind; a turnlog session is repaired with `turnlog recover`",
        )
    return found


def read_transcript(path: str, kind: str) -> Transcript:
    kind = kind_of(path, kind)
    if kind == CLAUDE_CODE:
        return claude_code.read_claude_code(path)
    return codex.read_codex(path)


def _now_ms() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def owed_outputs(transcript: Transcript) -> tuple[OwedOutput, ...]:
    """The open turn's calls with no output line in the file, in call order:
    the real output where the file recorded it elsewhere, else recovery's
    honest result (the decision table, worded by risk)."""
    found = decide(Fold(transcript.events))
    turn = found.open_turn
    if turn is None:
        return ()
    planned = {
        e.data.call_id: e.data
        for e in plan_verdict(found).events
        if isinstance(e.data, ev.ToolResult)
    }
    out = []
    for sighting in turn.calls:
        call = transcript.calls.get(sighting.call_id)
        if call is None or call.answered:
            continue
        if call.recorded_output is not None:
            text = call.recorded_output
            out.append(
                OwedOutput(
                    call_id=call.call_id, name=call.name, risk=None, text=text, recorded=True
                )
            )
        elif sighting.call_id in planned:
            result = planned[sighting.call_id]
            out.append(
                OwedOutput(
                    call_id=call.call_id,
                    name=call.name,
                    risk=result.risk,
                    text=str(result.content),
                )
            )
    return tuple(out)


def _claude_code_line(transcript: Transcript, owed: Sequence[OwedOutput]) -> str:
    """One `user` line answering every orphan `tool_use`, shaped exactly like the
    lines Claude Code writes, its envelope copied from the session's newest line."""
    tip = transcript.tip or {}
    header = transcript.events[0].data
    # Fields a system line may lack come from the session's first line.
    first: dict[str, Any] = dict(getattr(header, "meta", None) or {})
    source = {**first, **tip}
    calls = transcript.calls
    asked_by = next((calls[o.call_id].asked_by for o in owed if calls[o.call_id].asked_by), None)
    line: dict[str, Any] = {
        "parentUuid": tip.get("uuid"),
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
                for o in owed
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
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


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


def diagnose(path: str, kind: str = "auto") -> Diagnosis:
    """Read a transcript and say what `doctor` would append; writes nothing."""
    return _diagnosis(path, read_transcript(path, kind))


def _diagnosis(path: str, transcript: Transcript) -> Diagnosis:
    owed = owed_outputs(transcript)
    if owed:
        lines = (
            (_claude_code_line(transcript, owed),)
            if transcript.kind == CLAUDE_CODE
            else tuple(_codex_lines(transcript, owed))
        )
        status = "crashed"
    else:
        lines = ()
        status = _calm_status(transcript)
    return Diagnosis(
        path=path,
        kind=transcript.kind,
        session_id=transcript.session_id,
        status="torn" if transcript.torn is not None and not owed else status,
        owed=owed,
        lines=lines,
        torn_tail=transcript.torn,
        problems=transcript.problems,
        counted=transcript.counted,
    )


def _calm_status(transcript: Transcript) -> str:
    for event in reversed(transcript.events):
        data = event.data
        if isinstance(data, ev.TurnEnd):
            return "interrupted by the user" if data.reason == "cancelled" else "healthy"
        if isinstance(data, ev.TurnStart):
            return "healthy"
    return "healthy"


def doctor(
    path: str,
    kind: str = "auto",
    *,
    dry_run: bool = False,
    force: bool = False,
) -> Repair:
    """Repair a crashed transcript in its own format, by appending only.

    A torn final fragment is first moved to `<file>.torn-<offset>`; every other
    byte stays where it was. Refuses a file its tool may still be writing
    (`SessionLockedError`) unless `force`. A second run appends nothing.

    The file is read again here even when a caller diagnosed it before
    asking a person: what is appended follows the file as it is now.
    """
    found = diagnose(path, kind)
    if not found.needs_repair:
        return Repair(diagnosis=found, action="nothing to repair")
    if dry_run:
        return Repair(diagnosis=found, action="would repair")
    if not force:
        refuse_if_live(path)
    moved = quarantine(path, found.torn_tail) if found.torn_tail is not None else None
    written = 0
    if found.lines:
        written = append_lines(
            path,
            [line.encode() for line in found.lines],
            newline_first=_missing_newline(path),
        )
    return Repair(diagnosis=found, action="repaired", appended_bytes=written, torn_tail=moved)


def _missing_newline(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


# -- directory mode ---------------------------------------------------------------------


def session_files(kind: str, folder: str) -> list[str]:
    """The main session files under a Claude Code projects folder or a Codex
    sessions folder (subagents' files are read with their parents)."""
    folder = os.path.expanduser(folder)
    if kind == CLAUDE_CODE:
        found = glob.glob(os.path.join(glob.escape(folder), "**", "*.jsonl"), recursive=True)
        return sorted(
            f
            for f in found
            if not os.path.basename(f).startswith("agent-")
            and os.sep + "subagents" + os.sep not in f
        )
    return sorted(
        glob.glob(os.path.join(glob.escape(folder), "**", "rollout-*.jsonl"), recursive=True)
    )


def _tail_transcript(kind: str, path: str) -> Transcript:
    """The transcript of the file's tail: from a window that holds an assistant
    line (where any orphan call was asked), growing it until it does."""
    size = SCAN_TAIL_BYTES
    while True:
        data, whole = read_tail(path, size)
        parsed = parse(data)
        if kind == CLAUDE_CODE:
            transcript = claude_code.from_parsed(parsed, path, subagents=False)
        else:
            transcript = codex.from_parsed(parsed, path)
        asked = any(isinstance(e.data, ev.AssistantMessage) for e in transcript.events)
        if asked or whole or size >= MAX_SCAN_TAIL_BYTES:
            return transcript
        size *= 4


def tail_diagnosis(kind: str, path: str) -> Diagnosis:
    """What `diagnose` would say, from the file's tail only: for scanning a
    folder in time. The repair itself reads the whole file again."""
    return _diagnosis(path, _tail_transcript(kind, path))


def scan_folder(
    kind: str,
    folder: str,
    *,
    progress: Callable[[Sequence[str]], Iterable[str]] | None = None,
) -> list[Diagnosis]:
    """Every session under `folder` that will not resume, judged from the tails."""
    files = session_files(kind, folder)
    walk = progress(files) if progress is not None else files
    out = []
    for path in walk:
        try:
            found = tail_diagnosis(kind, path)
        except OSError:
            continue
        if found.needs_repair:
            out.append(found)
    return out


# -- import -------------------------------------------------------------------------------


class Imported(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    kind: str
    session_id: str
    events: int
    status: str
    subagents: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()
    counted: dict[str, int] = msgspec.field(default_factory=dict)


def import_file(store: Store, path: str, kind: str = "auto") -> Imported:
    """Write a transcript (and its subagents) to a turnlog store as sessions of
    `origin: import` events, so `inspect`, `show`, `export` and `revive` work on
    them. Refuses a session id the store already holds."""
    transcript = read_transcript(path, kind)
    sessions = [transcript, *_descendants(transcript)]
    for item in sessions:
        if store.exists(item.session_id):
            raise SessionExistsError(
                f"session {item.session_id!r} is already in {store.url}",
                hint="it was imported before; inspect it there, or import into another store",
            )
    for item in sessions:
        write_events(store, item.events)
    found = decide(Fold(transcript.events))
    return Imported(
        path=path,
        kind=transcript.kind,
        session_id=transcript.session_id,
        events=len(transcript.events),
        status="interrupted" if found.open_turn is not None else "closed",
        subagents=tuple(child.session_id for child in sessions[1:]),
        problems=transcript.problems,
        counted=transcript.counted,
    )


def _descendants(transcript: Transcript) -> list[Transcript]:
    out = []
    for child in transcript.children:
        out.append(child)
        out.extend(_descendants(child))
    return out
