"""Pausing a call and recording decisions about it, for every writer handle."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from turnlog import events as ev
from turnlog.core.clock import utc_now
from turnlog.core.pauses import (
    Awaiting,
    awaiting_of,
    check_kind,
    check_note,
    decided_results,
    expiry_events,
    rejected_result,
    timestamp,
)
from turnlog.errors import UsageError
from turnlog.events import Content, Decision, Event, Origin
from turnlog.handle.state import HandleState

# These are the handle's own rules, as in `turnlog.handle.turns`: they take
# the state a handle holds, never the handle.


def pause(
    held: HandleState,
    call_id: str,
    *,
    kind: str = "approval",
    until: dt.datetime | str | None = None,
    prompt: str | None = None,
    decided_in: str | None = None,
) -> Event[ev.ToolPaused]:
    """Pause an owed, undispatched call of the open turn, durably (synced):
    the pause must outlive the process that waits on it. `decided_in` names
    where the decision is kept when it is not this log (a framework's state)."""
    with held.lock:
        call = _requested(held, call_id)
        data = ev.ToolPaused(
            call_id=call_id,
            name=call,
            kind=check_kind(kind),
            until=timestamp(until),
            prompt=check_note(prompt, "prompt"),
            decided_in=check_note(decided_in, "decided_in"),
        )
        return held.append(data, sync=not held.never_sync)


def _requested(held: HandleState, call_id: str) -> str | None:
    turn = held.fold.open_turn
    if turn is not None:
        for call in turn.calls:
            if call.call_id == call_id:
                return call.name
    return None


def _check_keeper(held: HandleState, call_id: str, keeper: str | None) -> None:
    """A pause whose decision a framework keeps is decided there only: a
    decision recorded here could not stop a run the framework resumes from
    its own state, and the log would claim what did not happen."""
    with held.lock:
        call = held.fold.waiting_call(call_id)
        kept = call.pause.decided_in if call is not None and call.pause is not None else None
    if kept is not None and keeper != kept:
        raise UsageError(
            f"call {call_id!r} waits for a decision kept in {kept}",
            hint=f"decide it there and resume the run: turnlog records the decision when "
            f"the run acts on it ({kept} is what a resumed run follows)",
        )


# What each decision writes: its events and their origin. A rejection's
# result is turnlog's answer on a person's behalf (origin "decision"); a
# delivered result is the outside system's own.
_Written = tuple[list[ev.EventData], str | None]


def _approval(call_id: str, by: str | None, reason: str | None) -> ev.ToolDecision:
    return ev.ToolDecision(
        call_id=call_id,
        decision=Decision.APPROVED.value,
        by=check_note(by, "by"),
        reason=check_note(reason, "reason"),
    )


def _rejection(held: HandleState, call_id: str, by: str | None, reason: str | None) -> _Written:
    decision = ev.ToolDecision(
        call_id=call_id,
        decision=Decision.REJECTED.value,
        by=check_note(by, "by"),
        reason=check_note(reason, "reason"),
    )
    result = rejected_result(call_id, _requested(held, call_id), by=by, reason=reason)
    return [decision, result], Origin.DECISION.value


def _delivery(
    held: HandleState, call_id: str, content: Content, by: str | None, is_error: bool
) -> _Written:
    decision = ev.ToolDecision(
        call_id=call_id, decision=Decision.DELIVERED.value, by=check_note(by, "by")
    )
    name = _requested(held, call_id)
    result = ev.ToolResult(call_id=call_id, name=name, content=content, is_error=is_error)
    return [decision, result], None


def approve(
    held: HandleState,
    call_id: str,
    *,
    by: str | None = None,
    reason: str | None = None,
    keeper: str | None = None,
) -> Event[ev.ToolDecision]:
    """Record that the paused call may run (synced). Resuming the turn then
    dispatches it write-ahead and runs it, once."""
    _check_keeper(held, call_id, keeper)
    return held.append(_approval(call_id, by, reason), sync=not held.never_sync)


def reject(
    held: HandleState,
    call_id: str,
    *,
    by: str | None = None,
    reason: str | None = None,
    keeper: str | None = None,
) -> list[Event]:
    """Record that the paused call must not run, and answer it (A1) in the
    same write: the model reads that a person declined it."""
    record = DecisionRecord(Decision.REJECTED, call_id, by=by, reason=reason)
    return decide_together(held, [record], keeper=keeper)


def deliver(
    held: HandleState,
    call_id: str,
    content: Content,
    *,
    by: str | None = None,
    is_error: bool = False,
    keeper: str | None = None,
) -> list[Event]:
    """Record the result an outside system (or a person) delivered for a
    paused `external` or `input` call, with who delivered it, in one write."""
    record = DecisionRecord(Decision.DELIVERED, call_id, by=by, content=content, is_error=is_error)
    return decide_together(held, [record], keeper=keeper)


@dataclass(frozen=True)
class DecisionRecord:
    """One decision to record; `reason` is an approval's or a rejection's,
    `content` and `is_error` a delivery's."""

    decision: Decision
    call_id: str
    by: str | None = None
    reason: str | None = None
    content: Content = ""
    is_error: bool = False


def decide_together(
    held: HandleState, records: Sequence[DecisionRecord], *, keeper: str | None = None
) -> list[Event]:
    """Record several decisions in one write (synced): all of them or none.
    A crash cannot leave some decided and the rest not, and a decision the
    write order refuses writes nothing of the others."""
    with held.lock:
        items: list[ev.EventData] = []
        origins: list[str | None] = []
        for record in records:
            _check_keeper(held, record.call_id, keeper)
            written: _Written
            if record.decision is Decision.APPROVED:
                written = [_approval(record.call_id, record.by, record.reason)], None
            elif record.decision is Decision.REJECTED:
                written = _rejection(held, record.call_id, record.by, record.reason)
            else:
                written = _delivery(
                    held, record.call_id, record.content, record.by, record.is_error
                )
            items += written[0]
            origins += [written[1]] * len(written[0])
        return held.append_many(items, origins=origins, sync=not held.never_sync)


def expire(
    held: HandleState,
    *,
    now: dt.datetime | None = None,
    max_age_s: float | None = None,
    because: str | None = None,
    keep_turn_open: bool = False,
) -> list[Event]:
    """Settle the open turn's undecided pauses past their `until` (or older
    than `max_age_s`; every one, with `because`) as not run (A2), synced; the
    turn ends `expired` when nothing else in it waits. Returns what was
    written (empty: none expired)."""
    if max_age_s is not None and not (math.isfinite(max_age_s) and max_age_s >= 0):
        raise UsageError(
            f"max_age_s must be a finite number of seconds, 0 or more, not {max_age_s!r}",
            hint="pass how old an undecided pause may grow, e.g. 86400 for a day",
        )
    with held.lock:
        turn = held.fold.open_turn
        if turn is None or not turn.waiting:
            return []
        events = expiry_events(
            turn,
            next_seq=held.fold.next_seq,
            now=now or dt.datetime.now(dt.UTC),
            ts=utc_now(),
            max_age_s=max_age_s,
            reports_owed=held.fold.reports_owed(),
            because=check_note(because, "because"),
            keep_turn_open=keep_turn_open,
        )
        if events:
            held.write(held.require_writer(), events, True)
        return events


def settle_decided(held: HandleState) -> list[Event]:
    """Answer the calls whose rejection is recorded without its result (A1),
    as a resumed run acts on its decisions; empty when none is owed."""
    with held.lock:
        turn = held.fold.open_turn
        results = decided_results(turn) if turn is not None else []
        if not results:
            return []
        return held.append_many(results, origin=Origin.DECISION.value, sync=not held.never_sync)


def awaiting(held: HandleState) -> tuple[Awaiting, ...]:
    with held.lock:
        return awaiting_of(held.fold.open_turn)
