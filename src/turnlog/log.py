"""The writer handle: append events in the right order, durably, with the fold current."""

from __future__ import annotations

import copy
import datetime as dt
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Final, Literal

from turnlog import events as ev
from turnlog.damage import TornTail
from turnlog.errors import (
    FormatError,
    SessionInterruptedError,
    SessionNotFoundError,
    TurnlogError,
    UnfinishedSessionError,
    UsageError,
    WriteOrderError,
)
from turnlog.events import (
    Content,
    Event,
    EventData,
    IdempotencyValue,
    Origin,
    P,
    ToolCall,
    TurnEndReason,
)
from turnlog.fold import Fold, Message, SessionState
from turnlog.recovery import Plan, plan_verdict, unwind_events, unwind_result
from turnlog.selfcheck import recovery_exports
from turnlog.stores import open_store
from turnlog.stores.base import Store, StoreWriter
from turnlog.verdict import Verdict, decide
from turnlog.write_order import CHECKED_TYPES, order_error

Durability = Literal["always", "barrier", "none"]
DURABILITY_MODES: Final = ("always", "barrier", "none")

# In `barrier` mode these are made durable before `append` returns: the header
# (the session exists), a dispatch (write-ahead: the tool runs after it), and
# a turn end (the answer the user saw is on disk).
_BARRIER_TYPES: Final = (ev.Session, ev.ToolDispatch, ev.TurnEnd)
# What a handle opened on a crashed session may write before it is recovered:
# turnlog's own repairs, each of the kinds it writes (recovery closes the turn;
# a tree revival answers waits on subagents that finished).
_REPAIRS: Final = {
    Origin.RECOVERY.value: (ev.ToolResult, ev.StepEnd, ev.TurnEnd),
    Origin.REVIVAL.value: (ev.ToolResult, ev.SubagentSettled),
}


@contextmanager
def _unchecked(store: Store, session_id: str) -> Iterator[None]:
    yield


def _is_cancellation(exc: BaseException) -> bool:
    """Ctrl-C, a closed generator, or an asyncio cancellation. asyncio is looked
    up, not imported: a program that never imported it cannot be cancelled by
    it, and importing it costs every command-line call a twentieth of a second."""
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return True
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


_second: int = -1
_second_prefix: str = ""


