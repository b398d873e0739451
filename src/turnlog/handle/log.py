"""The writer handle: append events in the right order, durably, with the fold current."""

from __future__ import annotations

import datetime
import os
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType

from turnlog import events as ev
from turnlog.core.clock import utc_now
from turnlog.core.damage import TornTail
from turnlog.core.durability import DURABILITY_MODES, Durability
from turnlog.core.fold import Fold, Message, SessionState
from turnlog.core.open_turn import CallSighting, OpenTurn
from turnlog.core.pauses import Awaiting
from turnlog.core.recovery import Plan, plan_verdict
from turnlog.core.verdict import Verdict, decide
from turnlog.errors import UsageError
from turnlog.events import Content, Event, EventData, IdempotencyValue, P, ToolCall
from turnlog.handle import pauses, turns
from turnlog.handle.blocks import DispatchBlock, StepBlock, TurnBlock
from turnlog.handle.dispatch import Dispatch, begin_dispatch, end_dispatch
from turnlog.handle.engine_runs import check_engine_run, write_for
from turnlog.handle.opening import DEFAULT_OPEN, OpenOptions, open_session
from turnlog.handle.selfcheck import recovery_exports
from turnlog.handle.state import HandleState, Turn
from turnlog.stores.base import Store, StoreWriter

# Reachable here as before the handle's concepts had modules of their own.
__all__ = [
    "DURABILITY_MODES",
    "Dispatch",
    "Durability",
    "Log",
    "Turn",
    "open_handle",
    "utc_now",
]


