"""Inspect a session from its tail, and revive a crashed run as itself."""

from __future__ import annotations

import os
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.damage import Problem, TornTail
from turnlog.errors import (
    CorruptLogError,
    SessionNotFoundError,
    TurnlogError,
    UsageError,
)
from turnlog.events import Origin
from turnlog.fold import Message, SessionState
from turnlog.log import Log
from turnlog.recovery import Plan, classify
from turnlog.stores import Store, open_store

DEFAULT_MAX_REVIVALS: Final = 3

STATUSES: Final = ("running", "interrupted", "idle", "finished", "empty", "unreadable", "corrupt")

REVIVAL_NOTICE: Final = (
    "[turnlog] The previous process running this conversation ended in the middle of its "
    "work (revival {revival}). Everything above is your own conversation so far. Tool "
    "calls that were in flight have results saying what is known about them: a call "
    "marked as not started did not run; a call whose outcome is unknown may have run, so "
    "check the state it was changing before you retry it. Work that was unfinished is "
    "still unfinished: carry on from where you stopped."
)


class OwedCall(msgspec.Struct, frozen=True, kw_only=True):
    call_id: str
    name: str | None
    risk: str
    rule: str
    idempotency: str | None = None


class OpenTurnRef(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    turn: int | None


class Inspection(msgspec.Struct, frozen=True, kw_only=True):
    """What a session's tail says, without writing anything."""

    session_id: str | None
    status: str
    revivable: bool
    reason: str
    max_revivals: int
    events: int = 0
    turns: int = 0
    open_turn: OpenTurnRef | None = None
    owed_calls: tuple[OwedCall, ...] = ()
    revivals: int = 0
    torn_tail: TornTail | None = None
    problems: tuple[Problem, ...] = ()
    holder_pid: int | None = None
    last_activity: str | None = None
    path: str | None = None
    bytes_read: int = 0


def owed_calls(state: SessionState) -> tuple[OwedCall, ...]:
    """The calls recovery would answer, with the risk the decision table gives."""
    out = []
    for turn in state.open_turns:
        for call in turn.calls:
            if call.call_id in state.answered:
                continue
            risk, rule = classify(call, turn)
            out.append(
                OwedCall(
                    call_id=call.call_id,
                    name=call.name,
                    risk=risk.value,
                    rule=rule,
                    idempotency=call.dispatch.idempotency if call.dispatch else None,
                )
            )
    return tuple(out)


def is_finished(state: SessionState) -> bool:
    """No open turn, and the last surface message is an answer asking for no tools."""
    if state.open_turns:
        return False
    for message in reversed(state.messages):
        if message.kind == "compaction":
            continue
        return message.role == "assistant" and not message.tool_calls
    return False


def _without_state(
    session_id: str | None, status: str, max_revivals: int, **found: Any
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
    if max_revivals < 0:
        raise UsageError(f"max_revivals must be >= 0, not {max_revivals}")
    try:
        store, session_id = open_store(target, session_id)
        if session_id is None:
            raise UsageError("inspect needs a session id or a .jsonl path")
        path = getattr(store, "path", None)
        where = path(session_id) if callable(path) else None
        if not store.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id!r} in {store.url}")
        holder = store.lock_holder(session_id)
        tail = store.read_tail(session_id)
    except UsageError:
        raise
    except CorruptLogError as exc:
        problem = Problem(message=exc.message, line=exc.line, offset=exc.offset)
        return _without_state(session_id, "corrupt", max_revivals, problems=(problem,))
    except (TurnlogError, OSError) as exc:
        problem = Problem(message=str(exc))
        return _without_state(session_id, "unreadable", max_revivals, problems=(problem,))
    first = tail.header or (tail.events[0] if tail.events else None)
    if first is None:
        # Bytes but not one valid record is not a turnlog session at all.
        status = "unreadable" if tail.problems else "empty"
        return _without_state(
            session_id,
            status,
            max_revivals,
            torn_tail=tail.torn,
            problems=tail.problems,
            path=where,
            bytes_read=tail.bytes_read,
        )
    if first.seq != 0 or not isinstance(first.data, ev.Session):
        problem = Problem(message="the first record is not a turnlog session header", line=1)
        return _without_state(session_id, "unreadable", max_revivals, problems=(problem,))
    state = tail.fold()
    running = holder is not False
    turn = state.open_turn
    if running:
        status, revivable, reason = "running", False, "running"
    elif turn is not None:
        status, revivable, reason = "interrupted", True, "interrupted"
    elif is_finished(state):
        status, revivable, reason = "finished", False, "finished"
    else:
        status, revivable, reason = "idle", True, "needs_response"
    if revivable and max_revivals == 0:
        revivable, reason = False, "revival_disabled"
    elif revivable and state.revivals >= max_revivals:
        revivable, reason = False, "revival_cap"
    return Inspection(
        session_id=state.session_id,
        status=status,
        revivable=revivable,
        reason=reason,
        events=state.next_seq,
        turns=state.last_turn if state.last_turn is not None else state.turns,
        open_turn=OpenTurnRef(seq=turn.seq, turn=turn.turn) if turn is not None else None,
        owed_calls=owed_calls(state),
        revivals=state.revivals,
        max_revivals=max_revivals,
        torn_tail=tail.torn,
        problems=tail.problems,
        holder_pid=holder if isinstance(holder, int) and holder is not True else None,
        last_activity=state.last_ts,
        path=where,
        bytes_read=tail.bytes_read,
    )


class Revival(msgspec.Struct, frozen=True, kw_only=True):
    """What a loop needs to carry on as the same agent, or why it may not."""

    revived: bool
    reason: str
    revival: int
    repairs: Plan | None = None
    messages: tuple[Message, ...] = ()
    agent: ev.Agent | None = None


def revive(log: Log, *, max_revivals: int = DEFAULT_MAX_REVIVALS) -> Revival:
    """Recover, then record the revival and tell the model what happened.

    The cap is counted from the log, so it survives the process; past it,
    or for a finished session, nothing is written. Tool calls are never
    replayed: the owed ones get their recovery results and the model decides.
    """
    if max_revivals < 0:
        raise UsageError(f"max_revivals must be >= 0, not {max_revivals}")
    state = log.state
    if max_revivals == 0:
        return Revival(revived=False, reason="revival_disabled", revival=state.revivals)
    if is_finished(state):
        return Revival(revived=False, reason="finished", revival=state.revivals)
    if state.revivals >= max_revivals:
        return Revival(revived=False, reason="revival_cap", revival=state.revivals)
    repairs = log.recover()
    number = state.revivals + 1
    header = state.session
    agent = header.agent if header is not None else None
    log.append_many(
        [
            ev.RunRevived(revival=number, agent_id=agent.id if agent else None),
            ev.UserMessage(content=REVIVAL_NOTICE.format(revival=number), injected="revival"),
        ],
        origin=Origin.REVIVAL.value,
        sync=True,
    )
    return Revival(
        revived=True,
        reason="revived",
        revival=number,
        repairs=repairs,
        messages=log.messages,
        agent=agent,
    )
