"""Claude Code transcripts (1.0 to 2.1) read as turnlog events, subagents included."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Final

from turnlog import events as ev
from turnlog.core.damage import Problem
from turnlog.core.sniff import CLAUDE_CODE
from turnlog.errors import InvalidSessionIdError, TurnlogError, UsageError
from turnlog.events import ToolCall
from turnlog.formats.builder import Builder, Call, Transcript, foreign_id, foreign_time
from turnlog.formats.claude_code_files import (
    agent_files as agent_files,
    agent_of as agent_of,
    main_file_of as main_file_of,
)
from turnlog.formats.foreign import Parsed, parse, read_file
from turnlog.stores.base import child_session_id, validate_agent_id, validate_session_id
from turnlog.text import foreign_text

INTERRUPT_PREFIX: Final = "[Request interrupted by user"
# `system` lines Claude Code writes when a turn has ended cleanly.
_TURN_ENDS: Final = frozenset({"turn_duration", "stop_hook_summary"})
_MESSAGE_TYPES: Final = frozenset({"user", "assistant"})
_CHAIN_TYPES: Final = frozenset({"user", "assistant", "system"})
# Assistant lines the harness wrote itself (an API error, say), not a model reply.
SYNTHETIC_MODEL: Final = "<synthetic>"
# Blocks of an assistant message kept verbatim (signed reasoning).
_VERBATIM: Final = frozenset({"thinking", "redacted_thinking"})


def _dedupe(parsed: Parsed) -> tuple[list[dict[str, Any]], int, int]:
    """Records in file order as Claude Code loads them: a repeated `uuid` (a
    resume copying the old tail) kept once, and nothing from a damaged line
    (glued, spliced, NUL-padded), which its own parser skips whole.

    Returns the records, the duplicates dropped and the damaged records left out.
    """
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    duplicates = 0
    damaged = 0
    for record in parsed.records:
        if record.damaged:
            damaged += 1
            continue
        uuid = record.data.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                duplicates += 1
                continue
            seen.add(uuid)
        out.append(record.data)
    return out, duplicates, damaged


def _model(message: Any) -> Any:
    return message.get("model") if isinstance(message, dict) else None


def _has_results(record: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks(record.get("message")))


def _response_id(record: dict[str, Any]) -> str | None:
    message = record.get("message")
    return foreign_id(message.get("id")) if isinstance(message, dict) else None


def _main_chain(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The conversation lines (user, assistant, system) of the chain the newest
    line belongs to, in file order, and the newest of them.

    Walked back by `parentUuid` from the newest line through every line kind:
    Claude Code 2.1 parents lines on `progress` and `attachment` lines too.
    Tool results branch off their own `tool_use` lines (parallel calls), so a
    result whose parent is on the chain belongs to it, as do the other lines
    of a response on it. Abandoned branches (retries, an edited prompt) are
    left out.
    """
    linked = [r for r in lines if isinstance(r.get("uuid"), str)]
    chain_lines = [r for r in linked if r.get("type") in _CHAIN_TYPES]
    if not chain_lines:
        return [], None
    by_uuid = {r["uuid"]: r for r in linked}
    position = {r["uuid"]: index for index, r in enumerate(linked)}
    keep: set[str] = set()
    node: dict[str, Any] | None = linked[-1]
    while node is not None and node["uuid"] not in keep:
        keep.add(node["uuid"])
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        if isinstance(parent, str) and parent not in by_uuid:
            # The parent was on a damaged line (or cut from a tail read):
            # bridge to the line before, rather than lose the conversation.
            before = position[node["uuid"]] - 1
            node = linked[before] if before >= 0 else None
        else:
            node = by_uuid.get(parent) if isinstance(parent, str) else None

    responses = {_response_id(by_uuid[u]) for u in keep if by_uuid[u].get("type") == "assistant"}
    responses.discard(None)
    changed = True
    while changed:
        changed = False
        for record in linked:
            if record["uuid"] in keep:
                continue
            kind = record.get("type")
            if kind == "assistant":
                joins = _response_id(record) in responses
            elif kind == "user":
                # A result branching off its call; a prompt parented on the
                # chain but not on the walk is an abandoned edit.
                joins = record.get("parentUuid") in keep and _has_results(record)
            else:
                joins = record.get("parentUuid") in keep and kind not in ("summary",)
            if joins:
                keep.add(record["uuid"])
                changed = True
    kept = [r for r in chain_lines if r["uuid"] in keep]
    if len(kept) <= 1 < len(chain_lines):
        # A tip that links to nothing known: read the file in order instead.
        return chain_lines, chain_lines[-1]
    return kept, kept[-1]


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