def utc_now() -> str:
    """An ISO 8601 UTC timestamp with microseconds, the format's `ts`.

    The seconds part is formatted once per second: `strftime` on every
    append was a third of the append cost.
    """
    global _second, _second_prefix
    second, micros = divmod(time.time_ns() // 1000, 1_000_000)
    if second != _second:
        stamp = dt.datetime.fromtimestamp(second, dt.UTC)
        _second_prefix = stamp.strftime("%Y-%m-%dT%H:%M:%S.")
        _second = second
    return f"{_second_prefix}{micros:06d}Z"


def _must_sync(mode: str, data: EventData) -> bool:
    """The one home of the durability rule: is this payload durable before
    `append` returns, in this mode?"""
    return mode == "always" or (mode == "barrier" and isinstance(data, _BARRIER_TYPES))


def _check_durability(durability: str) -> None:
    if durability not in DURABILITY_MODES:
        raise UsageError(
            f"durability must be one of {', '.join(DURABILITY_MODES)}, not {durability!r}"
        )


def _describe_exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Dispatch:
    """A tool call whose dispatch is durable; record its outcome with `result`."""

    def __init__(self, log: Log, call: ToolCall, seq: int) -> None:
        self._log = log
        self.call = call
        # The dispatch event's seq: the id may be asked and dispatched again
        # in a later turn, and this handle answers only its own dispatch.
        self.seq = seq
        self.answered = False

    def result(self, content: Content, *, is_error: bool = False) -> Event[ev.ToolResult]:
        with self._log._lock:
            if self.answered:
                raise UsageError(f"call {self.call.id!r} already has a result")
            if self._log._fold.open_dispatch_seq(self.call.id) != self.seq:
                raise WriteOrderError(
                    f"this handle's dispatch of call {self.call.id!r} (seq {self.seq}) was "
                    "already closed; a later dispatch reuses the id",
                    hint="record a result through the handle of the dispatch that is running",
                )
            event = self._log.append(
                ev.ToolResult(
                    call_id=self.call.id, name=self.call.name, content=content, is_error=is_error
                )
            )
            self.answered = True
            return event


class Turn:
    """An open turn. Set `reason` before the block ends to end it otherwise than
    `complete` (for example `rejected`)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.steps = 0
        self.reason: str = TurnEndReason.COMPLETE.value


class Log:
    """One session opened for writing: holds the store's exclusive lock.

    Appends are contiguous, durable per the `durability` mode, and folded as
    they go, so `state` and `messages` are always current. Safe to share
    between threads (frameworks run parallel tool calls in threads): appends
    are serialized, so seqs never collide.

    A session reopened to append is read from its tail only: a writer that
    only appends never pays for the whole log. The transcript is folded from
    the whole log on first use of `messages` or `state`.
    """

    def __init__(
        self,
        store: Store,
        writer: StoreWriter,
        fold: Fold,
        *,
        whole: bool = True,
        durability: Durability = "barrier",
    ) -> None:
        _check_durability(durability)
        self.store = store
        self._writer: StoreWriter | None = writer
        self._durability = durability
        self._fold = fold
        # False while `_fold` was fed from the tail: exact for the open turn,
        # revivals and the next seq, but its transcript holds only the tail.
        self._whole = whole
        if fold.session is None:
            raise TurnlogError(
                "the session has no header event", hint="the log is not a turnlog session"
            )
        self.session_id: str = fold.session.session_id
        self._turn: Turn | None = None
        self._subscribers: list[Callable[[Sequence[Event], bool], None]] = []
        # Reentrant: a dispatch block appends while holding it.
        self._lock = threading.RLock()
        # Opened with a turn open and no other writer: the process that wrote
        # it died mid-turn. Until recovery closes that turn, anything else
        # would land inside it (a user message between a call and its result).
        self._crashed = fold.turn_open

    # -- reading ---------------------------------------------------------------

    # Reads take the handle's lock: parallel tool calls append from other
    # threads, and a snapshot must not see an event half applied.

    @property
    def state(self) -> SessionState:
        with self._lock:
            return self._whole_fold().state

    @property
    def messages(self) -> tuple[Message, ...]:
        with self._lock:
            return self._whole_fold().state.messages

    @property
    def crashed(self) -> bool:
        """True while the handle holds a turn a crashed process left open:
        every write but recovery's is refused until `recover()` runs."""
        return self._crashed

    def _whole_fold(self) -> Fold:
        """The fold of the whole log, read once on first need."""
        if self._whole:
            return self._fold
        with self._lock:
            if not self._whole:
                # We hold the writer lock: the store holds exactly what this
                # handle appended on top of what it read.
                whole = Fold(self.store.iter_events(self.session_id))
                if whole.next_seq != self._fold.next_seq:
                    raise TurnlogError(
                        f"session {self.session_id!r} holds {whole.next_seq} events where this "
                        f"writer expects {self._fold.next_seq}",
                        hint="another process wrote without the lock; reopen the session",
                    )
                self._fold = whole
                self._whole = True
            return self._fold

    @property
    def next_seq(self) -> int:
        return self._fold.next_seq

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def torn_tail(self) -> TornTail | None:
        """The torn tail moved aside when this session was opened, if there was one."""
        return self._writer.torn_tail if self._writer is not None else None

    @property
    def header(self) -> ev.Session:
        """The session's header: its id, agent, parent and spawning call."""
        header = self._fold.session
        assert header is not None  # checked when the handle was made
        return header

    @property
    def lock(self) -> threading.RLock:
        """The handle's (reentrant) lock: hold it to make a check of the log and
        the appends it leads to one step against other threads."""
        return self._lock

    def next_turn_start(self) -> ev.TurnStart:
        """The `turn_start` the next turn begins with: numbered, and stamped
        with the revivals so far so a tail reader need not search for them."""
        with self._lock:
            return ev.TurnStart(turn=self._fold.last_turn_number + 1, revivals=self._fold.revivals)

    def last_message(self) -> Message | None:
        """The newest transcript entry (exact even when only the tail was read)."""
        with self._lock:
            return self._fold.last_message()

    # -- writing ---------------------------------------------------------------

    def _require_writer(self) -> StoreWriter:
        if self._writer is None:
            raise UsageError("the log is closed", hint="open the session again to write to it")
        return self._writer

    def _sync_needed(self, batch: Sequence[Event]) -> bool:
        mode = self._durability
        return any(_must_sync(mode, event.data) for event in batch)

    def _refuse_if_crashed(self, data: EventData, origin: str | None) -> None:
        if self._crashed and not (origin in _REPAIRS and isinstance(data, _REPAIRS[origin])):
            where = self.store.location(self.session_id) or self.session_id
            raise SessionInterruptedError(
                f"session {self.session_id!r} crashed mid-turn; nothing may be written into "
                "that turn before it is recovered",
                hint=f"call `log.recover()` (or `turnlog.revive(log)`), open it with "
                f"`turnlog.open(..., recover=True)`, or run `turnlog recover {where}`",
            )

    def _check_order(
        self, items: Sequence[EventData], origin: str | None, allow_undispatched: bool
    ) -> None:
        """Refuse a batch any item of which breaks the write order (see
        `turnlog.write_order`), before anything is written. Later items are
        checked against the state the earlier ones leave, on a scratch fold."""
        later = any(type(data) in CHECKED_TYPES for data in items[1:])
        if not later:
            # Only the first item (if any) depends on the open turn: it is
            # checked against the handle's fold as it is. A revival's marker
            # and notice, or a wait's answer and settlement, cost no copy.
            if items:
                error = order_error(
                    self._fold, items[0], origin, allow_undispatched=allow_undispatched
                )
                if error is not None:
                    raise error
            return
        # A later item depends on what the earlier ones change: a scratch fold.
        fold = copy.deepcopy(self._fold)
        seq = fold.next_seq
        for data in items:
            error = order_error(fold, data, origin, allow_undispatched=allow_undispatched)
            if error is not None:
                raise error
            fold.apply(Event(seq=seq, data=data, origin=origin))
            seq += 1

    def append_many(
        self,
        items: Sequence[EventData],
        *,
        origin: str | None = None,
        sync: bool | None = None,
        allow_undispatched: bool = False,
    ) -> list[Event]:
        """Append payloads as one batch (one write, at most one sync)."""
        with self._lock:
            writer = self._require_writer()
            for data in items:
                self._refuse_if_crashed(data, origin)
            self._check_order(items, origin, allow_undispatched)
            ts = utc_now()
            first = self._fold.next_seq
            batch = [
                Event(seq=first + offset, data=data, ts=ts, origin=origin)
                for offset, data in enumerate(items)
            ]
            self._write(writer, batch, sync)
            return batch

    def append(
        self,
        data: P,
        *,
        origin: str | None = None,
        sync: bool | None = None,
        allow_undispatched: bool = False,
    ) -> Event[P]:
        """Append one payload; returns the stored event. `sync` overrides the mode.

        An append that breaks the write order is refused with `WriteOrderError`
        and writes nothing (see `turnlog.write_order`): a `ToolResult` must
        answer a call the open turn dispatched, unless `allow_undispatched`
        says its dispatch is unknown (an import).
        """
        # The hot path of every agent loop: `_write` inlined for one event.
        with self._lock:
            writer = self._writer
            if writer is None:
                writer = self._require_writer()
            if self._crashed:
                self._refuse_if_crashed(data, origin)
            fold = self._fold
            if type(data) in CHECKED_TYPES:
                error = order_error(fold, data, origin, allow_undispatched=allow_undispatched)
                if error is not None:
                    raise error
            event = Event(seq=fold.next_seq, data=data, ts=utc_now(), origin=origin)
            if sync is None:
                sync = _must_sync(self._durability, data)
            try:
                writer.append_one(event, sync)
            except BaseException:
                # Exception-safe bookkeeping: whatever reached the store is
                # folded, even when a signal handler raised mid-append.
                if writer.next_seq > fold.next_seq:
                    fold.apply(event)
                raise
            fold.apply(event)
            if self._subscribers:
                for callback in self._subscribers:
                    callback((event,), sync)
            return event

    def _write(self, writer: StoreWriter, batch: list[Event], sync: bool | None) -> None:
        if not batch:
            return
        if sync is None:
            sync = self._sync_needed(batch)
        try:
            writer.append(batch, expected_seq=batch[0].seq, sync=sync)
        finally:
            landed = writer.next_seq - self._fold.next_seq
            apply = self._fold.apply
            for event in batch[: max(landed, 0)]:
                apply(event)
        if self._subscribers:
            for callback in self._subscribers:
                callback(batch, sync)

    def subscribe(self, callback: Callable[[Sequence[Event], bool], None]) -> None:
        """Call `callback(events, durable)` after every acknowledged append,
        with `durable` true when the events were synced before it returned."""
        self._subscribers.append(callback)

    def system(self, content: Content) -> Event[ev.SystemMessage]:
        return self.append(ev.SystemMessage(content=content))

    def user(self, content: Content, *, injected: str | None = None) -> Event[ev.UserMessage]:
        return self.append(ev.UserMessage(content=content, injected=injected))

    def assistant(
        self, content: Content = "", tool_calls: Sequence[ToolCall] = ()
    ) -> Event[ev.AssistantMessage]:
        """Append an assistant message; the event it returns is typed, so
        `msg.data.tool_calls` type-checks."""
        return self.append(ev.AssistantMessage(content=content, tool_calls=list(tool_calls)))

    # -- structure ---------------------------------------------------------------

    @contextmanager
    def turn(self, *, resume: bool = False) -> Iterator[Turn]:
        """`turn_start` now, `turn_end` when the block ends.

        If the block raises, every call the turn still owes is answered (a
        dispatched one as outcome unknown, an undispatched one as not started),
        an open step is closed, and the turn ends `error` (or `cancelled` for
        a cancellation); the exception then propagates.

        `resume=True` carries on the turn a tree revival left open (its waits
        on subagents now answered) instead of starting one: its open step is
        ended, and the block adds steps to the same turn.
        """
        turn = self.begin_turn(resume=resume)
        try:
            yield turn
        except BaseException as exc:
            self.fail_turn(exc)
            raise
        else:
            self.end_turn(turn)
        finally:
            self._turn = None

    # The halves of `turn`, `step` and `dispatch`, shared with the asyncio
    # twin (`turnlog.aio`), which runs them on its writer thread.

    def begin_turn(self, *, resume: bool = False) -> Turn:
        with self._lock:
            if resume:
                turn = self._adopt_turn()
            else:
                if self._fold.turn_open:
                    raise UsageError(
                        "a turn is already open; turns never nest",
                        hint="end the open turn first, or recover the session if it crashed",
                    )
                # Cheap accessors, not `state`: a snapshot copies the whole transcript.
                start = self.next_turn_start()
                self.append(start)
                turn = Turn(start.turn or 0)
            self._turn = turn
            return turn

    def fail_turn(self, exc: BaseException) -> None:
        reason = TurnEndReason.CANCELLED if _is_cancellation(exc) else TurnEndReason.ERROR
        self._turn = None
        self._unwind(exc, reason=reason.value)

    def end_turn(self, turn: Turn) -> None:
        with self._lock:
            self._turn = None
            unanswered = self._fold.owed_in_open_turn()
            if unanswered:
                error = WriteOrderError(
                    f"turn {turn.number} ended with calls still unanswered: "
                    f"{', '.join(unanswered)}",
                    hint="dispatch every call the turn requested and record its result",
                )
                self._unwind(error, reason=TurnEndReason.ERROR.value)
                raise error
            if self._fold.step_open:
                self.append(ev.StepEnd(turn=turn.number, step=turn.steps, outcome="ok"))
            self.append(ev.TurnEnd(reason=turn.reason, turn=turn.number, steps=turn.steps))

    def _adopt_turn(self) -> Turn:
        open_turn = self._fold.open_turn
        if open_turn is None:
            raise UsageError("no open turn to resume", hint="start a turn with `with log.turn():`")
        owed = self._fold.owed_in_open_turn()
        if owed:
            raise WriteOrderError(
                f"the open turn still owes results for {', '.join(owed)}",
                hint="answer the waits a tree revival left pending before resuming the turn",
            )
        number = open_turn.turn if open_turn.turn is not None else self._fold.last_turn_number
        turn = Turn(number)
        turn.steps = open_turn.steps
        step = open_turn.open_step
        if step is not None:
            self.append(ev.StepEnd(turn=step.turn, step=step.step, outcome="ok"))
        return turn

    @contextmanager
    def step(self) -> Iterator[int]:
        """`step_start` now, `step_end` when the block ends (outcome `error` if it raised)."""
        number = self.begin_step()
        try:
            yield number
        except BaseException as exc:
            self._unwind(exc, reason=None)
            raise
        self.end_step()

    def begin_step(self) -> int:
        turn = self._turn
        if turn is None or not self._fold.turn_open:
            raise UsageError("a step must be inside a turn", hint="use `with log.turn():` first")
        if self._fold.step_open:
            raise UsageError("a step is already open; steps never nest")
        with self._lock:
            turn.steps += 1
            self.append(ev.StepStart(turn=turn.number, step=turn.steps))
            return turn.steps

    def fail_step(self, exc: BaseException) -> None:
        self._unwind(exc, reason=None)

    def end_step(self) -> None:
        turn = self._turn
        if turn is None:
            raise UsageError(
                "no step of this handle's turn is open",
                hint="end a step begun with `log.begin_step()` inside `log.turn()`; a "
                "step_start appended by hand is ended with `log.append(StepEnd(...))`",
            )
        with self._lock:
            owed = self._fold.owed_in_open_step()
            if owed:
                # A normal step_end would say nothing was in flight, and recovery
                # would then call these calls "not started" (R3) even if the
                # program runs them after the block. Refuse, and let the turn
                # close them as outcome unknown.
                raise WriteOrderError(
                    f"step {turn.steps} of turn {turn.number} ended with calls unanswered: "
                    f"{', '.join(owed)}",
                    hint="run each requested call inside `with log.dispatch(call)` and record "
                    "its result before the step ends",
                )
            self.append(ev.StepEnd(turn=turn.number, step=turn.steps, outcome="ok"))

    @contextmanager
    def dispatch(
        self,
        call: ToolCall,
        *,
        idempotency: IdempotencyValue | None = None,
        join: str | None = None,
    ) -> Iterator[Dispatch]:
        """Write `tool_dispatch` (durable unless durability is `none`), then run the block.

        Run the tool inside the block and record its output with
        `handle.result(...)`. If the block raises or ends without a result,
        the call is answered as outcome unknown, since it may have run.
        """
        handle = self.begin_dispatch(call, idempotency=idempotency, join=join)
        try:
            yield handle
        except BaseException as exc:
            self.end_dispatch(handle, exc)
            raise
        else:
            self.end_dispatch(handle, None)

    def begin_dispatch(
        self,
        call: ToolCall,
        *,
        idempotency: IdempotencyValue | None = None,
        join: str | None = None,
    ) -> Dispatch:
        with self._lock:
            if not self._fold.turn_open:
                raise UsageError(
                    "a dispatch must be inside a turn", hint="use `with log.turn():` first"
                )
            if self._fold.is_answered(call.id):
                raise UsageError(
                    f"call {call.id!r} already has a result in this turn; tool calls are never "
                    "replayed"
                )
            if self._fold.is_dispatched(call.id):
                raise UsageError(f"call {call.id!r} is already dispatched and running")
            dispatched = self.append(
                ev.ToolDispatch(call_id=call.id, name=call.name, idempotency=idempotency, join=join)
            )
        return Dispatch(self, call, dispatched.seq)

    def end_dispatch(self, handle: Dispatch, exc: BaseException | None) -> None:
        """Answer the call as outcome unknown if the block left it unanswered."""
        if handle.answered:
            return
        if exc is not None:
            self._unwind_call(handle, _describe_exception(exc))
        else:
            self._unwind_call(handle, "the tool block ended without recording a result")

    def _unwind_call(self, handle: Dispatch, error: str) -> None:
        call = handle.call
        with self._lock:
            if self._fold.open_dispatch_seq(call.id) != handle.seq:
                return  # answered meanwhile, or already closed by an unwinding turn
            result = unwind_result(call.id, call.name, dispatched=True, error=error)
            self.append(result, origin=Origin.UNWIND.value)

    def _unwind(self, exc: BaseException, *, reason: str | None) -> None:
        with self._lock:
            if self._writer is None:
                return
            repairs = unwind_events(
                self._fold,
                reason=reason,
                error=_describe_exception(exc),
                order_kept=not isinstance(exc, WriteOrderError),
                ts=utc_now(),
            )
            if not repairs:
                return
            try:
                self._write(self._writer, repairs, None)
            except TurnlogError as write_error:
                # The original exception is what the caller must see; the log is
                # left open and a later recovery closes it.
                exc.add_note(f"turnlog could not close the turn: {write_error}")

    # -- recovery ------------------------------------------------------------------

    def verdict(self) -> Verdict:
        """What recovery and revival see in the session now (`verdict.decide`)."""
        with self._lock:
            return decide(self._fold)

    def plan(self) -> Plan:
        """The repairs recovery would append now (see `turnlog.plan`)."""
        with self._lock:
            return plan_verdict(decide(self._fold))

    def recover(self, *, pending: Collection[str] = ()) -> Plan:
        """Append the repair plan, synced; returns it (empty if nothing was owed).

        `pending` names waits on subagents that a tree revival brings back:
        they get no result and the turn stays open until they are answered.
        """
        with self._lock:
            repairs = plan_verdict(decide(self._fold), pending=frozenset(pending))
            if repairs.events:
                # Waits left pending stay owed on purpose: nothing to check yet.
                checked = recovery_exports if not pending else _unchecked
                with checked(self.store, self.session_id):
                    self._write(self._require_writer(), list(repairs.events), True)
            # Waits left pending are answered by revived children, not a crash.
            self._crashed = False
            return repairs

    # -- life ----------------------------------------------------------------------

    def sync(self) -> None:
        with self._lock:
            self._require_writer().sync()

    def close(self) -> None:
        """Sync what is not yet durable and release the lock. Idempotent."""
        with self._lock:
            writer, self._writer = self._writer, None
            if writer is None:
                return
            writer.close()

    @property
    def closed(self) -> bool:
        return self._writer is None

    def __enter__(self) -> Log:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<turnlog.Log {self.session_id!r} seq={self.next_seq} on {self.store.url}>"


def open(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    create: bool | None = None,
    durability: Durability = "barrier",
    agent: ev.Agent | None = None,
    parent: ev.Parent | None = None,
    spawned_by: ev.SpawnedBy | None = None,
    meta: dict[str, Any] | None = None,
    recover: bool = False,
    revive: bool = False,
) -> Log:
    """Open a session for writing, creating it if needed.

    `target` is a `.jsonl` file, a store directory or URL, or a `Store`.
    `create=None` creates the session when it does not exist, `True` requires
    that it does not, `False` requires that it does. A new session without an
    id gets a random one.

    A session whose last writer died mid-turn opens as `crashed`: it refuses
    every write until it is recovered. `recover=True` recovers it on open
    (`log.recover()`); `revive=True` revives it (`turnlog.revive(log)`: recover,
    mark the revival, tell the model), within the default revival cap.
    """
    log = _open(target, session_id, create, durability, agent, parent, spawned_by, meta)
    if log.crashed and (recover or revive):
        try:
            if revive:
                from turnlog.revival import revive as revive_log  # revival builds on Log

                revive_log(log)
            if log.crashed:  # not revived (past the cap): recovery still closes the turn
                log.recover()
        except BaseException:
            log.close()
            raise
    return log


def _open(
    target: str | os.PathLike[str] | Store,
    session_id: str | None,
    create: bool | None,
    durability: Durability,
    agent: ev.Agent | None,
    parent: ev.Parent | None,
    spawned_by: ev.SpawnedBy | None,
    meta: dict[str, Any] | None,
) -> Log:
    store, session_id = open_store(target, session_id)
    _check_durability(durability)  # before anything is created
    if session_id is None:
        if create is False:
            raise UsageError("opening an existing session needs its session_id")
        session_id = uuid.uuid4().hex
    if create is None:
        create = not store.exists(session_id)
        if not create:
            try:
                return _open_existing(store, session_id, durability)
            except UnfinishedSessionError:
                # A crash cut the session's creation short: nothing in it was
                # ever acknowledged, so it is created again (bytes kept aside).
                create = True
    if create:
        header = Event(
            seq=0,
            data=ev.Session(
                session_id=session_id,
                created_at=utc_now(),
                agent=agent,
                parent=parent,
                spawned_by=spawned_by,
                meta=meta,
            ),
            ts=utc_now(),
        )
        writer = store.create(header)
        return Log(store, writer, Fold([header]), durability=durability)
    if not store.exists(session_id):
        raise SessionNotFoundError(f"no session {session_id!r} in {store.url}")
    return _open_existing(store, session_id, durability)


def _open_existing(store: Store, session_id: str, durability: Durability) -> Log:
    writer = store.writer(session_id, check="tail")
    try:
        # The tail the writer checked under its lock, or read now that it holds
        # it: a writer that only appends never reads the whole log.
        tail = writer.tail or store.read_tail(session_id)
        fold = tail.fold()
        named = fold.session.session_id if fold.session is not None else None
        if named is not None and named != session_id:
            # A copied or renamed file: this handle would append here and read
            # the session its header names, which is another one.
            where = store.location(session_id) or session_id
            raise FormatError(
                f"{where} holds session {named!r}, not {session_id!r}: its header names "
                "another session",
                hint="a session file was copied or renamed by hand; rename it back, or "
                "make a copy under a new id with `turnlog copy` or `turnlog fork`",
            )
        return Log(store, writer, fold, whole=False, durability=durability)
    except BaseException:
        writer.close()
        raise
