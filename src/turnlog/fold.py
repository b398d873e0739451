"""The fold: events in, session state out (transcript, open turn, owed calls). Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.events import Content, Event, ToolCall


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


class CallSighting(msgspec.Struct, frozen=True, kw_only=True):
    """What the log shows about one tool call inside a turn."""

    call_id: str
    name: str | None
    first_seq: int
    # The step_start seq of the step the call was requested in, if any.
    step_seq: int | None
    step_closed: bool
    dispatch: ev.ToolDispatch | None
    dispatch_seq: int | None


class OpenStep(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    turn: int | None
    step: int | None


class OpenTurn(msgspec.Struct, frozen=True, kw_only=True):
    """A turn with a `turn_start` and, so far, no `turn_end`."""

    seq: int
    turn: int | None
    steps: int
    open_step: OpenStep | None
    dispatched_any: bool
    # Every call requested or dispatched in the turn, answered or not, in
    # order of first sighting.
    calls: tuple[CallSighting, ...]


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the fold knows; equal to a fresh fold of the same events."""

    session: ev.Session | None
    next_seq: int
    last_ts: str | None
    messages: tuple[Message, ...]
    # Innermost last. Turns never nest in a healthy log; a `turn_start` while
    # a turn is open is kept as a second open turn (and warned about).
    open_turns: tuple[OpenTurn, ...]
    answered: frozenset[str]
    # Dispatched calls with no result yet, in dispatch order.
    in_flight: tuple[str, ...]
    needs_response: bool
    revivals: int
    turns: int
    last_turn: int | None
    subagents: tuple[ev.SubagentSpawned, ...]
    warnings: tuple[str, ...]

    @property
    def session_id(self) -> str | None:
        return self.session.session_id if self.session is not None else None

    @property
    def open_turn(self) -> OpenTurn | None:
        return self.open_turns[-1] if self.open_turns else None

    @property
    def owed_calls(self) -> tuple[CallSighting, ...]:
        """Calls in open turns with no result anywhere, outermost turn first."""
        return tuple(
            call
            for turn in self.open_turns
            for call in turn.calls
            if call.call_id not in self.answered
        )


class _MutableTurn:
    __slots__ = ("calls", "closed_steps", "dispatched_any", "open_step", "seq", "steps", "turn")

    def __init__(self, seq: int, turn: int | None) -> None:
        self.seq = seq
        self.turn = turn
        self.steps = 0
        self.open_step: OpenStep | None = None
        self.closed_steps: set[int] = set()
        self.dispatched_any = False
        # call_id -> [name, first_seq, step_seq, dispatch, dispatch_seq]
        self.calls: dict[str, list[Any]] = {}

    def freeze(self) -> OpenTurn:
        return OpenTurn(
            seq=self.seq,
            turn=self.turn,
            steps=self.steps,
            open_step=self.open_step,
            dispatched_any=self.dispatched_any,
            calls=tuple(
                CallSighting(
                    call_id=call_id,
                    name=name,
                    first_seq=first_seq,
                    step_seq=step_seq,
                    step_closed=step_seq is not None and step_seq in self.closed_steps,
                    dispatch=dispatch,
                    dispatch_seq=dispatch_seq,
                )
                for call_id, (
                    name,
                    first_seq,
                    step_seq,
                    dispatch,
                    dispatch_seq,
                ) in self.calls.items()
            ),
        )


