"""Revive a crashed run as itself: recover, mark the revival, tell the model."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Final, Literal

import msgspec

from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.core.notices import NoticeStyle, framed
from turnlog.core.pauses import describe_pause, how_to_decide
from turnlog.core.recovery import Plan
from turnlog.core.revivable import (
    DEFAULT_MAX_REVIVALS,
    Refusal,
    already_told,
    check_max_revivals,
    refusal,
)
from turnlog.core.verdict import Wait
from turnlog.errors import (
    CorruptLogError,
    FormatError,
    SessionHeldHereError,
    SessionInterruptedError,
    SessionLockedError,
    SessionNotFoundError,
    StoreIOError,
    TurnlogError,
    UnreadableRecordError,
    UsageError,
)
from turnlog.events import Origin
from turnlog.handle.log import Log, open_handle as open_log
from turnlog.handle.opening import MUST_EXIST
from turnlog.stores import Store

# The notice's body; the model reads it inside the notification frame
# (`turnlog.notices`), the same frame as background deliveries.
REVIVAL_BODY: Final = (
    "The previous process running this conversation ended in the middle of its "
    "work (revival {revival}). Everything above is your own conversation so far. Tool "
    "calls that were in flight have results saying what is known about them: a call "
    "marked as not started did not run; a call whose outcome is unknown may have run, so "
    "check the state it was changing before you retry it. Work that was unfinished is "
    "still unfinished: carry on from where you stopped."
)
#: The revival notice as written with the default frame.
REVIVAL_NOTICE: Final = framed("revival", REVIVAL_BODY)

#: `Revival.reason`: revived now, revived before and not run on since, or
#: why not (`revivable.Refusal`).
RevivalReason = Literal["revived", "already_revived", Refusal, "running", "corrupt", "unreadable"]


class Revival(msgspec.Struct, frozen=True, kw_only=True):
    """What a loop needs to carry on as the same agent, or why it may not.

    `revived` says the session is ready for its loop: this call revived it
    (`reason` "revived"), or an earlier one did and nothing ran on it since
    (`reason` "already_revived", nothing told again, the cap not spent).
    `appended` is every event this call wrote, in order: the recovery results,
    `step_end` and `turn_end` (also in `repairs`), then `run_revived` and the
    notice. `pending` lists the waits on subagents left open for a tree
    revival to answer; while it is not empty the turn stays open and the loop
    resumes it (`run_turn(..., resume=True)`) once they are answered. `hint`
    says what to run when the session was not revived but is still interrupted.
    """

    revived: bool
    reason: RevivalReason
    revival: int
    repairs: Plan | None = None
    appended: tuple[ev.Event, ...] = ()
    messages: tuple[Message, ...] = ()
    agent: ev.Agent | None = None
    session_id: str | None = None
    pending: tuple[Wait, ...] = ()
    hint: str | None = None


_CAP_HINT = (
    "the session is still interrupted; close it with `turnlog recover {session}` (which "
    "answers the owed calls without reviving), or raise max_revivals"
)


def revive(
    log: Log | str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    max_revivals: int = DEFAULT_MAX_REVIVALS,
    pending: Collection[str] = (),
    style: NoticeStyle | None = None,
) -> Revival:
    """Recover, then record the revival and tell the model what happened.

    The cap is counted from the log, so it survives the process; past it,
    or for a finished session, nothing is written. Tool calls are never
    replayed: the owed ones get their recovery results and the model decides.
    `pending` (used by `revive_tree`) names waits on subagents being revived:
    they stay open for the children's results. `style` words the notice's
    frame (`turnlog.notices.NoticeStyle`).

    A session already revived and not run on since (`triage.already_told`) is
    not told again and spends no revival: the result says "already_revived".
    Only calls it still owes that `pending` does not keep open (a tree
    revival's waits, when the session is now revived alone) are answered, as
    recovery answers them.

    Decided and written under the handle's lock: threads sharing the handle
    revive it once. Given a session as `turnlog.open` takes it (a path, or a
    store and id) instead of a handle, it opens the session, revives it and
    closes it; a loop then opens it again to carry on.
    """
    if not isinstance(log, Log):
        try:
            opened = open_log(log, session_id, MUST_EXIST)
        except TurnlogError as exc:
            # The session's own state is reported, as `inspect` reports it;
            # only impossible arguments raise.
            return _not_opened(exc, session_id)
        with opened:
            return revive(opened, max_revivals=max_revivals, pending=pending, style=style)
    if session_id is not None and session_id != log.session_id:
        raise UsageError(
            f"revive was given the handle of session {log.session_id!r} and the id {session_id!r}",
            hint="pass the handle alone, or a store and the id of the session to revive",
        )
    with log.lock:
        return _revive(log, max_revivals=max_revivals, pending=pending, style=style)


def _not_opened(exc: TurnlogError, session_id: str | None) -> Revival:
    """The answer for a session that could not be opened to revive: running
    in another process, corrupt, or unreadable (missing, not a session)."""
    reason: RevivalReason
    if isinstance(exc, SessionLockedError) and not isinstance(exc, SessionHeldHereError):
        reason = "running"
    elif isinstance(exc, (CorruptLogError, UnreadableRecordError)):
        # As `inspect` says it: a record past the header it cannot read.
        reason = "corrupt"
    elif isinstance(exc, (SessionNotFoundError, FormatError, StoreIOError)):
        reason = "unreadable"
    else:
        raise exc
    if isinstance(exc, SessionNotFoundError):
        hint = f"{exc.message}: nothing to revive; check the path or the id (`turnlog ls`)"
    else:
        hint = f"{exc.message}; {exc.hint}" if exc.hint else exc.message
    return Revival(revived=False, reason=reason, revival=0, session_id=session_id, hint=hint)


def _revive(
    log: Log, *, max_revivals: int, pending: Collection[str], style: NoticeStyle | None
) -> Revival:
    check_max_revivals(max_revivals)
    found = log.verdict()
    header = found.session
    agent = header.agent if header is not None else None
    told = already_told(log.last_message(), found.open_turn)
    reason = refusal(found, max_revivals, told=told)
    if reason == "finished" and found.open_turn is not None:
        # It gave its answer and died before ending the turn: the turn is
        # closed, and nothing is revived, since nothing is left to run.
        repairs = log.recover(pending=())
        return Revival(
            revived=False,
            reason=reason,
            revival=found.revivals,
            repairs=repairs,
            appended=repairs.events,
            messages=log.messages,
            agent=agent,
            session_id=log.session_id,
        )
    if reason == "paused":
        # Calls a crash left owed beside the pause are answered (a crash is
        # a crash); the pause stands, and nothing is revived or told.
        answered = log.recover(pending=()) if found.owed else None
        return Revival(
            revived=False,
            reason=reason,
            revival=found.revivals,
            repairs=answered,
            appended=answered.events if answered is not None else (),
            agent=agent,
            session_id=log.session_id,
            hint=describe_pause(found.awaiting) + "; " + how_to_decide(found.awaiting),
        )
    if reason is not None:
        hint = None
        if found.open_turn is not None and reason in ("revival_cap", "revival_disabled"):
            hint = _CAP_HINT.format(session=log.store.location(log.session_id) or log.session_id)
        if reason == "engine_run" and found.open_turn is not None:
            owner = found.open_turn.engine_run
            assert owner is not None
            hint = (
                f"the turn belongs to {owner.engine} run {owner.run_id}, which the engine "
                "runs again; if the engine has given it up, `turnlog recover` closes the turn"
            )
        return Revival(
            revived=False,
            reason=reason,
            revival=found.revivals,
            agent=agent,
            session_id=log.session_id,
            hint=hint,
        )
    waits = {wait.call_id: wait for wait in found.waits}
    unknown = [call_id for call_id in pending if call_id not in waits]
    if unknown:
        raise UsageError(
            f"calls {', '.join(unknown)} are not owed waits on subagents",
            hint="only a call whose dispatch joins a subagent can stay pending",
        )
    repairs = log.recover(pending=pending)
    if told:
        return Revival(
            revived=True,
            reason="already_revived",
            revival=found.revivals,
            repairs=repairs,
            appended=repairs.events,
            messages=log.messages,
            agent=agent,
            session_id=log.session_id,
            pending=tuple(waits[call_id] for call_id in pending),
        )
    number = found.revivals + 1
    marked = log.append_many(
        [
            ev.RunRevived(revival=number, agent_id=agent.id if agent else None),
            ev.UserMessage(
                content=framed("revival", REVIVAL_BODY, style).format(revival=number),
                injected="revival",
                render_as=style.render_as if style is not None else None,
            ),
        ],
        origin=Origin.REVIVAL.value,
        sync=True,
    )
    return Revival(
        revived=True,
        reason="revived",
        revival=number,
        repairs=repairs,
        appended=(*repairs.events, *marked),
        messages=log.messages,
        agent=agent,
        session_id=log.session_id,
        pending=tuple(waits[call_id] for call_id in pending),
    )


def refuse_engine_owned(revived: Revival) -> None:
    """Raise for a revival refused because a durable engine owns the turn: an
    opener asking to revive must not fall back to closing the engine's turn."""
    if revived.reason == "engine_run":
        raise SessionInterruptedError(
            f"session {revived.session_id!r} crashed inside a turn a durable engine owns",
            hint=revived.hint,
        )