@contextmanager
def _unchecked(store: Store, session_id: str) -> Iterator[None]:
    yield


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
        held = HandleState(store, writer, fold, whole=whole, durability=durability)
        #: What this handle holds and knows (`turnlog.handle.state`), shared
        #: with the asyncio twin that wraps it and the rules it writes through.
        self.held = held
        self.store = store
        self.session_id: str = held.session_id

    # -- reading ---------------------------------------------------------------

    # Reads take the handle's lock: parallel tool calls append from other
    # threads, and a snapshot must not see an event half applied.

    @property
    def state(self) -> SessionState:
        held = self.held
        with held.lock:
            return held.whole_fold().state

    @property
    def messages(self) -> tuple[Message, ...]:
        held = self.held
        with held.lock:
            return held.whole_fold().state.messages

    def transcript_held(self) -> tuple[int, tuple[Message, ...]]:
        """The transcript this handle holds without reading the log: the seq
        it starts at (0 once the whole log is read) and its messages from
        there, current with every append."""
        held = self.held
        with held.lock:
            fold = held.fold
            return fold.transcript_from, fold.state.messages

    @property
    def transcript_read(self) -> bool:
        """True once the whole log is read: `messages` and `state` then cost no I/O."""
        return self.held.whole

    @property
    def crashed(self) -> bool:
        """True while the handle holds a turn a crashed process left open:
        every write but recovery's is refused until `recover()` runs. False
        while an engine run is replayed: its turn is the run's own, and the
        handle's flag then only routes the replayed writes off the hot path."""
        held = self.held
        return held.crashed and held.replay is None

    def read_transcript(self, observe: Callable[[Event], None] | None = None) -> bool:
        """Read the whole log now unless it is read already, showing each event
        to `observe` on the way (one pass, for a caller that keeps an index of
        its own, such as `x_*` events the fold skips). True if this call read it;
        False if it was read before, and `observe` saw nothing."""
        held = self.held
        with held.lock:
            if held.whole:
                return False
            held.whole_fold(observe)
            return True

    @property
    def next_seq(self) -> int:
        return self.held.fold.next_seq

    @property
    def durability(self) -> Durability:
        return self.held.durability

    @property
    def torn_tail(self) -> TornTail | None:
        """The torn tail moved aside when this session was opened, if there was one."""
        writer = self.held.writer
        return writer.torn_tail if writer is not None else None

    @property
    def header(self) -> ev.Session:
        """The session's header: its id, agent, parent and spawning call."""
        header = self.held.fold.session
        assert header is not None  # checked when the handle was made
        return header

    @property
    def lock(self) -> threading.RLock:
        """The handle's (reentrant) lock: hold it to make a check of the log and
        the appends it leads to one step against other threads."""
        return self.held.lock

    def next_turn_start(self) -> ev.TurnStart:
        """The `turn_start` the next turn begins with: numbered, and stamped
        with the revivals so far and the reports still owed, so a tail reader
        need not search for them."""
        return self.held.next_turn_start()

    # The bits an adapter asks on every item it records, without the cost of
    # a whole verdict (which classifies every owed call, its waits and reports).

    @property
    def turn_open(self) -> bool:
        """True while a turn is open (begun and not ended)."""
        return self.held.fold.turn_open

    @property
    def open_turn(self) -> OpenTurn | None:
        """A snapshot of the open turn (its calls, steps and spawns), or None."""
        held = self.held
        with held.lock:
            return held.fold.open_turn

    def open_call(self, call_id: str) -> CallSighting | None:
        """One call of the open turn (None if it has none), without the
        cost of snapshotting the turn's other calls."""
        held = self.held
        with held.lock:
            return held.fold.open_call(call_id)

    def owed_calls(self) -> dict[str, str | None]:
        """The open turn's unanswered calls, id to name, in order of first sighting."""
        held = self.held
        with held.lock:
            return held.fold.owed_names()

    def last_message(self) -> Message | None:
        """The newest transcript entry (exact even when only the tail was read)."""
        held = self.held
        with held.lock:
            return held.fold.last_message()

    # -- writing ---------------------------------------------------------------

    def append_many(
        self,
        items: Sequence[EventData],
        *,
        origin: str | None = None,
        sync: bool | None = None,
        allow_undispatched: bool = False,
    ) -> list[Event]:
        """Append payloads as one batch (one write, at most one sync)."""
        return self.held.append_many(
            items, origin=origin, sync=sync, allow_undispatched=allow_undispatched
        )

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
        and writes nothing (see `turnlog.core.write_order`): a `ToolResult` must
        answer a call the open turn dispatched, unless `allow_undispatched`
        says its dispatch is unknown (an import).
        """
        return self.held.append(
            data, origin=origin, sync=sync, allow_undispatched=allow_undispatched
        )

    def subscribe(self, callback: Callable[[Sequence[Event], bool], None]) -> None:
        """Call `callback(events, durable)` after every acknowledged append,
        with `durable` true when the events were synced before it returned."""
        self.held.subscribers.append(callback)

    def system(self, content: Content) -> Event[ev.SystemMessage]:
        return self.append(ev.SystemMessage(content=content))

    def user(self, content: Content, *, injected: str | None = None) -> Event[ev.UserMessage]:
        return self.append(ev.UserMessage(content=content, injected=injected))

    def assistant(
        self,
        content: Content = "",
        tool_calls: Sequence[ToolCall] = (),
        *,
        usage: ev.TokenUsage | None = None,
    ) -> Event[ev.AssistantMessage]:
        """Append an assistant message (with the request's token usage, when
        the provider reported it); the event it returns is typed, so
        `msg.data.tool_calls` type-checks."""
        return self.append(
            ev.AssistantMessage(content=content, tool_calls=list(tool_calls), usage=usage)
        )

    # -- structure ---------------------------------------------------------------

    def turn(self, *, resume: bool = False) -> TurnBlock:
        """`turn_start` now, `turn_end` when the block ends.

        If the block raises, every call the turn still owes is answered (a
        dispatched one as outcome unknown, an undispatched one as not started),
        an open step is closed, and the turn ends `error` (or `cancelled` for
        a cancellation); the exception then propagates.

        `resume=True` carries on the turn a tree revival left open (its waits
        on subagents now answered) instead of starting one: its open step is
        ended, and the block adds steps to the same turn.
        """
        return TurnBlock(self.held, resume)

    # The halves of `turn`, `step` and `dispatch`, shared with the asyncio
    # twin (`turnlog.handle.async_log`), which runs them on its writer thread. Their rules
    # live in `turnlog.handle.turns` and `turnlog.handle.dispatch`.

    def begin_turn(self, *, resume: bool = False) -> Turn:
        return turns.begin_turn(self.held, resume=resume)

    def fail_turn(self, exc: BaseException) -> None:
        turns.fail_turn(self.held, exc)

    def end_turn(self, turn: Turn) -> None:
        turns.end_turn(self.held, turn)

    def step(self) -> StepBlock:
        """`step_start` now, `step_end` when the block ends (outcome `error` if it raised)."""
        return StepBlock(self.held)

    def begin_step(self) -> int:
        return turns.begin_step(self.held)

    def fail_step(self, exc: BaseException) -> None:
        turns.unwind(self.held, exc, reason=None)

    def end_step(self) -> None:
        turns.end_step(self.held)

    def dispatch(
        self,
        call: ToolCall,
        *,
        idempotency: IdempotencyValue | None = None,
        join: str | None = None,
    ) -> DispatchBlock:
        """Write `tool_dispatch` (durable unless durability is `none`), then run the block.

        Run the tool inside the block and record its output with
        `handle.result(...)`. If the block raises or ends without a result,
        the call is answered as outcome unknown, since it may have run.
        """
        payload = ev.ToolDispatch(
            call_id=call.id, name=call.name, idempotency=idempotency, join=join
        )
        return DispatchBlock(self.held, call, payload)

    def begin_dispatch(
        self,
        call: ToolCall,
        *,
        idempotency: IdempotencyValue | None = None,
        join: str | None = None,
    ) -> Dispatch:
        return begin_dispatch(self.held, call, idempotency=idempotency, join=join)

    def end_dispatch(self, handle: Dispatch, exc: BaseException | None) -> None:
        """Answer the call as outcome unknown if the block left it unanswered."""
        end_dispatch(self.held, handle, exc)

    # -- pauses --------------------------------------------------------------------

    def pause(
        self,
        call_id: str,
        *,
        kind: str = "approval",
        until: datetime.datetime | str | None = None,
        prompt: str | None = None,
        decided_in: str | None = None,
    ) -> Event[ev.ToolPaused]:
        """Pause a call the open turn asked for and has not dispatched: it
        waits for a decision (`kind`: "approval", "external" for a result an
        outside system delivers, "input" for a person's answer), until
        `until` if given. Written synced. Ending the turn block then leaves
        the turn open and paused: nothing repairs it, and `turn(resume=True)`
        carries it on, in this process or another."""
        return pauses.pause(
            self.held, call_id, kind=kind, until=until, prompt=prompt, decided_in=decided_in
        )

    def approve(
        self,
        call_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        keeper: str | None = None,
    ) -> Event[ev.ToolDecision]:
        """Record that the paused call may run; resuming the turn dispatches it.
        A pause whose decision a framework keeps (`decided_in`) takes one only
        from that keeper (`keeper=` the same words): decided anywhere else, a
        run the framework resumes could act against it unseen."""
        return pauses.approve(self.held, call_id, by=by, reason=reason, keeper=keeper)

    def reject(
        self,
        call_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        keeper: str | None = None,
    ) -> list[Event]:
        """Record that the paused call must not run, and answer it as declined
        (A1). `keeper` as for `approve`."""
        return pauses.reject(self.held, call_id, by=by, reason=reason, keeper=keeper)

    def deliver(
        self,
        call_id: str,
        content: Content,
        *,
        by: str | None = None,
        is_error: bool = False,
        keeper: str | None = None,
    ) -> list[Event]:
        """Answer a paused `external` or `input` call with the result that
        arrived. `keeper` as for `approve`."""
        return pauses.deliver(self.held, call_id, content, by=by, is_error=is_error, keeper=keeper)

    def expire(
        self,
        *,
        now: datetime.datetime | None = None,
        max_age_s: float | None = None,
        because: str | None = None,
        keep_turn_open: bool = False,
    ) -> list[Event]:
        """Settle undecided pauses past their deadline (or older than
        `max_age_s`) as not run (A2); see `turnlog sweep`. With `because`,
        every undecided pause ends now, for that reason (a run went on
        without a decision), and `keep_turn_open` leaves the turn to that run."""
        return pauses.expire(
            self.held,
            now=now,
            max_age_s=max_age_s,
            because=because,
            keep_turn_open=keep_turn_open,
        )

    def settle_decided(self) -> list[Event]:
        """Answer rejected (A1) and delivered (A4) calls whose result a torn
        write lost: what a resumed run does before it carries the turn on."""
        return pauses.settle_decided(self.held)

    @property
    def awaiting(self) -> tuple[Awaiting, ...]:
        """The open turn's paused calls not yet acted on (empty when none)."""
        return pauses.awaiting(self.held)

    @property
    def paused(self) -> bool:
        """True while the open turn is paused: its only unanswered calls wait on decisions."""
        held = self.held
        with held.lock:
            return held.fold.paused

    # -- recovery ------------------------------------------------------------------

    def verdict(self) -> Verdict:
        """What recovery and revival see in the session now (`verdict.decide`)."""
        held = self.held
        with held.lock:
            return decide(held.fold)

    def plan(self) -> Plan:
        """The repairs recovery would append now (see `turnlog.plan`)."""
        held = self.held
        with held.lock:
            return plan_verdict(decide(held.fold))

    def recover(self, *, pending: Collection[str] = ()) -> Plan:
        """Append the repair plan, synced; returns it (empty if nothing was owed).

        `pending` names waits on subagents that a tree revival brings back:
        they get no result and the turn stays open until they are answered.
        """
        held = self.held
        with held.lock:
            repairs = plan_verdict(decide(held.fold), pending=frozenset(pending), ts=utc_now())
            if repairs.events:
                # Waits left pending stay owed on purpose: nothing to check yet.
                checked = recovery_exports if not pending else _unchecked
                with checked(self.store, self.session_id):
                    held.write(held.require_writer(), list(repairs.events), True)
            # Waits left pending are answered by revived children, not a crash.
            held.crashed = False
            return repairs

    # -- life ----------------------------------------------------------------------

    def sync(self) -> None:
        self.held.sync()

    def close(self) -> None:
        """Sync what is not yet durable and release the lock. Idempotent."""
        self.held.close()

    @property
    def closed(self) -> bool:
        return self.held.writer is None

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


def open_handle(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    options: OpenOptions = DEFAULT_OPEN,
) -> Log:
    """The handle `turnlog.open` makes, recovered when `options.recover`
    says so; a revival, which is built on the handle, is `turnlog.open`'s to
    run (`turnlog.ops.open`). With `options.engine_run`, it writes for that
    run (`turnlog.handle.engine_runs`)."""
    engine_run, recover = options.engine_run, options.recover
    if engine_run is not None:
        check_engine_run(engine_run)
        if recover:
            raise UsageError(
                "a session opened for an engine run is never recovered on open",
                hint="the engine runs the workflow again; its tool calls answer themselves "
                "through turnlog.at_most_once",
            )
    opened = open_session(target, session_id, options)
    try:
        log = Log(
            opened.store,
            opened.writer,
            opened.fold,
            whole=opened.whole,
            durability=options.durability,
        )
    except BaseException:
        opened.writer.close()
        raise
    if engine_run is not None:
        try:
            write_for(log.held, engine_run, replay=options.replay)
        except BaseException:
            log.close()
            raise
    if log.crashed and recover:
        try:
            log.recover()
        except BaseException:
            log.close()
            raise
    return log
