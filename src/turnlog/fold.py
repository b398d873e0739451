"""The fold: events in, session state out (transcript, open turn, owed calls). Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, SupportsIndex

import msgspec

from turnlog import events as ev
from turnlog.events import Content, Event, Origin, ToolCall


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


class CallSighting(msgspec.Struct, frozen=True, kw_only=True):
    """What the log shows about one tool call inside the open turn."""

    call_id: str
    name: str | None
    first_seq: int
    # The step_start seq of the step the call was requested in, if any.
    step_seq: int | None
    step_closed: bool
    dispatch: ev.ToolDispatch | None
    dispatch_seq: int | None
    # A result for this request came after it, in this turn.
    answered: bool = False
    # An assistant message asked for the call (a dispatch alone does not).
    requested: bool = True
    # A compaction replaced the message that asked for it.
    swallowed: bool = False
    # Sighted in an earlier turn that a `turn_start` left open (a log no
    # turnlog writer makes): that turn's facts do not prove the call's fate.
    carried: bool = False

    @property
    def orphaned(self) -> bool:
        """No message in the live transcript asks for this call, so a
        provider would reject any result for it."""
        return self.swallowed or not self.requested


class BackgroundChild(msgspec.Struct, frozen=True, kw_only=True):
    """A background subagent of this session: spawned, maybe settled, maybe
    delivered (`delivered` is the seq of the message or result that did)."""

    spawned: ev.SubagentSpawned
    settled: ev.SubagentSettled | None = None
    delivered: int | None = None

    @property
    def agent_id(self) -> str:
        return self.spawned.agent_id


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
    # The turn holds a result written by the agent (or imported) for a call
    # with no dispatch before it: this writer does not dispatch ahead, so the
    # turn proves nothing about which of its calls ran.
    result_without_dispatch: bool
    # Every call requested or dispatched in the turn, answered or not, in
    # order of first sighting.
    calls: tuple[CallSighting, ...]
    # Subagents the turn spawned from a tool call, newest per call id.
    spawns: tuple[ev.SubagentSpawned, ...] = ()

    @property
    def owed(self) -> tuple[CallSighting, ...]:
        """The calls of this turn that no result answered, in order of first sighting."""
        return tuple(call for call in self.calls if not call.answered)


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


# Results written by turnlog itself while closing calls it knows about; they
# say nothing about whether the agent dispatches ahead.
# A deadline's or a budget's results are a live writer's claims about calls
# it settled itself (D1, D2, B1), so they count as synthetic too.
_SYNTHETIC_ORIGINS: Final = frozenset(
    {
        Origin.RECOVERY.value,
        Origin.UNWIND.value,
        Origin.REVIVAL.value,
        Origin.PATCH.value,
        Origin.DEADLINE.value,
        Origin.BUDGET.value,
        Origin.BACKGROUND.value,
    }
)


class _Call:
    __slots__ = (
        "answered",
        "carried",
        "dispatch",
        "dispatch_seq",
        "first_seq",
        "name",
        "request_seq",
        "step_seq",
        "swallowed",
    )

    def __init__(
        self,
        name: str | None,
        first_seq: int,
        step_seq: int | None,
        dispatch: ev.ToolDispatch | None = None,
        dispatch_seq: int | None = None,
    ) -> None:
        self.name = name
        self.first_seq = first_seq
        self.step_seq = step_seq
        self.dispatch = dispatch
        self.dispatch_seq = dispatch_seq
        self.answered = False
        # The seq of the assistant message that asked for the call, if any.
        self.request_seq: int | None = None if dispatch is not None else first_seq
        self.swallowed = False
        self.carried = False


class _MutableTurn:
    __slots__ = (
        "calls",
        "closed_steps",
        "dispatched_any",
        "floor",
        "open_step",
        "result_without_dispatch",
        "seq",
        "spawns",
        "steps",
        "turn",
    )

    def __init__(self, seq: int, turn: int | None) -> None:
        self.seq = seq
        # The oldest seq this turn's calls were asked at: its own start, or
        # that of an earlier turn left open whose calls it carries.
        self.floor = seq
        self.turn = turn
        self.steps = 0
        self.open_step: OpenStep | None = None
        self.closed_steps: set[int] = set()
        self.dispatched_any = False
        self.result_without_dispatch = False
        self.calls: dict[str, _Call] = {}
        self.spawns: dict[str, ev.SubagentSpawned] = {}

    def sight(self, call_id: str, call: _Call) -> None:
        # A request for an id already answered in this turn is a new call:
        # it goes last, in order of first sighting.
        self.calls.pop(call_id, None)
        self.calls[call_id] = call

    def freeze(self) -> OpenTurn:
        return OpenTurn(
            seq=self.seq,
            turn=self.turn,
            steps=self.steps,
            open_step=self.open_step,
            dispatched_any=self.dispatched_any,
            result_without_dispatch=self.result_without_dispatch,
            calls=tuple(
                CallSighting(
                    call_id=call_id,
                    name=call.name,
                    first_seq=call.first_seq,
                    step_seq=call.step_seq,
                    step_closed=call.step_seq is not None and call.step_seq in self.closed_steps,
                    dispatch=call.dispatch,
                    dispatch_seq=call.dispatch_seq,
                    answered=call.answered,
                    requested=call.request_seq is not None,
                    swallowed=call.swallowed,
                    carried=call.carried,
                )
                for call_id, call in self.calls.items()
            ),
            spawns=tuple(self.spawns.values()),
        )


class _NoTranscript(list[Message]):
    """A transcript that keeps nothing, for folds that only check bookkeeping."""

    def append(self, message: Message) -> None:
        pass

    def insert(self, index: SupportsIndex, message: Message) -> None:
        pass


class Fold:
    """An incremental fold: `apply` one event at a time, read `state` any time.

    Each `apply` costs O(1) except a compaction, which rebuilds the transcript,
    and a result that arrives after later messages (recovery appends results
    at the end of a turn), which is moved back beside the message that asked.
    """

    def __init__(self, events: Iterable[Event] = (), *, keep_transcript: bool = True) -> None:
        self._session: ev.Session | None = None
        self._next_seq = 0
        self._last_ts: str | None = None
        # Without a transcript, memory is bounded by the open turn: for checks
        # that stream a whole log.
        self._messages: list[Message] = [] if keep_transcript else _NoTranscript()
        self._turn: _MutableTurn | None = None
        # Call ids of the newest assistant message that asked for tools, while
        # only their results have followed it: results for them append.
        self._asking: frozenset[str] = frozenset()
        self._needs_response = False
        self._revivals = 0
        self._turns = 0
        self._last_turn: int | None = None
        self._subagents: list[ev.SubagentSpawned] = []
        self._background: dict[str, BackgroundChild] = {}
        self._warnings: list[str] = []
        self._snapshot: SessionState | None = None
        self._last_said: Message | None = None
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
            ev.SubagentSettled: self._on_settled,
        }
        self.extend(events)

    def apply(self, event: Event) -> None:
        self.extend((event,))

    def resume_at(self, next_seq: int, *, revivals: int = 0) -> None:
        """Continue from a later seq, for tail reads that skip the middle of a log.

        The transcript then holds only what follows; the open turn, owed calls
        and the last message are exact as long as the tail reaches a turn boundary.
        """
        self._next_seq = next_seq
        self._revivals = revivals
        self._snapshot = None

    def extend(self, events: Iterable[Event]) -> None:
        """Fold each event in turn: the one home of the per-event steps
        (`apply` is this for one event). A load runs the loop once per event
        of the log, so it runs here, not through a call per event."""
        handlers = self._handlers
        self._snapshot = None
        for event in events:
            seq = event.seq
            if seq != self._next_seq:
                self._warnings.append(f"seq {seq} follows seq {self._next_seq - 1}")
            self._next_seq = seq + 1
            ts = event.ts
            if ts is not None:
                self._last_ts = ts
            data = event.data
            handler = handlers.get(type(data))
            if handler is not None:
                handler(event, data)

    @property
    def state(self) -> SessionState:
        if self._snapshot is None:
            self._snapshot = SessionState(
                session=self._session,
                next_seq=self._next_seq,
                last_ts=self._last_ts,
                messages=tuple(self._messages),
                open_turn=self._turn.freeze() if self._turn is not None else None,
                needs_response=self._needs_response,
                revivals=self._revivals,
                turns=self._turns,
                last_turn=self._last_turn,
                subagents=tuple(self._subagents),
                warnings=tuple(self._warnings),
                background=tuple(self._background.values()),
            )
        return self._snapshot

    # Cheap accessors for hot paths and verdicts that must not build a snapshot.
    @property
    def session(self) -> ev.Session | None:
        return self._session

    @property
    def next_seq(self) -> int:
        return self._next_seq

    @property
    def last_ts(self) -> str | None:
        return self._last_ts

    @property
    def needs_response(self) -> bool:
        return self._needs_response

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._warnings)

    @property
    def turn_open(self) -> bool:
        return self._turn is not None

    @property
    def step_open(self) -> bool:
        return self._turn is not None and self._turn.open_step is not None

    @property
    def open_turn(self) -> OpenTurn | None:
        """The open turn, frozen; costs the turn's calls, not the transcript."""
        return self._turn.freeze() if self._turn is not None else None

    @property
    def revivals(self) -> int:
        return self._revivals

    @property
    def last_turn(self) -> int | None:
        return self._last_turn

    @property
    def last_turn_number(self) -> int:
        """The last turn's number, or the count of turns when none was numbered."""
        return self._last_turn if self._last_turn is not None else self._turns

    def last_message(self) -> Message | None:
        """The newest message someone said (system, user or assistant) that is
        still in the transcript: what the conversation last said.

        Tool results do not count: a result is placed beside the message that
        asked for it, so the newest one written may sit before later words,
        and a tail reader that never saw the asking message could not place
        it. Taken in log order, this is the same from a tail as from the
        whole log (`tail.collect_tail` reads back to it).
        """
        return self._last_said

    def is_answered(self, call_id: str) -> bool:
        """True when the open turn asked for `call_id` and a result answered it."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return call is not None and call.answered

    def is_dispatched(self, call_id: str) -> bool:
        """True when the open turn dispatched `call_id` and no result answered it yet."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return call is not None and call.dispatch is not None and not call.answered

    def open_dispatch_seq(self, call_id: str) -> int | None:
        """The seq of the open turn's unanswered dispatch of `call_id`, if any."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        if call is None or call.answered:
            return None
        return call.dispatch_seq

    def is_requested(self, call_id: str) -> bool:
        """True when a message of the open turn asked for `call_id`, it is
        still in the live transcript, and no result answered it yet."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return (
            call is not None
            and not call.answered
            and call.request_seq is not None
            and not call.swallowed
        )

    def owed_requested_through(self, seq: int) -> list[str]:
        """Owed calls of the open turn asked for at or before `seq`: those a
        compaction through `seq` would leave without their request."""
        if self._turn is None:
            return []
        return [
            call_id
            for call_id, call in self._turn.calls.items()
            if not call.answered and call.request_seq is not None and call.request_seq <= seq
        ]

    def owed_in_open_turn(self) -> list[str]:
        """Unanswered calls of the open turn, without building a snapshot."""
        if self._turn is None:
            return []
        return [call_id for call_id, call in self._turn.calls.items() if not call.answered]

    def owed_in_open_step(self) -> list[str]:
        """Unanswered calls requested in the open step."""
        turn = self._turn
        if turn is None or turn.open_step is None:
            return []
        step_seq = turn.open_step.seq
        return [
            call_id
            for call_id, call in turn.calls.items()
            if not call.answered and call.step_seq == step_seq
        ]

    # -- handlers -----------------------------------------------------------

    def _on_session(self, event: Event, data: ev.Session) -> None:
        if event.seq != 0:
            self._warnings.append(f"session header at seq {event.seq}, expected seq 0")
        if self._session is None:
            self._session = data

    def _on_system(self, event: Event, data: ev.SystemMessage) -> None:
        self._asking = frozenset()
        message = Message(role="system", content=data.content, seq=event.seq, origin=event.origin)
        self._messages.append(message)
        self._last_said = message

    def _on_user(self, event: Event, data: ev.UserMessage) -> None:
        self._asking = frozenset()
        if data.delivers is not None:
            self._deliver(event, data.delivers)
        message = Message(
            role="user",
            content=data.content,
            seq=event.seq,
            origin=event.origin,
            injected=data.injected,
            render_as=data.render_as,
        )
        self._messages.append(message)
        self._last_said = message
        self._needs_response = True

    def _on_assistant(self, event: Event, data: ev.AssistantMessage) -> None:
        calls = data.tool_calls
        self._asking = frozenset(call.id for call in calls)
        message = Message(
            role="assistant",
            content=data.content,
            seq=event.seq,
            tool_calls=tuple(calls),
            origin=event.origin,
        )
        self._messages.append(message)
        self._last_said = message
        self._needs_response = bool(calls)
        turn = self._turn
        if turn is None and calls:
            self._warnings.append(f"seq {event.seq}: tool calls asked for outside any turn")
        if turn is not None and calls:
            step_seq = turn.open_step.seq if turn.open_step is not None else None
            for call in calls:
                known = turn.calls.get(call.id)
                if known is None or known.answered:
                    turn.sight(call.id, _Call(call.name, event.seq, step_seq))
                elif known.request_seq is None:
                    # Dispatched before any message asked for it; asked now.
                    known.request_seq = event.seq

    def _on_tool_result(self, event: Event, data: ev.ToolResult) -> None:
        if data.delivers is not None:
            self._deliver(event, data.delivers)
        call_id = data.call_id
        turn = self._turn
        orphaned = data.orphaned
        if turn is not None:
            call = turn.calls.get(call_id)
            if call is not None and call.answered:
                self._warnings.append(f"seq {event.seq}: second result for call {call_id!r}")
            elif call is not None:
                call.answered = True
                orphaned = orphaned or call.swallowed or call.request_seq is None
            if (call is None or call.dispatch is None) and event.origin not in _SYNTHETIC_ORIGINS:
                turn.result_without_dispatch = True
        else:
            self._warnings.append(f"seq {event.seq}: result for {call_id!r} outside any turn")
        if orphaned:
            # Its call is not in the live transcript: a provider would reject
            # the result, so it stays in the log only.
            self._needs_response = True
            return
        message = Message(
            role="tool",
            content=data.content,
            seq=event.seq,
            call_id=call_id,
            name=data.name,
            is_error=data.is_error,
            origin=event.origin,
            risk=data.risk,
        )
        if call_id in self._asking:
            self._messages.append(message)
        else:
            self._place_late_result(message)
        self._needs_response = True

    def _place_late_result(self, message: Message) -> None:
        """Put a result right after the results already beside the assistant
        message that asked for its call (DESIGN §7), looking back no further
        than the open turn; a result no message in reach asked for goes last."""
        messages = self._messages
        floor = self._turn.floor if self._turn is not None else None
        index = len(messages) - 1
        while floor is not None and index >= 0 and messages[index].seq > floor:
            candidate = messages[index]
            if candidate.role == "assistant" and any(
                call.id == message.call_id for call in candidate.tool_calls
            ):
                position = index + 1
                while position < len(messages) and messages[position].role == "tool":
                    position += 1
                messages.insert(position, message)
                return
            index -= 1
        messages.append(message)

    def _on_turn_start(self, event: Event, data: ev.TurnStart) -> None:
        if data.revivals is not None and data.revivals != self._revivals:
            self._warnings.append(
                f"seq {event.seq}: turn_start stamped with {data.revivals} revivals, after "
                f"{self._revivals}"
            )
        earlier = self._turn
        self._turn = _MutableTurn(event.seq, data.turn)
        if event.origin == Origin.IMPORT.value:
            # A turn read from another tool's file: its writer did not
            # dispatch ahead, so the turn proves nothing about which of its
            # calls ran (R1 and R4 only; a start line it recorded is R1).
            self._turn.result_without_dispatch = True
        if earlier is not None:
            # No turnlog writer starts a turn inside another; a log that does
            # (hand-made, imported) crashed in the earlier turn. Its owed calls
            # stay owed, carried into this turn, so recovery answers them too.
            carried = [(i, c) for i, c in earlier.calls.items() if not c.answered]
            self._warnings.append(
                f"seq {event.seq}: turn_start while the turn at seq {earlier.seq} is still "
                f"open; its {len(carried)} unanswered call(s) carry into the new turn"
            )
            for call_id, call in carried:
                call.carried = True
                self._turn.calls[call_id] = call
                spawn = earlier.spawns.get(call_id)
                if spawn is not None:
                    self._turn.spawns[call_id] = spawn
            if carried:
                self._turn.floor = earlier.floor
        self._turns += 1
        if data.turn is not None:
            self._last_turn = data.turn

    def _on_turn_end(self, event: Event, data: ev.TurnEnd) -> None:
        if data.turn is not None:
            self._last_turn = data.turn
        turn = self._turn
        if turn is None:
            self._warnings.append(f"seq {event.seq}: turn_end closes no open turn")
            return
        owed = [call_id for call_id, call in turn.calls.items() if not call.answered]
        if owed:
            self._warnings.append(
                f"seq {event.seq}: turn_end while calls are unanswered: {', '.join(owed)}"
            )
        self._turn = None

    def _on_step_start(self, event: Event, data: ev.StepStart) -> None:
        turn = self._turn
        if turn is None:
            self._warnings.append(f"seq {event.seq}: step_start outside any turn")
            return
        if turn.open_step is not None:
            self._warnings.append(
                f"seq {event.seq}: step_start while the step at seq {turn.open_step.seq} is open"
            )
        turn.open_step = OpenStep(seq=event.seq, turn=data.turn, step=data.step)
        turn.steps += 1

    def _on_step_end(self, event: Event, data: ev.StepEnd) -> None:
        turn = self._turn
        if turn is None or turn.open_step is None:
            self._warnings.append(f"seq {event.seq}: step_end closes no open step")
            return
        turn.closed_steps.add(turn.open_step.seq)
        turn.open_step = None

    def _on_dispatch(self, event: Event, data: ev.ToolDispatch) -> None:
        turn = self._turn
        if turn is None:
            self._warnings.append(f"seq {event.seq}: tool_dispatch outside any turn")
            return
        turn.dispatched_any = True
        call = turn.calls.get(data.call_id)
        if call is None or call.answered:
            step_seq = turn.open_step.seq if turn.open_step is not None else None
            turn.sight(data.call_id, _Call(data.name, event.seq, step_seq, data, event.seq))
        elif call.dispatch is None:
            call.dispatch = data
            call.dispatch_seq = event.seq

    def _on_compaction(self, event: Event, data: ev.Compaction) -> None:
        turn = self._turn
        if turn is not None:
            for call_id, call in turn.calls.items():
                if (
                    not call.answered
                    and call.request_seq is not None
                    and call.request_seq <= data.through_seq
                ):
                    # The message that asked for it is now in the summary: a
                    # result can no longer be shown (the writer refuses this).
                    call.swallowed = True
                    self._warnings.append(
                        f"seq {event.seq}: compaction swallows the request of owed call {call_id!r}"
                    )
        if self._last_said is not None and self._last_said.seq <= data.through_seq:
            self._last_said = None  # now inside the summary
        if isinstance(self._messages, _NoTranscript):
            return
        kept = []
        asked: set[str] = set()
        for message in self._messages:
            if message.seq <= data.through_seq:
                continue
            if message.role == "assistant":
                asked.update(call.id for call in message.tool_calls)
            elif message.role == "tool" and message.call_id not in asked:
                # Its call was compacted into the summary; alone it answers nothing.
                continue
            kept.append(message)
        summary = Message(
            role="user",
            content=data.summary,
            seq=event.seq,
            origin=event.origin,
            kind="compaction",
        )
        self._messages = [summary, *kept]
        self._asking = frozenset()

    def _on_revived(self, event: Event, data: ev.RunRevived) -> None:
        self._revivals += 1
        if data.revival != self._revivals:
            self._warnings.append(
                f"seq {event.seq}: run_revived numbered {data.revival} is revival "
                f"{self._revivals} of the log"
            )

    def _deliver(self, event: Event, agent_id: str) -> None:
        child = self._background.get(agent_id)
        if child is None:
            self._warnings.append(f"seq {event.seq}: delivers {agent_id!r}, no background spawn")
        elif child.delivered is not None:
            self._warnings.append(
                f"seq {event.seq}: second delivery of {agent_id!r} (first at seq {child.delivered})"
            )
        else:
            self._background[agent_id] = msgspec.structs.replace(child, delivered=event.seq)

    def _on_settled(self, event: Event, data: ev.SubagentSettled) -> None:
        child = self._background.get(data.agent_id)
        if child is not None and child.settled is None:
            self._background[data.agent_id] = msgspec.structs.replace(child, settled=data)

    def _on_spawned(self, event: Event, data: ev.SubagentSpawned) -> None:
        if data.background and data.agent_id not in self._background:
            self._background[data.agent_id] = BackgroundChild(spawned=data)
        self._subagents.append(data)
        if self._turn is not None and data.call_id is not None:
            self._turn.spawns[data.call_id] = data


def fold(events: Iterable[Event]) -> SessionState:
    """Fold a whole sequence of events into a fresh state."""
    return Fold(events).state
