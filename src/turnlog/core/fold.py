"""The fold: events in, session state out (transcript, open turn, owed calls). Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.core.fold_questions import OpenTurnQuestions
from turnlog.core.open_turn import CallSighting, MutableCall, MutableTurn, OpenStep, OpenTurn
from turnlog.core.state import BackgroundChild, Message, SessionState
from turnlog.core.transcript import NoTranscript, compacted, place_late_result
from turnlog.errors import refuse_a_path
from turnlog.events import Event, Origin
from turnlog.text import says_something

# The state types have modules of their own; they are imported from here too.
__all__ = [
    "BackgroundChild",
    "CallSighting",
    "Fold",
    "Message",
    "OpenStep",
    "OpenTurn",
    "SessionState",
    "fold",
]

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
        Origin.DECISION.value,
        Origin.EXPIRY.value,
    }
)
# An enum's `.value` is a descriptor call: the hot path reads a plain string.
_IMPORT: Final = Origin.IMPORT.value
#: The types of event the transcript holds a message for, each at its event's
#: seq: a reader that knows every such seq is covered elsewhere needs no fold.
TRANSCRIPT_TYPES: Final = frozenset(
    {"system_message", "user_message", "assistant_message", "tool_result", "compaction"}
)
_NONE_ASKED: Final[frozenset[str]] = frozenset()


class Fold(OpenTurnQuestions):
    """An incremental fold: `apply` one event at a time, read `state` any time.

    Each `apply` costs O(1) except a compaction, which rebuilds the transcript,
    and a result that arrives after later messages (recovery appends results
    at the end of a turn), which is moved back beside the message that asked.
    """

    def __init__(self, events: Iterable[Event] = (), *, keep_transcript: bool = True) -> None:
        self._session: ev.Session | None = None
        self._next_seq = 0
        # The first seq whose message the transcript may hold (see `resume_at`).
        self._transcript_from = 0
        self._last_ts: str | None = None
        # Without a transcript, memory is bounded by the open turn: for checks
        # that stream a whole log.
        self._messages: list[Message] = [] if keep_transcript else NoTranscript()
        self._turn: MutableTurn | None = None
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
        # A user message (or a compaction's summary) with text has been seen:
        # Anthropic and Gemini refuse a transcript the assistant opens. None
        # while unknown: a fold of a tail that skipped the start of the log.
        self._user_spoke: bool | None = False
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
            ev.ToolPaused: self._on_paused,
            ev.ToolDecision: self._on_decision,
            ev.Compaction: self._on_compaction,
            ev.RunRevived: self._on_revived,
            ev.SubagentSpawned: self._on_spawned,
            ev.SubagentSettled: self._on_settled,
        }
        self.extend(events)

    def scratch(self) -> Fold:
        """A copy to try a batch on before it is written. The transcript's
        messages are frozen, so the copy shares them (a copy of the list,
        not of each message): a batch costs the same on a long session as on
        a short one, where a deep copy made writing a session quadratic."""
        # Imported here: a read-only command (`turnlog inspect`) never copies,
        # and `copy` costs its cold start a failed import search.
        import copy

        memo: dict[int, Any] = {id(self._messages): type(self._messages)(self._messages)}
        if self._snapshot is not None:
            memo[id(self._snapshot)] = self._snapshot
        return copy.deepcopy(self, memo)

    def apply(self, event: Event) -> None:
        self.extend((event,))

    def resume_at(self, next_seq: int, *, revivals: int = 0) -> None:
        """Continue from a later seq, for tail reads that skip the middle of a log.

        The transcript then holds only what follows; the open turn, owed calls
        and the last message are exact as long as the tail reaches a turn boundary.
        """
        self._next_seq = next_seq
        self._transcript_from = next_seq
        self._revivals = revivals
        self._snapshot = None
        if next_seq > 1 and not self._user_spoke:
            # Whether the user spoke in the skipped part is not known here;
            # a writer learns it from the head of the log (`learn_user_spoke`).
            self._user_spoke = None

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
    def transcript_from(self) -> int:
        """The seq the transcript starts at: 0 for a fold of the whole log; a
        tail fold's holds nothing older than where it resumed."""
        return self._transcript_from

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

    def open_call(self, call_id: str) -> CallSighting | None:
        """One call of the open turn, frozen; None when no turn is open or it
        has no such call. Costs that call, not the turn's calls."""
        return self._turn.sighting(call_id) if self._turn is not None else None

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

    @property
    def user_spoke(self) -> bool | None:
        """True once the transcript holds a user message with text (or a
        compaction's summary): what an assistant message must follow. None
        when a tail fold skipped the part of the log that would say."""
        return self._user_spoke

    def learn_user_spoke(self, spoke: bool) -> None:
        """Settle `user_spoke` for a tail fold, from a read of the log's head
        (the writer does it when it opens an existing session)."""
        if self._user_spoke is None:
            self._user_spoke = spoke

    def reports_owed(self) -> list[str]:
        """The agent ids of background children whose report is not delivered
        yet, in order of spawning (exact from a tail whose first boundary the
        writer stamped)."""
        return [agent_id for agent_id, child in self._background.items() if child.delivered is None]

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
        if not self._user_spoke and says_something(data.content):
            self._user_spoke = True

    def _on_assistant(self, event: Event, data: ev.AssistantMessage) -> None:
        if self._user_spoke is None:
            # The writer that accepted this message checked the order: what
            # a tail skipped no longer matters for the next one.
            self._user_spoke = True
        calls = data.tool_calls
        self._asking = frozenset([call.id for call in calls]) if calls else _NONE_ASKED
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
                    turn.sight(call.id, MutableCall(call.name, event.seq, step_seq))
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
            if (
                (call is None or call.dispatch is None)
                and event.origin not in _SYNTHETIC_ORIGINS
                and (call is None or call.decision is None or call.decision.decision == "approved")
            ):
                # A rejected, expired or delivered pause's result needs no
                # dispatch: nothing ran here, and the decision says so. An
                # approved call answered without one ran unseen.
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
            floor = self._turn.floor if self._turn is not None else None
            place_late_result(self._messages, message, floor)
        self._needs_response = True

    def _on_turn_start(self, event: Event, data: ev.TurnStart) -> None:
        if data.revivals is not None and data.revivals != self._revivals:
            self._warnings.append(
                f"seq {event.seq}: turn_start stamped with {data.revivals} revivals, after "
                f"{self._revivals}"
            )
        if data.reports_owed:
            self._owed_from_stamp(data.reports_owed)
        earlier = self._turn
        self._turn = MutableTurn(event.seq, data.turn)
        self._turn.engine_run = data.engine_run
        if event.origin == _IMPORT:
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
        if data.reports_owed:
            self._owed_from_stamp(data.reports_owed)
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
        turn.held = False  # the paused turn resumed

    def _on_step_end(self, event: Event, data: ev.StepEnd) -> None:
        turn = self._turn
        if turn is None or turn.open_step is None:
            self._warnings.append(f"seq {event.seq}: step_end closes no open step")
            return
        turn.closed_steps.add(turn.open_step.seq)
        turn.open_step = None
        if data.outcome == "paused" and any(c.waiting for c in turn.calls.values()):
            # The model spoke while a call waited (a framework that reads a
            # pending reply to the model) and the step stopped on that pause
            # again: the turn is held until its next step, as at the pause.
            # A step that ends "paused" while nothing waits holds nothing.
            turn.held = True

    def _on_dispatch(self, event: Event, data: ev.ToolDispatch) -> None:
        turn = self._turn
        if turn is None:
            self._warnings.append(f"seq {event.seq}: tool_dispatch outside any turn")
            return
        call = turn.calls.get(data.call_id)
        if call is None or call.answered:
            # A dispatch of a call no message of this turn asked for (a
            # hand-written or imported log; the writer refuses it) was not
            # written ahead by a turnlog writer: the turn proves nothing about
            # which of its other calls ran (R1 and R4 only).
            turn.stray_dispatch = True
            step_seq = turn.open_step.seq if turn.open_step is not None else None
            turn.sight(data.call_id, MutableCall(data.name, event.seq, step_seq, data, event.seq))
        elif call.dispatch is None:
            call.dispatch = data
            call.dispatch_seq = event.seq
            if call.request_seq is None:
                turn.stray_dispatch = True
            elif not call.carried:
                # Only a dispatch of a requested call shows that this turn's
                # writer records dispatches ahead of running tools.
                turn.dispatched_any = True

    def _on_paused(self, event: Event, data: ev.ToolPaused) -> None:
        turn = self._turn
        call = turn.calls.get(data.call_id) if turn is not None else None
        if (
            turn is None
            or call is None
            or call.answered
            or call.dispatch is not None
            or call.pause is not None
        ):
            # The writer refuses a pause of anything but an owed call it has
            # not dispatched or paused; a log that has one anyway proves no pause.
            self._warnings.append(f"seq {event.seq}: tool_paused for {data.call_id!r} ignored")
            return
        call.pause = data
        call.pause_seq = event.seq
        call.paused_at = event.ts
        turn.held = True

    def _on_decision(self, event: Event, data: ev.ToolDecision) -> None:
        turn = self._turn
        call = turn.calls.get(data.call_id) if turn is not None else None
        if call is None or not call.waiting or call.decision is not None:
            self._warnings.append(f"seq {event.seq}: tool_decision for {data.call_id!r} ignored")
            return
        call.decision = data
        call.decided_at = event.ts

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
        if isinstance(self._messages, NoTranscript):
            return
        if says_something(data.summary):
            self._user_spoke = True
        summary = Message(
            role="user",
            content=data.summary,
            seq=event.seq,
            origin=event.origin,
            kind="compaction",
        )
        self._messages = compacted(self._messages, data.through_seq, summary)
        self._asking = frozenset()

    def _on_revived(self, event: Event, data: ev.RunRevived) -> None:
        self._revivals += 1
        if data.revival != self._revivals:
            self._warnings.append(
                f"seq {event.seq}: run_revived numbered {data.revival} is revival "
                f"{self._revivals} of the log"
            )

    def _owed_from_stamp(self, agent_ids: list[str]) -> None:
        """A boundary's stamp names children still owing a report: a fold of a
        tail that began after their spawns learns of them here. A fold that
        saw the spawns already knows more (their records) and keeps that."""
        for agent_id in agent_ids:
            if agent_id not in self._background:
                spawned = ev.SubagentSpawned(agent_id=agent_id, background=True)
                self._background[agent_id] = BackgroundChild(spawned=spawned)

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
    refuse_a_path(events, function="turnlog.core.fold", instead="turnlog.open(PATH).state")
    return Fold(events).state