# Hook events around a tool's run; a PreToolUse hook exiting 2 blocked the call.
_TOOL_HOOKS: Final = frozenset({"PreToolUse", "PostToolUse"})
_HOOK_BLOCKED: Final = 2


def _started_calls(lines: list[dict[str, Any]]) -> dict[int, str]:
    """Lines naming a call as under way, by the line's index: `progress` lines
    (hooks and subagents, before 2.1.85) and hook `attachment` lines (after).
    Evidence that call started; nothing about any other call."""
    out: dict[int, str] = {}
    for index, record in enumerate(lines):
        kind = record.get("type")
        raw = record.get("data") if kind == "progress" else record.get("attachment")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "progress":
            call = record.get("parentToolUseID") or record.get("toolUseID") or data.get("toolUseID")
        elif kind == "attachment" and data.get("hookEvent") in _TOOL_HOOKS:
            before = data.get("hookEvent") == "PreToolUse"
            blocked = before and data.get("exitCode") == _HOOK_BLOCKED
            call = None if blocked else data.get("toolUseID")
        else:
            continue
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
    header = _header(session_id, first, spawned_by=spawned_by, agent_id=agent_id)
    session = _Session(session_id, Builder(header, first.get("timestamp")), chain, links)
    events = session.read(lines, first.get("timestamp"))
    return Transcript(
        kind=CLAUDE_CODE,
        session_id=session_id,
        events=events,
        calls=session.calls,
        counted=dict(session.build.counted),
        open_calls=session.open_calls(),
        stopped_by_user=session.stopped_after_reply,
    )


def _header(
    session_id: str,
    first: dict[str, Any],
    *,
    spawned_by: ev.SpawnedBy | None,
    agent_id: str | None,
) -> ev.Session:
    """The session header, its details taken from the chain's first stamped line."""
    meta: dict[str, Any] = {"source": CLAUDE_CODE}
    for key in ("version", "cwd", "gitBranch", "sessionId"):
        if key in first:
            meta[key] = first[key]
    return ev.Session(
        session_id=session_id,
        created_at=foreign_time(first.get("timestamp")),
        agent=ev.Agent(id=agent_id, type=CLAUDE_CODE if agent_id is None else "subagent"),
        spawned_by=spawned_by,
        meta=meta,
    )


def _response_blocks(chain: list[dict[str, Any]]) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """One API response is split over several lines sharing `message.id`:
    its blocks gathered once, in chain order, each with the line it is on."""
    responses: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for record in chain:
        message_id = _response_id(record)
        if record.get("type") == "assistant" and message_id is not None:
            responses.setdefault(message_id, []).extend(
                (block, record.get("uuid")) for block in _blocks(record.get("message"))
            )
    return responses


