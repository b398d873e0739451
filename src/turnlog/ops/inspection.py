"""Inspect a stored session from its tail: the I/O around the verdict."""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, TornTail
from turnlog.core.pauses import Awaiting
from turnlog.core.revivable import (
    DEFAULT_MAX_REVIVALS,
    Refusal,
    already_told,
    check_max_revivals,
    refusal,
)
from turnlog.core.verdict import OwedCall, Verdict, decide
from turnlog.errors import (
    CorruptLogError,
    NotASessionError,
    SessionNotFoundError,
    TurnlogError,
    UnreadableRecordError,
    UsageError,
)
from turnlog.stores import Holder, Store, stored_session

#: What state a session is in (`Inspection.status`).
InspectionStatus = Literal[
    "running", "interrupted", "paused", "idle", "finished", "empty", "corrupt", "unreadable"
]
#: Why a session may or may not be revived (`Inspection.reason`): its status
#: when nothing more is to say, "needs_response" for an idle session,
#: "already_revived", or a refusal (`revivable.Refusal`).
InspectionReason = Literal[
    "running",
    "interrupted",
    "paused",
    "needs_response",
    "reports_owed",
    "already_revived",
    "corrupt",
    "unreadable",
    Refusal,
]
# A session with no state to fold: its status is its reason.
_Stateless = Literal["empty", "corrupt", "unreadable"]


class OpenTurnRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    seq: int
    turn: int | None
    # The durable engine's run that owns the turn, which the engine restarts.
    engine_run: ev.EngineRun | None = None


class Inspection(msgspec.Struct, frozen=True, kw_only=True):
    """What a session's tail says, without writing anything."""

    session_id: str | None
    status: InspectionStatus
    revivable: bool
    reason: InspectionReason
    max_revivals: int
    events: int = 0
    turns: int = 0
    open_turn: OpenTurnRef | None = None
    owed_calls: tuple[OwedCall, ...] = ()
    # Calls paused for a decision (status "paused"): owed to no recovery.
    awaiting: tuple[Awaiting, ...] = ()
    revivals: int = 0
    torn_tail: TornTail | None = None
    problems: tuple[Problem, ...] = ()
    holder: Holder | None = None
    holder_pid: int | None = None
    last_activity: str | None = None
    path: str | None = None
    bytes_read: int = 0


def status_of(
    found: Verdict, holder: Holder | None, max_revivals: int, *, told: bool = False
) -> tuple[InspectionStatus, bool, InspectionReason]:
    """(status, revivable, reason) of a verdict, given who holds the writer and
    whether the session was already revived and not run on since (`told`)."""
    if found.paused:
        # The log proves the pause, whoever holds the writer: a paused run is
        # neither crashed nor revivable, and a process may wait holding it.
        return "paused", False, "paused"
    if holder is not None:
        return "running", False, "running"
    status: InspectionStatus
    reason: InspectionReason
    if found.open_turn is not None:
        status, reason = "interrupted", "interrupted"
    elif found.empty:
        status = reason = "empty"
    elif found.finished:
        status = reason = "finished"
    elif found.reports_owed:
        # It answered, but a background child's report is still owed: its
        # next turn delivers it, or reports the child lost.
        status, reason = "idle", "reports_owed"
    else:
        status, reason = "idle", "needs_response"
    refused = refusal(found, max_revivals, told=told)
    if refused is not None:
        return status, False, refused
    return status, True, "already_revived" if told else reason


def _without_state(
    session_id: str | None, status: _Stateless, max_revivals: int, **found: Any
) -> Inspection:
    """An inspection of a session that has no state to fold (empty, unreadable, corrupt)."""
    return Inspection(
        session_id=session_id,
        status=status,
        revivable=False,
        reason=status,
        max_revivals=max_revivals,
        **found,
    )


def inspect(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    max_revivals: int = DEFAULT_MAX_REVIVALS,
) -> Inspection:
    """Read a session's tail and say what state it is in. Never writes, never raises
    for what it finds (a missing, empty, damaged or foreign file is a status)."""
    check_max_revivals(max_revivals)
    where: str | None = None
    try:
        store, session_id = stored_session(target, session_id, what="inspect")
        where = store.location(session_id)
        if not store.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id!r} in {store.url}")
        holder = store.lock_holder(session_id)
        tail = store.read_tail(session_id)
    except UsageError:
        raise
    except (CorruptLogError, UnreadableRecordError) as exc:
        problem = Problem(message=exc.detail, line=exc.line, offset=exc.offset)
        return _without_state(session_id, "corrupt", max_revivals, problems=(problem,), path=where)
    except NotASessionError as exc:
        problem = Problem(message=f"{exc.message}; hint: {exc.hint}", line=1)
        return _without_state(
            session_id, "unreadable", max_revivals, problems=(problem,), path=where
        )
    except (TurnlogError, OSError) as exc:
        problem = Problem(message=str(exc))
        return _without_state(
            session_id, "unreadable", max_revivals, problems=(problem,), path=where
        )
    if not tail.events:
        # No complete header: empty, or cut short while being created.
        return _without_state(
            session_id,
            "empty",
            max_revivals,
            torn_tail=tail.torn,
            problems=tail.problems,
            path=where,
            bytes_read=tail.bytes_read,
            holder=holder,
            holder_pid=holder.pid if holder is not None else None,
        )
    folder = tail.fold()
    found = decide(folder)
    told = already_told(folder.last_message(), folder.open_turn)
    status, revivable, reason = status_of(found, holder, max_revivals, told=told)
    turn = found.open_turn
    return Inspection(
        session_id=found.session.session_id if found.session is not None else session_id,
        status=status,
        revivable=revivable,
        reason=reason,
        events=found.next_seq,
        turns=folder.last_turn or 0,
        open_turn=OpenTurnRef(seq=turn.seq, turn=turn.turn, engine_run=turn.engine_run)
        if turn is not None
        else None,
        owed_calls=found.owed,
        awaiting=found.awaiting,
        revivals=found.revivals,
        max_revivals=max_revivals,
        torn_tail=tail.torn,
        problems=tail.problems,
        holder=holder,
        holder_pid=holder.pid if holder is not None else None,
        last_activity=found.last_ts,
        path=where,
        bytes_read=tail.bytes_read,
    )
