"""The state of a session held for writing, and the hot append every writer handle shares."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from turnlog import events as ev
from turnlog.core.batch_order import check_batch
from turnlog.core.clock import utc_now
from turnlog.core.crashed import crashed_error, is_repair
from turnlog.core.durability import Durability, check_durability, must_sync
from turnlog.core.fold import Fold
from turnlog.core.replay import Replay
from turnlog.core.revivable import awaiting_children
from turnlog.core.write_order import ORDER_RULES, order_error
from turnlog.errors import SessionInterruptedError, TurnlogError, UsageError
from turnlog.events import Event, EventData, P
from turnlog.handle.bulk import collector_paused
from turnlog.stores.base import Store, StoreWriter

Subscriber = Callable[[Sequence[Event], bool], None]


# An enum's `.value` is a descriptor call: every turn reads a plain string.
_COMPLETE: Final = ev.TurnEndReason.COMPLETE.value


class Turn:
    """An open turn. Set `reason` before the block ends to end it otherwise than
    `complete` (for example `rejected`)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.steps = 0
        self.reason: str = _COMPLETE


def _observed(events: Iterable[Event], observe: Callable[[Event], None]) -> Iterator[Event]:
    for event in events:
        observe(event)
        yield event


class HandleState:
    """What a writer handle knows and holds: the store's writer, the fold kept
    current, the open turn, the lock that orders appends, and the subscribers.

    `Log` and `AsyncLog` own one; the turn, step and dispatch rules
    (`turnlog.handle.turns`, `turnlog.handle.dispatch`) take it, so none of
    them reaches into a handle. Every attribute is read and changed under
    `lock`.
    """

    __slots__ = (
        "crashed",
        "durability",
        "engine_run",
        "fold",
        "lock",
        "never_sync",
        "owed_sync",
        "replay",
        "running_bodies",
        "session_id",
        "store",
        "subscribers",
        "turn",
        "whole",
        "writer",
    )

    def __init__(
        self,
        store: Store,
        writer: StoreWriter,
        fold: Fold,
        *,
        whole: bool,
        durability: Durability,
    ) -> None:
        check_durability(durability)
        if fold.session is None:
            raise TurnlogError(
                "the session has no header event", hint="the log is not a turnlog session"
            )
        self.store = store
        self.session_id: str = fold.session.session_id
        self.writer: StoreWriter | None = writer
        self.durability: Durability = durability
        # The mode never changes: a handle that never syncs skips the rule.
        self.never_sync = durability == "none"
        self.fold = fold
        # False while `fold` was fed from the tail: exact for the open turn,
        # revivals and the next seq, but its transcript holds only the tail.
        self.whole = whole
        # The turn this handle's `turn()` block (or `begin_turn`) opened.
        self.turn: Turn | None = None
        self.subscribers: list[Subscriber] = []
        # The calls whose guarded body (`turnlog.at_most_once`) runs in this
        # process now: their dispatch has no result yet, and no crash is why.
        self.running_bodies: set[str] = set()
        # Reentrant: a dispatch block appends while holding it.
        self.lock = threading.RLock()
        # None, or, while an asyncio handle runs a write on its event loop's
        # thread (`turnlog.handle.async_log`), whether that write asked for a
        # sync: the sync is then owed, and done off the loop before its await
        # returns.
        self.owed_sync: bool | None = None
        # The engine run this handle writes for (`turnlog.handle.engine_runs`),
        # and, while that run is executed again after a crash, the writes it
        # made before, met again instead of written twice. A replay routes
        # every write through the `crashed` branch of `append`, off the hot path.
        self.engine_run: ev.EngineRun | None = None
        self.replay: Replay | None = None
        self.crashed = self.is_crashed()

    # -- reading -------------------------------------------------------------------

    def whole_fold(self, observe: Callable[[Event], None] | None = None) -> Fold:
        """The fold of the whole log, read once on first need."""
        if self.whole:
            return self.fold
        with self.lock:
            if not self.whole:
                # We hold the writer lock: the store holds exactly what this
                # handle appended on top of what it read.
                events = self.store.iter_events(self.session_id)
                if observe is not None:
                    events = _observed(events, observe)
                with collector_paused():
                    whole = Fold(events)
                if whole.next_seq != self.fold.next_seq:
                    raise TurnlogError(
                        f"session {self.session_id!r} holds {whole.next_seq} events where this "
                        f"writer expects {self.fold.next_seq}",
                        hint="another process wrote without the lock; reopen the session",
                    )
                self.fold = whole
                self.whole = True
            return self.fold

    def next_turn_start(self) -> ev.TurnStart:
        """The `turn_start` the next turn begins with: numbered, and stamped
        with the revivals so far and the reports still owed, so a tail reader
        need not search for them."""
        with self.lock:
            fold = self.fold
            owed = fold.reports_owed()
            return ev.TurnStart(
                turn=fold.last_turn_number + 1,
                revivals=fold.revivals,
                reports_owed=owed if owed else None,
                engine_run=self.engine_run,
            )

    # -- writing -------------------------------------------------------------------

    def require_writer(self) -> StoreWriter:
        if self.writer is None:
            raise UsageError("the log is closed", hint="open the session again to write to it")
        return self.writer

    def refuse_if_crashed(self, data: EventData, origin: str | None) -> None:
        if self.crashed and not is_repair(data, origin):
            raise self.crashed_refusal()

    def crashed_refusal(self) -> SessionInterruptedError:
        where = self.store.location(self.session_id) or self.session_id
        owner = None
        if self.fold.turn_open:
            turn = self.fold.open_turn
            owner = turn.engine_run if turn is not None else None
        return crashed_error(self.session_id, where, owner)

    def replayed(self, data: EventData, origin: str | None) -> Event | None:
        """While an engine run is replayed: the stored event this write is made
        again as. None once the replay is done, which ends it: the run then
        carries on in its own turn, never a crashed one."""
        replay = self.replay
        if replay is None:
            return None
        found = replay.match(data, origin)
        if found is None:
            self.replay = None
            self.crashed = self.is_crashed()
        return found

    def is_crashed(self) -> bool:
        """Opened with a turn open and no other writer: the process that wrote
        it died mid-turn. Until recovery closes that turn, anything else would
        land inside it (a user message between a call and its result).

        A turn a tree revival left open for its children's answers is not
        one: the carry-on may run in a new process (`turnlog revive --tree`).
        A paused turn is not one either: its calls wait, on purpose, for
        decisions another process may record. Nor is the turn of this
        handle's engine run, once its replay is done: the run carries it on.
        While a replay runs, every write goes through the `crashed` branch.
        """
        if self.replay is not None:
            return True
        fold = self.fold
        if not fold.turn_open:
            return False
        if self.engine_run is not None:
            turn = fold.open_turn
            if turn is not None and turn.engine_run == self.engine_run:
                return False
        return not fold.paused and not awaiting_children(fold)

    def append(
        self,
        data: P,
        *,
        origin: str | None = None,
        sync: bool | None = None,
        allow_undispatched: bool = False,
    ) -> Event[P]:
        """Append one payload; returns the stored event (see `Log.append`)."""
        # The hot path of every agent loop: `write` inlined for one event, and
        # the lock taken by hand, which costs half of what a `with` block does.
        lock = self.lock
        lock.acquire()
        try:
            writer = self.writer
            if writer is None:
                writer = self.require_writer()
            if self.crashed:
                if self.replay is not None:
                    found = self.replayed(data, origin)
                    if found is not None:
                        return found  # type: ignore[return-value]
                self.refuse_if_crashed(data, origin)
            fold = self.fold
            rule = ORDER_RULES.get(type(data))
            if rule is not None:
                if allow_undispatched:
                    error = order_error(fold, data, origin, allow_undispatched=True)
                else:
                    error = rule(fold, data, origin)
                if error is not None:
                    raise error
            event = Event(seq=fold.next_seq, data=data, ts=utc_now(), origin=origin)
            if sync is None:
                sync = False if self.never_sync else must_sync(self.durability, data)
            if sync and self.owed_sync is not None:
                self.owed_sync, sync = True, False
            try:
                writer.append_one(event, sync)
                fold.extend((event,))  # `apply`, one frame less
            except BaseException:
                # Exception-safe bookkeeping: whatever reached the store is
                # folded, even when a signal handler raised mid-append.
                if writer.next_seq > fold.next_seq:
                    fold.apply(event)
                raise
            if self.subscribers:
                for callback in self.subscribers:
                    callback((event,), sync)
            return event
        finally:
            lock.release()

    def append_many(
        self,
        items: Sequence[EventData],
        *,
        origin: str | None = None,
        origins: Sequence[str | None] | None = None,
        sync: bool | None = None,
        allow_undispatched: bool = False,
    ) -> list[Event]:
        """Append payloads as one batch (one write, at most one sync): all of
        it or none. Each item is stamped `origin`, or its own of `origins`."""
        each = [origin] * len(items) if origins is None else list(origins)
        if len(each) != len(items):
            raise UsageError(
                f"{len(items)} events with {len(each)} origins",
                hint="give one origin per event, or one `origin` for all",
            )
        with self.lock:
            writer = self.require_writer()
            if self.replay is not None:
                return self._replay_many(items, each, sync, allow_undispatched)
            for data, stamped in zip(items, each, strict=True):
                self.refuse_if_crashed(data, stamped)
            check_batch(self.fold, items, each, allow_undispatched)
            ts = utc_now()
            first = self.fold.next_seq
            batch = [
                Event(seq=first + offset, data=data, ts=ts, origin=stamped)
                for offset, (data, stamped) in enumerate(zip(items, each, strict=True))
            ]
            self.write(writer, batch, sync)
            return batch

    def _replay_many(
        self,
        items: Sequence[EventData],
        origins: list[str | None],
        sync: bool | None,
        allow_undispatched: bool,
    ) -> list[Event]:
        """A batch made again while replaying: what the log holds is met, and
        what comes after the replay's end is written as one batch."""
        met: list[Event] = []
        rest = list(zip(items, origins, strict=True))
        while rest:
            found = self.replayed(*rest[0])
            if found is None:
                break
            met.append(found)
            rest.pop(0)
        if rest:
            met.extend(
                self.append_many(
                    [data for data, _ in rest],
                    origins=[stamped for _, stamped in rest],
                    sync=sync,
                    allow_undispatched=allow_undispatched,
                )
            )
        return met

    def write(self, writer: StoreWriter, batch: list[Event], sync: bool | None) -> None:
        """Write events already checked and numbered, fold what landed, and
        tell the subscribers. The caller holds `lock`."""
        if not batch:
            return
        if sync is None:
            mode = self.durability
            sync = any(must_sync(mode, event.data) for event in batch)
        if sync and self.owed_sync is not None:
            self.owed_sync, sync = True, False
        try:
            writer.append(batch, expected_seq=batch[0].seq, sync=sync)
        finally:
            landed = writer.next_seq - self.fold.next_seq
            apply = self.fold.apply
            for event in batch[: max(landed, 0)]:
                apply(event)
        if self.subscribers:
            for callback in self.subscribers:
                callback(batch, sync)

    def sync(self) -> None:
        with self.lock:
            writer = self.require_writer()
            if self.owed_sync is not None:
                self.owed_sync = True
            else:
                writer.sync()

    def close(self) -> None:
        """Sync what is not yet durable and release the store's lock. Idempotent."""
        with self.lock:
            writer, self.writer = self.writer, None
            if writer is not None:
                writer.close()