class _Session:
    """One pass over a session's lines, in file order, building its events
    from the lines on its chain and counting the rest."""

    def __init__(
        self,
        session_id: str,
        build: Builder,
        chain: list[dict[str, Any]],
        links: dict[str, str] | None,
    ) -> None:
        self.session_id = session_id
        self.build = build
        self.calls: dict[str, Call] = {}
        self.on_chain = {id(r) for r in chain}
        self.responses = _response_blocks(chain)
        self.emitted: set[str] = set()
        # Per model reply (not harness-made), the calls it asked for, in order;
        # and whether the user stopped the turn after the newest one.
        self.replies: list[list[str]] = []
        self.stopped_after_reply = False
        self.spawned_for = {call: agent for agent, call in (links or {}).items()}
        self.ts: str | None = None

    def read(self, lines: list[dict[str, Any]], first_ts: str | None) -> list[ev.Event]:
        """Every line in order, then the last turn closed if the file shows it finished."""
        started = _started_calls(lines)
        self.ts = first_ts
        for index, record in enumerate(lines):
            kind = record.get("type")
            self.ts = record.get("timestamp", self.ts)
            if index in started:
                self._started(started[index])
            elif id(record) not in self.on_chain:
                self._off_chain(kind, record)
            elif kind == "assistant":
                self._assistant(record)
            elif kind == "user":
                self._user(record)
            elif kind == "system":
                self._system(record)
        return self.build.finish(self.ts)

    def open_calls(self) -> list[str]:
        """What Claude Code's next request trips on: the newest model reply's
        calls with no result. A prompt typed after the crash (and the API error
        it got) does not settle them. Calls of older replies the tool got past
        (a model reply came after them) are history, not a brick."""
        if not self.replies or self.stopped_after_reply:
            return []
        return [cid for cid in self.replies[-1] if not self.calls[cid].answered]

    def _started(self, call_id: str) -> None:
        call = self.calls.get(call_id)
        if call is not None:
            # Proves this call started; says nothing about its siblings.
            call.started = True
            self.build.dispatch(call, self.ts)

    def _off_chain(self, kind: Any, record: dict[str, Any]) -> None:
        if kind in _CHAIN_TYPES and record.get("uuid"):
            self.build.counted["off-chain line (another branch)"] += 1
        elif kind not in _MESSAGE_TYPES:
            self.build.counted[f"{kind} line"] += 1

    def _assistant(self, record: dict[str, Any]) -> None:
        """An API response, written once (at its first line) with all its blocks."""
        message = record.get("message")
        message_id = _response_id(record)
        if record.get("isApiErrorMessage") and _model(message) == SYNTHETIC_MODEL:
            # Claude Code's note of a failed request ("API Error: 400 ..."):
            # not the model's words, and not sent back to it.
            self.build.counted["API error line (not model output)"] += 1
            return
        if message_id in self.emitted:
            return
        blocks = (
            self.responses.get(message_id)
            if message_id
            else [(block, record.get("uuid")) for block in _blocks(message)]
        )
        if message_id:
            self.emitted.add(message_id)
        parts, asked = self._reply_content(blocks or ())
        self.build.assistant(parts, asked, self.ts)
        if _model(message) != SYNTHETIC_MODEL:
            self.replies.append([request.id for request in asked])
            self.stopped_after_reply = False
        self._announce_subagents(asked)

    def _reply_content(
        self, blocks: Iterable[tuple[dict[str, Any], Any]]
    ) -> tuple[list[dict[str, Any]], list[ToolCall]]:
        """A reply's parts (text, signed reasoning) and the calls it asks for,
        each call noted with the line that asked for it."""
        parts: list[dict[str, Any]] = []
        asked: list[ToolCall] = []
        for block, line_uuid in blocks:
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
                self.calls[block["id"]] = Call(
                    call_id=block["id"],
                    name=str(block.get("name")),
                    kind="tool_use",
                    asked_by=line_uuid if isinstance(line_uuid, str) else None,
                )
        return parts, asked

    def _announce_subagents(self, asked: list[ToolCall]) -> None:
        """A `subagent_spawned` for each call that ran a subagent with a file of its own."""
        for request in asked:
            agent = self.spawned_for.get(request.id)
            if agent is not None:
                self.build.add(
                    ev.SubagentSpawned(
                        agent_id=agent,
                        agent_type="subagent",
                        call_id=request.id,
                        child=child_session_id(self.session_id, agent),
                    ),
                    self.ts,
                )

    def _user(self, record: dict[str, Any]) -> None:
        """A user line: tool results, then any text (a prompt, an interrupt, a meta note)."""
        build, ts = self.build, self.ts
        texts: list[str] = []
        for block in _blocks(record.get("message")):
            btype = block.get("type")
            if btype == "tool_result":
                self._result(block)
            elif btype == "text":
                texts.append(str(block.get("text", "")))
            elif btype in ("image", "document"):
                texts.append(f"[{btype}]")
        text = "\n".join(texts)
        if not text:
            return
        if text.startswith(INTERRUPT_PREFIX):
            # The user stopped the turn: not a crash (a call it leaves
            # unanswered is still owed, and stays with the open turn).
            build.user(text, ts, injected="interrupt")
            build.end_turn_if_settled(ev.TurnEndReason.CANCELLED.value, ts)
            self.stopped_after_reply = True
        elif record.get("isMeta"):
            build.user(text, ts, injected="meta")
        else:
            build.prompt(text, ts)

    def _result(self, block: dict[str, Any]) -> None:
        call_id = str(block.get("tool_use_id"))
        known = self.calls.get(call_id)
        if known is not None:
            known.answered = True
        self.build.result(
            call_id,
            known.name if known is not None else None,
            foreign_text(block.get("content")),
            bool(block.get("is_error")),
            self.ts,
        )

    def _system(self, record: dict[str, Any]) -> None:
        if record.get("subtype") in _TURN_ENDS and not self.build.fold.owed_in_open_turn():
            self.build.end_turn(ev.TurnEndReason.COMPLETE.value, self.ts)
        else:
            self.build.counted[f"system {record.get('subtype')} line"] += 1


