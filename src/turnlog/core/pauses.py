"""Pauses: calls that wait, on purpose, for a decision; their rules (A1, A2) and expiry. Pure.

A pause is written by the live writer (`tool_paused`), never inferred. A
paused call is owed to its decision, not to recovery: nothing repairs it.
Its decision is recorded (`tool_decision`) before it is acted on: an
approved call is then dispatched write-ahead like any other, a rejected or
expired one is answered as not run, and a delivered one is answered by the
result that arrived.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.core.open_turn import OpenTurn
from turnlog.errors import UsageError
from turnlog.events import Decision, Event, Origin, PauseKind, Risk, TurnEndReason

PAUSE_KINDS: Final = tuple(kind.value for kind in PauseKind)
# What each kind of pause is settled by, besides rejection and expiry.
_ACTED_ON_BY: Final = {
    PauseKind.APPROVAL.value: Decision.APPROVED.value,
    PauseKind.EXTERNAL.value: Decision.DELIVERED.value,
    PauseKind.INPUT.value: Decision.DELIVERED.value,
}
# A bound on what a person is asked and why they decided: a prompt is a
# line to show, not a document (TigerBeetle's style: a limit on everything).
MAX_NOTE_CHARS: Final = 4096

_REJECTED_TEXT = (
    "[turnlog] Tool call {what} did not run: {who} declined it{because}. It had no "
    "side effects. Do not run it again unless you are asked to."
)
_EXPIRED_TEXT = (
    "[turnlog] Tool call {what} did not run: it waited for {waited_for} since {since}, and "
    "{why}. It had no side effects. Ask again if it is still needed."
)
_DROPPED_UNSEEN_TEXT = (
    "[turnlog] Tool call {what} waited for {waited_for} since {since}, and {why}. Its "
    "decision was kept outside this log (in {where}), and a run acting on it is not "
    "recorded here: it MAY HAVE RUN. Check what it would have changed before running it again."
)
_WAITED_FOR: Final = {
    PauseKind.APPROVAL.value: "approval",
    PauseKind.EXTERNAL.value: "an outside result",
    PauseKind.INPUT.value: "a person's answer",
}


class Awaiting(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One paused call of the open turn, as `inspect` and `ls` report it."""

    call_id: str
    name: str | None
    kind: str
    since: str | None
    until: str | None = None
    prompt: str | None = None
    # Where the decision is kept, when not in this log (see `ToolPaused`).
    decided_in: str | None = None
    # The decision recorded and not yet acted on ("approved"), if any.
    decision: str | None = None
    by: str | None = None
    decided_at: str | None = None


def decision_fits(kind: str, decision: str) -> bool:
    """Whether `decision` may settle a pause of `kind`: its kind's own
    decision (approval: approved; external, input: delivered), or rejected."""
    acted_on_by = _ACTED_ON_BY.get(kind, Decision.APPROVED.value)
    return decision in (acted_on_by, Decision.REJECTED.value)


def undecided(awaiting: tuple[Awaiting, ...]) -> bool:
    """True while a paused call among `awaiting` has no decision yet."""
    return any(one.decision is None for one in awaiting)


def awaiting_call(awaiting: tuple[Awaiting, ...], call_id: str) -> Awaiting | None:
    """The pause of `call_id` among `awaiting` (a handle's `awaiting`), if any."""
    return next((one for one in awaiting if one.call_id == call_id), None)


def awaiting_of(turn: OpenTurn | None) -> tuple[Awaiting, ...]:
    """The open turn's paused calls not yet acted on, in order of first sighting."""
    if turn is None:
        return ()
    out = []
    for call in turn.waiting:
        pause = call.pause
        assert pause is not None
        decision = call.decision
        out.append(
            Awaiting(
                call_id=call.call_id,
                name=call.name if call.name is not None else pause.name,
                kind=pause.kind,
                since=call.paused_at,
                until=pause.until,
                prompt=pause.prompt,
                decided_in=pause.decided_in,
                decision=decision.decision if decision is not None else None,
                by=decision.by if decision is not None else None,
                decided_at=call.decided_at if decision is not None else None,
            )
        )
    return tuple(out)


def describe_wait(awaiting: Awaiting) -> str:
    """One line a person reads: what the call waits for, since when."""
    what = f"{awaiting.name} ({awaiting.call_id})" if awaiting.name else awaiting.call_id
    since = f" since {awaiting.since}" if awaiting.since else ""
    if awaiting.decision is not None:
        by = f" by {awaiting.by}" if awaiting.by else ""
        return f"{awaiting.decision}{by}, to be resumed: {what}{since}"
    waited = _WAITED_FOR.get(awaiting.kind, awaiting.kind)
    until = f", until {awaiting.until}" if awaiting.until else ""
    return f"waiting for {waited} of {what}{since}{until}"


