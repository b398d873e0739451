"""Recovery's plans and recovering a stored session: the plan of a log's events, and of a
stored session from its tail, appended under the writer lock."""

from __future__ import annotations

import os
from collections.abc import Iterable

import msgspec

from turnlog.core.clock import utc_now
from turnlog.core.damage import TornTail
from turnlog.core.fold import Fold
from turnlog.core.pauses import Awaiting
from turnlog.core.recovery import Plan, plan_verdict
from turnlog.core.verdict import decide
from turnlog.errors import SessionLockedError, UnfinishedSessionError, refuse_a_path
from turnlog.events import Event
from turnlog.handle import selfcheck
from turnlog.handle.selfcheck import recovery_exports
from turnlog.stores import Store, stored_session


class Recovery(msgspec.Struct, frozen=True, kw_only=True):
    """What `recover` appended, and the torn tail it moved aside first."""

    plan: Plan
    torn_tail: TornTail | None = None
    # Background children whose report the session still owes: recovery
    # neither runs nor drops them; the session's next turn delivers each
    # report once, or reports the child lost.
    reports_owed: tuple[str, ...] = ()
    # Calls paused for a decision: recovery never answers them (a pause is
    # not a crash), and they still wait after it.
    awaiting: tuple[Awaiting, ...] = ()


def plan(events: Iterable[Event]) -> Plan:
    """The events that repair a crashed log, without writing anything.

    Pure and deterministic: the same events give the same repairs, byte for
    byte; synthetic timestamps are the last real event's (`recover` writes
    them with the time of the repair).
    """
    refuse_a_path(events, function="turnlog.plan", instead="turnlog.plan_stored(PATH)")
    folder = Fold(events)
    repairs = plan_verdict(decide(folder))
    warnings = folder.warnings
    if selfcheck.enabled() and repairs.events:
        owed = [call.call_id for call in folder.state.owed_calls]
        waiting = folder.waiting_calls()
        before = selfcheck.violations_of(folder.state.messages)
        folder.extend(repairs.events)
        after = selfcheck.violations_of(folder.state.messages)
        selfcheck.check_recovery(before, after, owed, "a planned log", waiting)
    return Plan(events=repairs.events, warnings=warnings)


def plan_stored(target: str | os.PathLike[str] | Store, session_id: str | None = None) -> Plan:
    """What `recover` would append now, from the tail, writing nothing.

    Refuses (`SessionLockedError`) while a live writer holds the session: its
    open turn is work in progress, not a crash.
    """
    store, session_id = stored_session(target, session_id, what="plan_stored")
    holder = store.lock_holder(session_id)
    if holder is not None:
        raise SessionLockedError(
            f"session {session_id!r} is running: {holder.describe()} holds its writer",
            pid=holder.pid,
        )
    tail = store.read_tail(session_id)
    if not tail.events:
        raise UnfinishedSessionError(
            f"session {session_id!r} holds no complete session header: a crash cut its "
            "creation short"
        )
    return plan_verdict(tail.verdict())


def recover(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    force: bool = False,
) -> Recovery:
    """Append the repair plan to a stored session, under the writer lock.
    The session is named as `turnlog.open` takes it (a path, or a store and id).

    Reads only the tail, under the lock: the open turn and its calls are all
    after the last turn boundary, so a 10 GB log costs what a 10 KB one does.
    A torn tail is moved aside first; damage among the events the verdict
    reads refuses the session and changes nothing. Idempotent: a recovered
    session plans nothing.
    """
    store, session_id = stored_session(target, session_id, what="recover")
    with store.writer(session_id, force=force, check="tail") as writer:
        tail = writer.tail or store.read_tail(session_id)
        found = tail.verdict()
        repairs = plan_verdict(found, ts=utc_now())
        if repairs.events:
            with recovery_exports(store, session_id):
                writer.append(list(repairs.events), expected_seq=repairs.events[0].seq, sync=True)
        return Recovery(
            plan=repairs,
            torn_tail=writer.torn_tail,
            reports_owed=found.reports_owed,
            awaiting=found.awaiting,
        )