def _session_id(lines: list[dict[str, Any]], path: str, problems: list[Problem]) -> str:
    """The session's id: its lines' `sessionId`, or the file's name. Content
    names files and store keys, so it is validated first, never trusted."""
    for record in lines:
        found = record.get("sessionId")
        if isinstance(found, str):
            try:
                return validate_session_id(found)
            except InvalidSessionIdError as error:
                problems.append(Problem(message=f"unusable sessionId: {error.message}"))
                break
    stem = os.path.basename(path).removesuffix(".jsonl")
    try:
        return validate_session_id(stem)
    except InvalidSessionIdError:
        return "claude-code-session"


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
        prompt = foreign_text(_blocks(root.get("message")))
        call_id = next(
            (
                cid
                for cid, args in parent_calls.items()
                if foreign_text(args.get("prompt")) == prompt
            ),
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


def read_claude_code(path: str, *, subagents: bool = True) -> Transcript:
    """Read a Claude Code session file (and its subagents' files) as turnlog events."""
    return from_parsed(parse(read_file(path)), path, subagents=subagents)


def from_parsed(parsed: Parsed, path: str, *, subagents: bool = True) -> Transcript:
    """The transcript of parsed lines: a whole file, or only its tail (a scan)."""
    lines, duplicates, damaged = _dedupe(parsed)
    problems = list(parsed.problems)
    session_id = _session_id(lines, path, problems)
    agent = agent_of(lines, path)
    if agent is not None:
        return _agent_file(parsed, path, lines, session_id, agent, problems)
    main = [r for r in lines if r.get("isSidechain") is not True]
    chain, tip = _main_chain(main)
    links = _links(main)
    transcript = _convert(session_id, main, chain, links=links)
    transcript.problems = tuple(problems)
    transcript.torn = parsed.torn
    transcript.tip = tip
    _count(transcript, lines, duplicates, damaged)
    if not subagents:
        return transcript
    task_prompts = {
        c.call_id: _call_arguments(transcript, c.call_id) for c in transcript.calls.values()
    }
    transcript.children.extend(_inline_sidechains(session_id, lines, task_prompts))
    for agent_file in agent_files(path, session_id, transcript.counted):
        try:
            child_parsed = parse(read_file(agent_file))
        except (OSError, TurnlogError):
            key = "subagent file not read (not a regular file, or unreadable)"
            transcript.counted[key] = transcript.counted.get(key, 0) + 1
            continue
        child_lines, _, _ = _dedupe(child_parsed)
        child_agent = agent_of(child_lines, agent_file) or os.path.basename(
            agent_file
        ).removesuffix(".jsonl").removeprefix("agent-")
        try:
            validate_agent_id(child_agent)
        except InvalidSessionIdError:
            key = "subagent file with an unusable agent id"
            transcript.counted[key] = transcript.counted.get(key, 0) + 1
            continue
        child = _agent_file(
            child_parsed, agent_file, child_lines, session_id, child_agent, [], links=links
        )
        transcript.children.append(child)
    return transcript


def _agent_file(
    parsed: Parsed,
    path: str,
    lines: list[dict[str, Any]],
    parent_id: str,
    agent: str,
    problems: list[Problem],
    *,
    links: dict[str, str] | None = None,
) -> Transcript:
    """A subagent's own file: a child session of the session its lines name,
    wherever the file is found (it carries its parent's `sessionId`)."""
    try:
        child_id = child_session_id(parent_id, validate_agent_id(agent))
    except InvalidSessionIdError as error:
        raise UsageError(
            f"{path} is a subagent file with an unusable agent id {agent!r}",
            hint="it is imported with its parent session when its id is usable",
        ) from error
    chain, tip = _main_chain([r for r in lines if r.get("uuid")])
    child = _convert(
        child_id,
        lines,
        chain,
        spawned_by=ev.SpawnedBy(
            session_id=parent_id, call_id=(links or {}).get(agent), agent_id=agent
        ),
        agent_id=agent,
    )
    child.problems = tuple(problems)
    child.torn = parsed.torn
    child.tip = tip
    child.agent_id = agent
    child.parent_session = parent_id
    return child


def _count(
    transcript: Transcript, lines: list[dict[str, Any]], duplicates: int, damaged: int
) -> None:
    if duplicates:
        transcript.counted["repeated uuid (a resume's copy)"] = duplicates
    if damaged:
        transcript.counted["record on a damaged line (Claude Code skips the line)"] = damaged
    summaries = sum(1 for r in lines if r.get("type") == "summary")
    if summaries:
        transcript.counted["summary line"] = summaries


def _call_arguments(transcript: Transcript, call_id: str) -> dict[str, Any]:
    for event in transcript.events:
        if isinstance(event.data, ev.AssistantMessage):
            for call in event.data.tool_calls:
                if call.id == call_id and isinstance(call.arguments, dict):
                    return call.arguments
    return {}
