"""Claude Code transcripts (1.0 to 2.1) read as turnlog events, subagents included."""

from __future__ import annotations

import glob
import os
from typing import Any, Final

from turnlog import events as ev
from turnlog.errors import InvalidSessionIdError
from turnlog.events import ToolCall
from turnlog.formats.foreign import Parsed, parse, read_file
from turnlog.formats.sniff import CLAUDE_CODE
from turnlog.formats.transcript import Builder, Call, Transcript, text_of
from turnlog.stores.base import child_session_id, validate_agent_id

INTERRUPT_PREFIX: Final = "[Request interrupted by user"
# `system` lines Claude Code writes when a turn has ended cleanly.
_TURN_ENDS: Final = frozenset({"turn_duration", "stop_hook_summary"})
_MESSAGE_TYPES: Final = frozenset({"user", "assistant"})
_CHAIN_TYPES: Final = frozenset({"user", "assistant", "system"})
# Blocks of an assistant message kept verbatim (signed reasoning).
_VERBATIM: Final = frozenset({"thinking", "redacted_thinking"})


def _dedupe(parsed: Parsed) -> tuple[list[dict[str, Any]], int]:
    """Records in file order, a repeated `uuid` (a resume copying the old tail) kept once."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    duplicates = 0
    for record in parsed.records:
        uuid = record.data.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                duplicates += 1
                continue
            seen.add(uuid)
        out.append(record.data)
    return out, duplicates


def _main_chain(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The lines of the conversation the newest line belongs to, in file order.

    Walked back by `parentUuid` from the newest line; tool results branch off
    their own `tool_use` lines (parallel calls), so a result whose parent is on
    the chain belongs to it too. Abandoned branches (retries) are left out.
    """
    chain_lines = [r for r in lines if r.get("type") in _CHAIN_TYPES and r.get("uuid")]
    if not chain_lines:
        return [], None
    tip = chain_lines[-1]
    by_uuid = {r["uuid"]: r for r in chain_lines}
    keep: set[str] = set()
    node: dict[str, Any] | None = tip
    while node is not None and node["uuid"] not in keep:
        keep.add(node["uuid"])
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        node = by_uuid.get(parent) if isinstance(parent, str) else None

    def response_id(record: dict[str, Any]) -> Any:
        message = record.get("message")
        return message.get("id") if isinstance(message, dict) else None

    # The other lines of a response on the chain (a parallel call's tool_use
    # line may sit on a side branch), and results branching off the chain.
    responses = {response_id(by_uuid[u]) for u in keep if by_uuid[u].get("type") == "assistant"}
    changed = True
    while changed:
        changed = False
        for record in chain_lines:
            if record["uuid"] in keep:
                continue
            kind = record.get("type")
            same_response = kind == "assistant" and response_id(record) in responses - {None}
            branch = record.get("parentUuid") in keep and kind in ("user", "system")
            if same_response or branch:
                keep.add(record["uuid"])
                changed = True
    if len(keep) == 1 and len(chain_lines) > 1:
        # A tip that links to nothing known: read the file in order instead.
        return chain_lines, tip
    return [r for r in chain_lines if r["uuid"] in keep], tip


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _links(lines: list[dict[str, Any]]) -> dict[str, str]:
    """agent id -> the Task call that ran it, from result lines and progress lines."""
    out: dict[str, str] = {}
    for record in lines:
        result = record.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            for block in _blocks(record.get("message")):
                if block.get("type") == "tool_result":
                    out.setdefault(result["agentId"], str(block.get("tool_use_id")))
        data = record.get("data")
        if record.get("type") == "progress" and isinstance(data, dict):
            agent = data.get("agentId")
            call = record.get("parentToolUseID") or data.get("parentToolUseID")
            if isinstance(agent, str) and isinstance(call, str):
                out.setdefault(agent, call)
    return out


def _started_calls(lines: list[dict[str, Any]]) -> dict[int, str]:
    """Progress lines naming a call: evidence it started, by the line's index."""
    out: dict[int, str] = {}
    for index, record in enumerate(lines):
        if record.get("type") != "progress":
            continue
        raw = record.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        call = record.get("parentToolUseID") or record.get("toolUseID") or data.get("toolUseID")
        if isinstance(call, str):
            out[index] = call
    return out


