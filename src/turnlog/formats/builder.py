"""A foreign transcript read as turnlog events: the turn structure importers share."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, TornTail
from turnlog.core.fold import Fold
from turnlog.events import Content, Event, Origin, ToolCall

IMPORT = Origin.IMPORT.value


class Call(msgspec.Struct, kw_only=True):
    """What the foreign file shows about one tool call."""

    call_id: str
    name: str
    # How the tool writes its output line (Codex: "function", "custom"; Claude
    # Code: "tool_use").
    kind: str = "function"
    # The line that asked for it (Claude Code: the uuid of the line holding its
    # `tool_use` block, which is what a result line names as its parent).
    asked_by: str | None = None
    # An output line for it is in the file.
    answered: bool = False
    # A line proves the call started (a Claude Code `progress` line for it,
    # Codex's `exec_command_begin`). Its absence proves nothing: Claude Code
    # writes progress lines only for tools with hooks.
    started: bool = False
    # The importer's turn number when the call was asked for.
    turn: int = 0
    # The real output, recorded by a line that is not model input (Codex's
    # `exec_command_end`), when the output line itself never reached the file.
    recorded_output: str | None = None


class Transcript(msgspec.Struct, kw_only=True):
    """One conversation of a foreign file, as turnlog events (`origin: import`),
    with what a repair of the file in its own format needs."""

    kind: str
    session_id: str
    events: list[Event]
    calls: dict[str, Call]
    problems: tuple[Problem, ...] = ()
    torn: TornTail | None = None
    # Line types read but not imported, and lines skipped, by reason.
    counted: dict[str, int] = msgspec.field(default_factory=dict)
    # The newest line of the main chain (Claude Code), whose envelope a repair copies.
    tip: dict[str, Any] | None = None
    # Subagents, each linked to its parent by `spawned_by` in its header.
    children: list[Transcript] = msgspec.field(default_factory=list)
    # The file's format variant, for writing lines the same way (Codex legacy).
    variant: str = ""
    # The calls a repair answers, in call order: those left unanswered where
    # the tool's next request will trip on them (see each reader).
    open_calls: list[str] = msgspec.field(default_factory=list)
    # The user stopped the newest turn (Claude Code's "[Request interrupted by
    # user", Codex's `turn_aborted`): not a crash, nothing for a repair.
    stopped_by_user: bool = False
    # Set for a subagent's own file: the agent id and the parent session.
    agent_id: str | None = None
    parent_session: str | None = None


def foreign_time(value: object) -> str | None:
    """A foreign line's time as an event's `ts`: an ISO 8601 string, kept as
    written; anything else (a number, a list, text that is no time) is no
    time the file proves, so none."""
    if not isinstance(value, str):
        return None
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def foreign_id(value: object) -> str | None:
    """A foreign record's id when it is a string: one that is not (a number,
    a list) names nothing turnlog can match on."""
    return value if isinstance(value, str) and value else None


class Builder:
    """Builds a valid turnlog event sequence from foreign lines: turn and step
    boundaries where the foreign format implies them, results where it shows them."""

    def __init__(self, header: ev.Session, ts: str | None) -> None:
        self.events: list[Event] = []
        self.fold = Fold(keep_transcript=False)
        self.counted: Counter[str] = Counter()
        self._last_role: str | None = None
        self._last_calls = False
        # The last assistant message held only reasoning: cut, not finished.
        self._last_reasoning_only = False
        self._turns = 0
        self._steps = 0
        self.add(header, ts)

    def add(self, data: ev.EventData, ts: object, origin: str | None = IMPORT) -> Event:
        event = Event(seq=len(self.events), data=data, ts=foreign_time(ts), origin=origin)
        self.events.append(event)
        self.fold.apply(event)
        return event

    @property
    def turn_open(self) -> bool:
        return self.fold.turn_open

    @property
    def turn_number(self) -> int:
        return self._turns

    def start_turn(self, ts: str | None) -> None:
        self._turns += 1
        self._steps = 0
        self.add(ev.TurnStart(turn=self._turns), ts)

    def end_turn(self, reason: str, ts: str | None) -> None:
        if not self.fold.turn_open:
            return
        if self.fold.step_open:
            self.add(ev.StepEnd(turn=self._turns, step=self._steps, outcome="ok"), ts)
        self.add(ev.TurnEnd(reason=reason, turn=self._turns, steps=self._steps), ts)

    def prompt(self, content: Content, ts: str | None, *, injected: str | None = None) -> None:
        """A user's prompt: a new turn begins.

        The turn before it ends here only when it owes nothing: a prompt typed
        after a crash (`claude --resume`, then "continue") does not make the
        crashed turn complete. It stays open, and the fold carries its owed
        calls into the new turn for recovery to answer.
        """
        if not self.fold.owed_in_open_turn():
            self.end_turn(ev.TurnEndReason.COMPLETE.value, ts)
        self.user(content, ts, injected=injected)
        self.start_turn(ts)

    def end_turn_if_settled(self, reason: str, ts: str | None) -> None:
        """End the open turn unless it still owes calls (those are a crash's,
        whatever line the tool wrote next)."""
        if not self.fold.owed_in_open_turn():
            self.end_turn(reason, ts)

    def user(self, content: Content, ts: str | None, *, injected: str | None = None) -> None:
        self.add(ev.UserMessage(content=content, injected=injected), ts)
        self._last_role, self._last_calls = "user", False

    def assistant(self, content: Content, calls: list[ToolCall], ts: str | None) -> None:
        if not self.fold.turn_open:
            self.start_turn(ts)
        if self.fold.step_open:
            self.add(ev.StepEnd(turn=self._turns, step=self._steps, outcome="ok"), ts)
        self._steps += 1
        self.add(ev.StepStart(turn=self._turns, step=self._steps), ts)
        self.add(ev.AssistantMessage(content=content, tool_calls=calls), ts)
        self._last_role, self._last_calls = "assistant", bool(calls)
        self._last_reasoning_only = not calls and is_reasoning_only(content)

    def dispatch(self, call: Call, ts: str | None) -> None:
        """Evidence that a call started, before any result: a `tool_dispatch`."""
        if call.call_id in self.fold.owed_in_open_turn() and not self.fold.is_dispatched(
            call.call_id
        ):
            self.add(ev.ToolDispatch(call_id=call.call_id, name=call.name), ts)

    def result(
        self, call_id: str, name: str | None, content: Content, is_error: bool, ts: str | None
    ) -> None:
        if not self.fold.turn_open:
            # A result with no turn around it (a resumed file's first lines, say).
            self.start_turn(ts)
        self.add(ev.ToolResult(call_id=call_id, name=name, content=content, is_error=is_error), ts)
        self._last_role, self._last_calls = "tool", False

    def finish(self, ts: str | None) -> list[Event]:
        """Close the last turn when the file shows it finished: its last message
        answers without asking for tools. Otherwise it stays open, as a crash
        left it, for recovery to judge."""
        if (
            self.fold.turn_open
            and not self.fold.owed_in_open_turn()
            and self._last_role == "assistant"
            and not self._last_calls
            and not self._last_reasoning_only
        ):
            self.end_turn(ev.TurnEndReason.COMPLETE.value, ts)
        return self.events


REASONING_PARTS = frozenset({"thinking", "redacted_thinking", "reasoning"})


def is_reasoning_only(content: Content) -> bool:
    """True for assistant content that holds parts, all of them reasoning: a
    message that asked for nothing and said nothing (a crash cut the reply)."""
    if not isinstance(content, list) or not content:
        return False
    return all(isinstance(p, dict) and p.get("type") in REASONING_PARTS for p in content)
