"""The fold's output types: transcript entries, background children, session state. Pure."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from turnlog import events as ev
from turnlog.core.open_turn import CallSighting, OpenTurn
from turnlog.events import Content, ToolCall


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One provider-neutral transcript entry.

    `role` is "system", "user", "assistant" or "tool". A compaction summary is
    a "user" message with `kind="compaction"`. `seq` is the event it came from.
    """

    role: str
    content: Content
    seq: int
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    origin: str | None = None
    risk: str | None = None
    injected: str | None = None
    kind: str | None = None
    # A notice's preferred role where a provider has one in the conversation.
    render_as: str | None = None


def newest_answer(messages: Sequence[Message], call_id: str) -> Message | None:
    """The result the transcript holds for the newest request of `call_id`;
    None while that request is unanswered, or when it was never asked for.

    Call ids can repeat across turns, so only the newest request counts: the
    transcript places each result right after the message that asked for its
    call, and the newest entry naming the call decides."""
    for message in reversed(messages):
        if message.role == "tool" and message.call_id == call_id:
            return message
        if message.role == "assistant" and any(call.id == call_id for call in message.tool_calls):
            return None
    return None


class BackgroundChild(msgspec.Struct, frozen=True, kw_only=True):
    """A background subagent of this session: spawned, maybe settled, maybe
    delivered (`delivered` is the seq of the message or result that did)."""

    spawned: ev.SubagentSpawned
    settled: ev.SubagentSettled | None = None
    delivered: int | None = None

    @property
    def agent_id(self) -> str:
        return self.spawned.agent_id


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the fold knows; equal to a fresh fold of the same events."""

    session: ev.Session | None
    next_seq: int
    last_ts: str | None
    messages: tuple[Message, ...]
    # Turns never nest: a `turn_start` while a turn is open abandons the
    # earlier one (with a warning), so at most one turn is open.
    open_turn: OpenTurn | None
    needs_response: bool
    revivals: int
    turns: int
    last_turn: int | None
    subagents: tuple[ev.SubagentSpawned, ...]
    warnings: tuple[str, ...]
    # Background subagents by spawn order, with what became of their reports.
    background: tuple[BackgroundChild, ...] = ()

    @property
    def session_id(self) -> str | None:
        return self.session.session_id if self.session is not None else None

    @property
    def owed_calls(self) -> tuple[CallSighting, ...]:
        """Calls of the open turn that no result answered."""
        return self.open_turn.owed if self.open_turn is not None else ()