def _convert(
    session_id: str,
    lines: list[dict[str, Any]],
    chain: list[dict[str, Any]],
    *,
    spawned_by: ev.SpawnedBy | None = None,
    agent_id: str | None = None,
    links: dict[str, str] | None = None,
) -> Transcript:
    first = next((r for r in chain if r.get("timestamp")), {})
    meta: dict[str, Any] = {"source": CLAUDE_CODE}
    for key in ("version", "cwd", "gitBranch", "sessionId"):
        if key in first:
            meta[key] = first[key]
    header = ev.Session(
        session_id=session_id,
        created_at=first.get("timestamp"),
        agent=ev.Agent(id=agent_id, type=CLAUDE_CODE if agent_id is None else "subagent"),
        spawned_by=spawned_by,
        meta=meta,
    )
    build = Builder(header, first.get("timestamp"))
    calls: dict[str, Call] = {}
    on_chain = {id(r) for r in chain}
    started = _started_calls(lines)
    # One API response is split over several lines sharing `message.id`:
    # gather its blocks once, in chain order.
    responses: dict[str, list[dict[str, Any]]] = {}
    for record in chain:
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, dict) and message.get("id"):
            responses.setdefault(message["id"], []).extend(_blocks(message))
    emitted: set[str] = set()
    spawned_for = {call: agent for agent, call in (links or {}).items()}
    ts: str | None = first.get("timestamp")
    for index, record in enumerate(lines):
        kind = record.get("type")
        ts = record.get("timestamp", ts)
        if index in started:
            call = calls.get(started[index])
            if call is not None:
                build.dispatch(call, ts)
            continue
        if id(record) not in on_chain:
            if kind in _CHAIN_TYPES and record.get("uuid"):
                build.counted["off-chain line (another branch)"] += 1
            elif kind not in _MESSAGE_TYPES:
                build.counted[f"{kind} line"] += 1
            continue
        message = record.get("message")
        if kind == "assistant":
            message_id = message.get("id") if isinstance(message, dict) else None
            if message_id in emitted:
                continue
            blocks = responses.get(message_id) if message_id else _blocks(message)
            if message_id:
                emitted.add(message_id)
            parts: list[dict[str, Any]] = []
            asked: list[ToolCall] = []
            for block in blocks or ():
                btype = block.get("type")
                if btype in _VERBATIM:
                    parts.append(block)
                elif btype == "text" and block.get("text"):
                    parts.append({"type": "text", "text": block["text"]})
                elif btype == "tool_use" and isinstance(block.get("id"), str):
                    asked.append(
                        ToolCall(
                            id=block["id"],
                            name=str(block.get("name")),
                            arguments=block.get("input") or {},
                        )
                    )
                    calls[block["id"]] = Call(
                        call_id=block["id"],
                        name=str(block.get("name")),
                        kind="tool_use",
                        asked_by=record.get("uuid"),
                    )
            build.assistant(parts, asked, ts)
            for request in asked:
                agent = spawned_for.get(request.id)
                if agent is not None:
                    build.add(
                        ev.SubagentSpawned(
                            agent_id=agent,
                            agent_type="subagent",
                            call_id=request.id,
                            child=child_session_id(session_id, agent),
                        ),
                        ts,
                    )
        elif kind == "user":
            texts: list[str] = []
            for block in _blocks(message):
                btype = block.get("type")
                if btype == "tool_result":
                    call_id = str(block.get("tool_use_id"))
                    known = calls.get(call_id)
                    if known is not None:
                        known.answered = True
                    build.result(
                        call_id,
                        known.name if known else None,
                        text_of(block.get("content")),
                        bool(block.get("is_error")),
                        ts,
                    )
                elif btype == "text":
                    texts.append(str(block.get("text", "")))
                elif btype in ("image", "document"):
                    texts.append(f"[{btype}]")
            text = "\n".join(texts)
            if not text:
                continue
            if text.startswith(INTERRUPT_PREFIX):
                # The user stopped the turn: not a crash.
                build.user(text, ts, injected="interrupt")
                build.end_turn(ev.TurnEndReason.CANCELLED.value, ts)
            elif record.get("isMeta"):
                build.user(text, ts, injected="meta")
            else:
                build.prompt(text, ts)
        elif kind == "system":
            if record.get("subtype") in _TURN_ENDS and not build.fold.owed_in_open_turn():
                build.end_turn(ev.TurnEndReason.COMPLETE.value, ts)
            else:
                build.counted[f"system {record.get('subtype')} line"] += 1
    events = build.finish(ts)
    return Transcript(
        kind=CLAUDE_CODE,
        session_id=session_id,
        events=events,
        calls=calls,
        counted=dict(build.counted),
    )


def _session_id(lines: list[dict[str, Any]], path: str) -> str:
    for record in lines:
        found = record.get("sessionId")
        if isinstance(found, str):
            return found
    return os.path.basename(path).removesuffix(".jsonl")