def how_to_decide(awaiting: tuple[Awaiting, ...]) -> str:
    """Where a person decides these pauses: the framework state that keeps a
    decision (`decided_in`), else the command line."""
    kept = sorted({one.decided_in for one in awaiting if one.decided_in is not None})
    if kept:
        return f"decide in {' / '.join(kept)}, then resume the run"
    return "decide with `turnlog approve` / `turnlog reject`, then resume the run"


def describe_pause(awaiting: tuple[Awaiting, ...]) -> str:
    """Why a paused session is left alone: "paused: waiting for approval of pay (c1) since …"."""
    if not awaiting:
        return "paused: every paused call is decided, to be resumed"
    return "paused: " + "; ".join(describe_wait(one) for one in awaiting)


# -- checks of what a writer is given ---------------------------------------


def check_kind(kind: object) -> str:
    if isinstance(kind, str) and kind in PAUSE_KINDS:
        return kind
    raise UsageError(
        f"pause kind {kind!r} is not one of {', '.join(PAUSE_KINDS)}",
        hint="'approval' waits for a person to approve the call, 'external' for a result "
        "an outside system delivers, 'input' for a person's answer",
    )


def check_note(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text, not {type(value).__name__}")
    if len(value) > MAX_NOTE_CHARS:
        raise UsageError(
            f"{what} is {len(value)} characters, over the {MAX_NOTE_CHARS}-character limit",
            hint=f"keep the {what} to what a person reads at a glance",
        )
    return value


def timestamp(value: dt.datetime | str | None, what: str = "until") -> str | None:
    """A moment as the format writes it (ISO 8601, UTC, with a `Z`), or None."""
    if value is None:
        return None
    moment = parse_time(value, what) if isinstance(value, str) else value
    if not isinstance(moment, dt.datetime):
        raise UsageError(f"{what} must be a datetime or an ISO 8601 string, not {value!r}")
    if moment.tzinfo is None:
        raise UsageError(
            f"{what} {value!r} has no time zone",
            hint="pass an aware datetime (datetime.now(UTC) + timedelta(hours=1)) or an "
            "ISO 8601 string ending in Z or an offset",
        )
    try:
        utc = moment.astimezone(dt.UTC)
    except OverflowError:
        raise UsageError(f"{what} {value!r} is out of range in UTC") from None
    # `isoformat` writes the year in four digits, as the reader needs it
    # (`strftime`'s %Y writes year 999 as three, which no reader parses).
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(value: str, what: str = "time") -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{what} {value!r} is not an ISO 8601 time",
            hint="for example 2026-12-03T09:00:00Z",
        ) from None
    return moment