class Fold:
    """An incremental fold: `apply` one event at a time, read `state` any time.

    Each `apply` costs O(1) except a compaction, which rebuilds the transcript.
    """

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._session: ev.Session | None = None
        self._next_seq = 0
        self._last_ts: str | None = None
        self._messages: list[Message] = []
        self._turns_open: list[_MutableTurn] = []
        self._answered: set[str] = set()
        self._in_flight: dict[str, None] = {}
        self._needs_response = False
        self._revivals = 0
        self._turns = 0
        self._last_turn: int | None = None
        self._subagents: list[ev.SubagentSpawned] = []
        self._warnings: list[str] = []
        self._snapshot: SessionState | None = None
        self._handlers: dict[type, Callable[[Event, Any], None]] = {
            ev.Session: self._on_session,
            ev.SystemMessage: self._on_system,
            ev.UserMessage: self._on_user,
            ev.AssistantMessage: self._on_assistant,
            ev.ToolResult: self._on_tool_result,
            ev.TurnStart: self._on_turn_start,
            ev.TurnEnd: self._on_turn_end,
            ev.StepStart: self._on_step_start,
            ev.StepEnd: self._on_step_end,
            ev.ToolDispatch: self._on_dispatch,
            ev.Compaction: self._on_compaction,
            ev.RunRevived: self._on_revived,
            ev.SubagentSpawned: self._on_spawned,
        }
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        seq = event.seq
        if seq != self._next_seq:
            self._warnings.append(f"seq {seq} follows seq {self._next_seq - 1}")
        self._next_seq = seq + 1
        ts = event.ts
        if ts is not None:
            self._last_ts = ts
        self._snapshot = None
        data = event.data
        handler = self._handlers.get(type(data))
        if handler is not None:
            handler(event, data)

    def resume_at(self, next_seq: int, *, revivals: int = 0) -> None:
        """Continue from a later seq, for tail reads that skip the middle of a log.

        The transcript then holds only what follows; open turns, owed calls and
        the last message are exact as long as the tail reaches a turn boundary.
        """
        self._next_seq = next_seq
        self._revivals = revivals
        self._snapshot = None

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    @property
    def state(self) -> SessionState:
        if self._snapshot is None:
            self._snapshot = SessionState(
                session=self._session,
                next_seq=self._next_seq,
                last_ts=self._last_ts,
                messages=tuple(self._messages),
                open_turns=tuple(turn.freeze() for turn in self._turns_open),
                answered=frozenset(self._answered),
                in_flight=tuple(self._in_flight),
                needs_response=self._needs_response,
                revivals=self._revivals,
                turns=self._turns,
                last_turn=self._last_turn,
                subagents=tuple(self._subagents),
                warnings=tuple(self._warnings),
            )
        return self._snapshot

    # Cheap accessors for hot paths that must not build a snapshot.
    @property
    def next_seq(self) -> int:
        return self._next_seq

    @property
    def turn_open(self) -> bool:
        return bool(self._turns_open)

    @property
    def step_open(self) -> bool:
        return bool(self._turns_open) and self._turns_open[-1].open_step is not None

    @property
    def revivals(self) -> int:
        return self._revivals

    @property
    def last_turn_number(self) -> int:
        """The last turn's number, or the count of turns when none was numbered."""
        return self._last_turn if self._last_turn is not None else self._turns

    def is_answered(self, call_id: str) -> bool:
        return call_id in self._answered

    def owed_in_open_turn(self) -> list[str]:
        """Unanswered calls of the innermost open turn, without building a snapshot."""
        if not self._turns_open:
            return []
        return [c for c in self._turns_open[-1].calls if c not in self._answered]

    # -- handlers -----------------------------------------------------------

    def _on_session(self, event: Event, data: ev.Session) -> None:
        if event.seq != 0:
            self._warnings.append(f"session header at seq {event.seq}, expected seq 0")
        if self._session is None:
            self._session = data

    def _on_system(self, event: Event, data: ev.SystemMessage) -> None:
        self._messages.append(
            Message(role="system", content=data.content, seq=event.seq, origin=event.origin)
        )

    def _on_user(self, event: Event, data: ev.UserMessage) -> None:
        self._messages.append(
            Message(
                role="user",
                content=data.content,
                seq=event.seq,
                origin=event.origin,
                injected=data.injected,
            )
        )
        self._needs_response = True

    def _on_assistant(self, event: Event, data: ev.AssistantMessage) -> None:
        self._messages.append(
            Message(
                role="assistant",
                content=data.content,
                seq=event.seq,
                tool_calls=tuple(data.tool_calls),
                origin=event.origin,
            )
        )
        self._needs_response = bool(data.tool_calls)
        if self._turns_open and data.tool_calls:
            turn = self._turns_open[-1]
            step_seq = turn.open_step.seq if turn.open_step is not None else None
            for call in data.tool_calls:
                if call.id not in turn.calls:
                    turn.calls[call.id] = [call.name, event.seq, step_seq, None, None]

    def _on_tool_result(self, event: Event, data: ev.ToolResult) -> None:
        if data.call_id in self._answered:
            self._warnings.append(f"seq {event.seq}: second result for call {data.call_id!r}")
        self._answered.add(data.call_id)
        self._in_flight.pop(data.call_id, None)
        self._messages.append(
            Message(
                role="tool",
                content=data.content,
                seq=event.seq,
                call_id=data.call_id,
                name=data.name,
                is_error=data.is_error,
                origin=event.origin,
                risk=data.risk,
            )
        )
        self._needs_response = True

    def _on_turn_start(self, event: Event, data: ev.TurnStart) -> None:
        if self._turns_open:
            self._warnings.append(
                f"seq {event.seq}: turn_start while the turn at seq "
                f"{self._turns_open[-1].seq} is still open"
            )
        self._turns_open.append(_MutableTurn(event.seq, data.turn))
        self._turns += 1
        if data.turn is not None:
            self._last_turn = data.turn

    def _on_turn_end(self, event: Event, data: ev.TurnEnd) -> None:
        if not self._turns_open:
            self._warnings.append(f"seq {event.seq}: turn_end closes no open turn")
            return
        self._turns_open.pop()

    def _on_step_start(self, event: Event, data: ev.StepStart) -> None:
        if not self._turns_open:
            self._warnings.append(f"seq {event.seq}: step_start outside any turn")
            return
        turn = self._turns_open[-1]
        if turn.open_step is not None:
            self._warnings.append(
                f"seq {event.seq}: step_start while the step at seq {turn.open_step.seq} is open"
            )
        turn.open_step = OpenStep(seq=event.seq, turn=data.turn, step=data.step)
        turn.steps += 1

    def _on_step_end(self, event: Event, data: ev.StepEnd) -> None:
        turn = self._turns_open[-1] if self._turns_open else None
        if turn is None or turn.open_step is None:
            self._warnings.append(f"seq {event.seq}: step_end closes no open step")
            return
        turn.closed_steps.add(turn.open_step.seq)
        turn.open_step = None

    def _on_dispatch(self, event: Event, data: ev.ToolDispatch) -> None:
        if data.call_id not in self._answered:
            self._in_flight[data.call_id] = None
        if not self._turns_open:
            self._warnings.append(f"seq {event.seq}: tool_dispatch outside any turn")
            return
        turn = self._turns_open[-1]
        turn.dispatched_any = True
        sighting = turn.calls.get(data.call_id)
        if sighting is None:
            step_seq = turn.open_step.seq if turn.open_step is not None else None
            turn.calls[data.call_id] = [data.name, event.seq, step_seq, data, event.seq]
        elif sighting[3] is None:
            sighting[3] = data
            sighting[4] = event.seq

    def _on_compaction(self, event: Event, data: ev.Compaction) -> None:
        if self._turns_open:
            self._warnings.append(f"seq {event.seq}: compaction inside an open turn")
        kept = [m for m in self._messages if m.seq > data.through_seq]
        summary = Message(
            role="user",
            content=data.summary,
            seq=event.seq,
            origin=event.origin,
            kind="compaction",
        )
        self._messages = [summary, *kept]

    def _on_revived(self, event: Event, data: ev.RunRevived) -> None:
        self._revivals += 1

    def _on_spawned(self, event: Event, data: ev.SubagentSpawned) -> None:
        self._subagents.append(data)


def fold(events: Iterable[Event]) -> SessionState:
    """Fold a whole sequence of events into a fresh state."""
    return Fold(events).state