def _inline_sidechains(
    session_id: str, lines: list[dict[str, Any]], parent_calls: dict[str, Any]
) -> list[Transcript]:
    """Claude Code 1.0 wrote a Task agent's lines into the main file, each side
    chain starting at `parentUuid: null` with the Task prompt as user text."""
    side = [r for r in lines if r.get("isSidechain") is True and r.get("uuid")]
    if not side:
        return []
    by_uuid = {r["uuid"]: r for r in side}
    roots: dict[str, list[dict[str, Any]]] = {}
    for record in side:
        node = record
        for _ in range(len(side)):
            parent = by_uuid.get(node.get("parentUuid") or "")
            if parent is None:
                break
            node = parent
        roots.setdefault(node["uuid"], []).append(record)
    out = []
    for root_uuid, members in roots.items():
        root = by_uuid[root_uuid]
        prompt = text_of(_blocks(root.get("message")))
        call_id = next(
            (cid for cid, args in parent_calls.items() if text_of(args.get("prompt")) == prompt),
            None,
        )
        agent = "sidechain-" + root_uuid.replace("-", "")[:12]
        child_id = child_session_id(session_id, agent)
        chain, _ = _main_chain(members)
        transcript = _convert(
            child_id,
            members,
            chain or members,
            spawned_by=ev.SpawnedBy(session_id=session_id, call_id=call_id, agent_id=agent),
            agent_id=agent,
        )
        out.append(transcript)
    return out


def _agent_files(path: str, session_id: str) -> list[str]:
    """2.0: `agent-<id>.jsonl` beside the session; 2.1: `<session>/subagents/`."""
    folder = os.path.dirname(os.path.abspath(path))
    found = sorted(glob.glob(os.path.join(folder, glob.escape(session_id), "subagents", "*.jsonl")))
    for candidate in sorted(glob.glob(os.path.join(folder, "agent-*.jsonl"))):
        if os.path.abspath(candidate) == os.path.abspath(path):
            continue
        try:
            with open(candidate, "rb") as f:
                head = f.read(4096)
        except OSError:
            continue
        if f'"sessionId":"{session_id}"'.encode() in head.replace(b" ", b""):
            found.append(candidate)
    return found


def read_claude_code(path: str, *, subagents: bool = True) -> Transcript:
    """Read a Claude Code session file (and its subagents' files) as turnlog events."""
    return from_parsed(parse(read_file(path)), path, subagents=subagents)


def from_parsed(parsed: Parsed, path: str, *, subagents: bool = True) -> Transcript:
    """The transcript of parsed lines: a whole file, or only its tail (a scan)."""
    lines, duplicates = _dedupe(parsed)
    main = [r for r in lines if r.get("isSidechain") is not True]
    session_id = _session_id(lines, path)
    chain, tip = _main_chain(main)
    is_agent_file = bool(lines) and all(
        r.get("isSidechain") is True for r in lines if r.get("uuid")
    )
    if is_agent_file:
        # A subagent's own file: every line is on its side chain.
        chain, tip = _main_chain([r for r in lines if r.get("uuid")])
        main = lines
    links = _links(main)
    transcript = _convert(session_id, main, chain, links=links)
    transcript.problems = parsed.problems
    transcript.torn = parsed.torn
    transcript.tip = tip
    if duplicates:
        transcript.counted["repeated uuid (a resume's copy)"] = duplicates
    counted_summaries = sum(1 for r in lines if r.get("type") == "summary")
    if counted_summaries:
        transcript.counted["summary line"] = counted_summaries
    if not subagents or is_agent_file:
        return transcript
    task_prompts = {
        c.call_id: _call_arguments(transcript, c.call_id) for c in transcript.calls.values()
    }
    transcript.children.extend(_inline_sidechains(session_id, lines, task_prompts))
    calls_by_agent = links
    for agent_file in _agent_files(path, session_id):
        child_parsed = parse(read_file(agent_file))
        child_lines, _ = _dedupe(child_parsed)
        agent = next(
            (r["agentId"] for r in child_lines if isinstance(r.get("agentId"), str)),
            os.path.basename(agent_file).removesuffix(".jsonl").removeprefix("agent-"),
        )
        try:
            validate_agent_id(agent)
        except InvalidSessionIdError:
            key = "subagent file with an unusable agent id"
            transcript.counted[key] = transcript.counted.get(key, 0) + 1
            continue
        child_id = child_session_id(session_id, agent)
        child_chain, child_tip = _main_chain([r for r in child_lines if r.get("uuid")])
        child = _convert(
            child_id,
            child_lines,
            child_chain,
            spawned_by=ev.SpawnedBy(
                session_id=session_id, call_id=calls_by_agent.get(agent), agent_id=agent
            ),
            agent_id=agent,
        )
        child.problems = child_parsed.problems
        child.tip = child_tip
        transcript.children.append(child)
    return transcript


def _call_arguments(transcript: Transcript, call_id: str) -> dict[str, Any]:
    for event in transcript.events:
        if isinstance(event.data, ev.AssistantMessage):
            for call in event.data.tool_calls:
                if call.id == call_id and isinstance(call.arguments, dict):
                    return call.arguments
    return {}