def _moment(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


# -- the rules' results -----------------------------------------------------


def _what(call_id: str, name: str | None) -> str:
    return f"`{name}` ({call_id})" if name else f"({call_id})"


def rejected_result(
    call_id: str, name: str | None, *, by: str | None, reason: str | None
) -> ev.ToolResult:
    """A1: a person (or a service) declined the call; it never ran."""
    because = f" ({reason})" if reason else ""
    who = by if by else "the person deciding"
    return ev.ToolResult(
        call_id=call_id,
        name=name,
        content=_REJECTED_TEXT.format(what=_what(call_id, name), who=who, because=because),
        is_error=True,
        risk=Risk.NOT_STARTED.value,
        rule="A1",
    )


_LOST_DELIVERY_TEXT = (
    "[turnlog] A result was delivered for tool call {what}{who}, but it was lost before it "
    "was written in full (the write was cut). What the outside system did is not known "
    "here: it MAY HAVE RUN. Ask for its result again before relying on it."
)


def lost_delivery_result(call: Awaiting) -> ev.ToolResult:
    """A4: a `delivered` decision whose result a torn write lost: the call
    was answered outside, with what is not known."""
    who = f" (by {call.by})" if call.by else ""
    return ev.ToolResult(
        call_id=call.call_id,
        name=call.name,
        content=_LOST_DELIVERY_TEXT.format(what=_what(call.call_id, call.name), who=who),
        is_error=True,
        risk=Risk.OUTCOME_UNKNOWN.value,
        rule="A4",
    )


def expired_result(call: Awaiting, why: str) -> ev.ToolResult:
    """A2: no decision came in time; the call never ran. A3 when the
    decision was kept outside the log (`decided_in`): a run acting on it may
    have run the call where the log could not see it, so it may have run."""
    unseen = call.decided_in is not None
    text = (_DROPPED_UNSEEN_TEXT if unseen else _EXPIRED_TEXT).format(
        what=_what(call.call_id, call.name),
        waited_for=_WAITED_FOR.get(call.kind, call.kind),
        since=call.since or "an unknown time",
        why=why,
        where=call.decided_in,
    )
    return ev.ToolResult(
        call_id=call.call_id,
        name=call.name,
        content=text,
        is_error=True,
        risk=(Risk.OUTCOME_UNKNOWN if unseen else Risk.NOT_STARTED).value,
        rule="A3" if unseen else "A2",
    )


def expired(awaiting: Awaiting, now: dt.datetime, max_age_s: float | None = None) -> str | None:
    """Why an undecided pause has expired at `now`, or None while it stands.

    A decided pause never expires: the decision stands until it is acted on.
    """
    if awaiting.decision is not None:
        return None
    until = _moment(awaiting.until)
    if until is not None and now >= until:
        return (
            f"its approval expired at {awaiting.until}"
            if awaiting.kind == "approval"
            else (f"the wait expired at {awaiting.until}")
        )
    since = _moment(awaiting.since)
    if max_age_s is not None and since is not None and (now - since).total_seconds() >= max_age_s:
        return f"no decision came within {_age_text(max_age_s)}"
    return None


def _age_text(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and math.isclose(seconds % size, 0.0, abs_tol=1e-9):
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def decided_results(turn: OpenTurn) -> list[ev.ToolResult]:
    """The results that recorded rejections and deliveries still owe: each is
    written with its result in one write, but a torn write (power loss) or
    another writer may leave the decision alone. Acting on it answers the
    call: a rejection as declined (A1), a delivery whose content is lost as
    answered outside with what is not known (A4)."""
    out = []
    for awaiting in awaiting_of(turn):
        if awaiting.decision == Decision.REJECTED.value:
            out.append(
                rejected_result(awaiting.call_id, awaiting.name, by=awaiting.by, reason=None)
            )
        elif awaiting.decision == Decision.DELIVERED.value:
            out.append(lost_delivery_result(awaiting))
    return out


def expiry_events(
    turn: OpenTurn,
    *,
    next_seq: int,
    now: dt.datetime,
    ts: str,
    max_age_s: float | None = None,
    by: str = "turnlog",
    reports_owed: list[str] | None = None,
    because: str | None = None,
    keep_turn_open: bool = False,
) -> list[Event]:
    """The events that settle the turn's expired pauses (A2): for each, its
    `tool_decision` ("expired") and its result; then, when nothing in the
    turn waits or is owed any more, the open step's end and `turn_end
    {reason: "expired"}`. Empty when no pause has expired. With `because`,
    every undecided pause ends now, for that reason (the wait was dropped:
    a framework went on without a decision); with `keep_turn_open`, the
    turn is left to the run that goes on in it."""
    out: list[Event] = []
    seq = next_seq
    origin = Origin.EXPIRY.value
    settled = set()
    for awaiting in awaiting_of(turn):
        if awaiting.decision == Decision.EXPIRED.value:
            # Expired before, its result lost with a torn write: answer it now.
            answer = expired_result(awaiting, "the wait expired")
            out.append(Event(seq=seq, data=answer, ts=ts, origin=origin))
            seq += 1
            settled.add(awaiting.call_id)
            continue
        if because is not None and awaiting.decision == Decision.APPROVED.value:
            # Approved and never dispatched here, dropped by the run that went
            # on: its decision stands recorded; the answer says what is known.
            answer = expired_result(awaiting, because)
            out.append(Event(seq=seq, data=answer, ts=ts, origin=origin))
            seq += 1
            settled.add(awaiting.call_id)
            continue
        reason = expired(awaiting, now, max_age_s)
        if because is not None and awaiting.decision is None:
            reason = because
        if reason is None:
            continue
        decision = ev.ToolDecision(
            call_id=awaiting.call_id, decision=Decision.EXPIRED.value, by=by, reason=reason
        )
        out.append(Event(seq=seq, data=decision, ts=ts, origin=origin))
        out.append(Event(seq=seq + 1, data=expired_result(awaiting, reason), ts=ts, origin=origin))
        seq += 2
        settled.add(awaiting.call_id)
    if not out:
        return out
    left = [call for call in turn.calls if not call.answered and call.call_id not in settled]
    if left or keep_turn_open:
        return out
    if turn.open_step is not None:
        step = turn.open_step
        end = ev.StepEnd(turn=step.turn, step=step.step, outcome="paused")
        out.append(Event(seq=seq, data=end, ts=ts, origin=origin))
        seq += 1
    turn_end = ev.TurnEnd(
        reason=TurnEndReason.EXPIRED.value,
        turn=turn.turn,
        steps=turn.steps,
        reports_owed=reports_owed or None,
    )
    out.append(Event(seq=seq, data=turn_end, ts=ts, origin=origin))
    return out
