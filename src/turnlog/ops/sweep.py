"""Sweeping a store: each crashed session found, then repaired (and revived) under its lock."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from typing import Literal

import msgspec

from turnlog import events as ev
from turnlog.core.pauses import Awaiting, describe_pause, expired
from turnlog.core.revivable import DEFAULT_MAX_REVIVALS, already_told, check_max_revivals
from turnlog.core.verdict import Verdict
from turnlog.errors import SessionLockedError, TurnlogError, UsageError
from turnlog.handle.log import open_handle as open_log
from turnlog.handle.opening import MUST_EXIST
from turnlog.ops.inspection import inspect
from turnlog.ops.revival import revive as revive_log
from turnlog.ops.tree import wait_child
from turnlog.stores.base import Store, parent_session_id

#: What a sweeper did with a session (`Swept.action`).
SweepAction = Literal["recovered", "revived", "expired", "skipped", "failed"]


class Swept(msgspec.Struct, frozen=True, kw_only=True):
    """What one sweeper did with one session, and why."""

    session_id: str
    action: SweepAction
    reason: str
    appended: int = 0


def _age_s(last_ts: str | None, now: dt.datetime) -> float | None:
    if last_ts is None:
        return None
    try:
        stamp = dt.datetime.fromisoformat(last_ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (now - stamp).total_seconds()


def sweep(
    store: Store,
    *,
    older_than_s: float = 0.0,
    revive: bool = False,
    max_revivals: int | None = None,
    progress: Callable[[list[str]], Iterable[str]] | None = None,
    paused_max_age_s: float | None = None,
) -> list[Swept]:
    """Recover (and with `revive`, revive) every session with an open turn and
    no live writer whose last event is older than `older_than_s`.

    A paused session is never recovered or revived: it is left byte for byte
    as it is, and the result says what it waits for. Its undecided pauses
    past their `until` (or, with `paused_max_age_s`, paused longer than that)
    are settled as not run (A2), and its turn ends `expired` when nothing
    else waits.

    Safe to run from many processes at once. A first look at each session's
    tail, without the lock, picks the candidates; each is then decided again
    and repaired under its writer lock, from the tail the writer holds, so a
    session is repaired and revived once. A sweeper that finds a session
    locked (another sweeper, or its agent, holds it), already repaired or
    already revived skips it and says why; none of that is an error.
    """
    if not (isinstance(older_than_s, int | float) and 0 <= older_than_s < math.inf):
        # A NaN compares false with every age: the guard would let through a
        # session written a moment ago.
        raise UsageError(
            f"older_than_s must be a finite number of seconds >= 0, not {older_than_s!r}",
            hint="pass the age below which a session is left alone, such as 60",
        )
    if paused_max_age_s is not None and not (
        isinstance(paused_max_age_s, int | float) and 0 <= paused_max_age_s < math.inf
    ):
        raise UsageError(
            f"paused_max_age_s must be a finite number of seconds >= 0, not {paused_max_age_s!r}",
            hint="pass how long a pause may wait for its decision, such as 7 * 86400",
        )
    cap = DEFAULT_MAX_REVIVALS if max_revivals is None else check_max_revivals(max_revivals)
    now = dt.datetime.now(dt.UTC)
    candidates: Iterable[str] = store.sweep_candidates()
    if progress is not None:
        candidates = progress(list(candidates))
    out = []
    for session_id in candidates:
        found = inspect(store, session_id, max_revivals=cap)
        if found.status == "paused":
            out.append(_sweep_paused(store, session_id, found.awaiting, now, paused_max_age_s))
            continue
        if found.status != "interrupted":
            if found.status in ("running", "corrupt", "unreadable"):
                reason: str = found.status
                if found.problems:
                    reason += f": {found.problems[0].message}"
                out.append(Swept(session_id=session_id, action="skipped", reason=reason))
            continue
        owner = found.open_turn.engine_run if found.open_turn is not None else None
        if owner is not None:
            # The engine recovers its own runs (turnlog.at_most_once answers
            # the calls a crash cut short when the run meets them again).
            reason = f"owned by {owner.engine} run {owner.run_id}: the engine runs it again"
            out.append(Swept(session_id=session_id, action="skipped", reason=reason))
            continue
        young = _too_young(found.last_activity, now, older_than_s)
        if young is not None:
            out.append(Swept(session_id=session_id, action="skipped", reason=young))
            continue
        try:
            out.append(
                _sweep_locked(
                    store,
                    session_id,
                    now=now,
                    older_than_s=older_than_s,
                    revive=revive,
                    subagent=parent_session_id(session_id) is not None,
                    cap=cap,
                )
            )
        except SessionLockedError as exc:
            out.append(
                Swept(
                    session_id=session_id,
                    action="skipped",
                    reason=f"locked: another sweeper or its agent holds it ({exc.message})",
                )
            )
        except TurnlogError as exc:
            # The session was found crashed and could not be repaired: a
            # failure, which the command's exit status reports.
            out.append(Swept(session_id=session_id, action="failed", reason=exc.message))
    return out


def _sweep_paused(
    store: Store,
    session_id: str,
    awaiting: tuple[Awaiting, ...],
    now: dt.datetime,
    max_age_s: float | None,
) -> Swept:
    """Leave a paused session as it is, unless a pause of it expired."""
    if not any(expired(one, now, max_age_s) for one in awaiting):
        return Swept(session_id=session_id, action="skipped", reason=describe_pause(awaiting))
    try:
        with open_log(store, session_id, MUST_EXIST) as log:
            settled = log.expire(now=now, max_age_s=max_age_s)
            left = log.awaiting
    except SessionLockedError as exc:
        return Swept(
            session_id=session_id,
            action="skipped",
            reason=f"locked: another sweeper or its agent holds it ({exc.message})",
        )
    if not settled:
        return Swept(session_id=session_id, action="skipped", reason=describe_pause(left))
    calls = [event.data.call_id for event in settled if isinstance(event.data, ev.ToolDecision)]
    reason = f"expired: {', '.join(calls)} settled as not run (A2)"
    if left:
        reason += "; still " + describe_pause(left)
    return Swept(session_id=session_id, action="expired", reason=reason, appended=len(settled))


def _too_young(last_ts: str | None, now: dt.datetime, older_than_s: float) -> str | None:
    """Why a session is left alone for being too recent, or None."""
    age = _age_s(last_ts, now)
    if older_than_s and age is not None and age < older_than_s:
        return f"last event {age:.0f} s ago, younger than {older_than_s:g} s"
    return None


# How long after an awaited child last wrote a sweeper still leaves its
# parent to the tree's carry-on (which writes the child's answer to the
# parent once the child's loop is done). Past it, with no child running, the
# carry-on is taken for dead and the parent for crashed.
CARRY_ON_GRACE_S = 60.0


def _carry_on_alive(store: Store, session_id: str, found: Verdict, now: dt.datetime) -> bool:
    for wait in found.waits:
        child = wait_child(session_id, wait)
        if store.lock_holder(child) is not None:
            return True
        try:
            tail = store.read_tail(child) if store.exists(child) else None
        except TurnlogError:
            continue  # a child that cannot be read is no carry-on at work
        age = _age_s(tail.events[-1].ts if tail is not None and tail.events else None, now)
        if age is not None and age < CARRY_ON_GRACE_S:
            return True
    return False


def _sweep_locked(
    store: Store,
    session_id: str,
    *,
    now: dt.datetime,
    older_than_s: float,
    revive: bool,
    subagent: bool,
    cap: int,
) -> Swept:
    """Decide and repair one session under its writer lock.

    The look that picked the session was taken without the lock, so another
    sweeper may have repaired or revived it since (or its agent came back):
    what is decided here comes from the tail the writer read under the lock.
    """
    with open_log(store, session_id, MUST_EXIST) as log:
        found = log.verdict()
        if found.open_turn is None:
            if already_told(log.last_message(), None):
                reason = "already revived by another sweeper, not yet run on"
            else:
                reason = "already recovered by another sweeper"
            return Swept(session_id=session_id, action="skipped", reason=reason)
        if found.awaiting:
            # Paused: nothing repairs the pause. Calls a crash left owed beside
            # it are answered, as any crash's, and the pause stands.
            repaired = len(log.recover().events) if found.owed else 0
            return Swept(
                session_id=session_id,
                action="recovered" if repaired else "skipped",
                reason=describe_pause(log.awaiting),
                appended=repaired,
            )
        if not log.crashed and _carry_on_alive(store, session_id, found, now):
            # A tree revival left the turn open for its children's answers,
            # which its carry-on is writing: not a crash, nothing to repair.
            return Swept(
                session_id=session_id,
                action="skipped",
                reason="waiting on its subagents' answers (a tree revival left its turn open)",
            )
        young = _too_young(found.last_ts, now, older_than_s)
        if young is not None:
            return Swept(session_id=session_id, action="skipped", reason=young)
        if revive and not subagent:
            revived = revive_log(log, max_revivals=cap)
            if revived.reason == "revived":
                return Swept(
                    session_id=session_id,
                    action="revived",
                    reason=f"revival {revived.revival}",
                    appended=len(revived.appended),
                )
            if revived.revived:
                # Revived before and not run on since: told once is enough.
                appended = len(revived.appended)
                reason = "already revived, not yet run on"
            else:
                # Past the cap the run is not revived, but the crash is
                # still repaired.
                appended = len(log.recover().events)
                reason = revived.reason
            action: SweepAction = "recovered" if appended else "skipped"
            return Swept(session_id=session_id, action=action, reason=reason, appended=appended)
        repairs = log.recover()
        appended = len(repairs.events)
        if not appended:
            reason = "already recovered by another sweeper"
        elif revive:
            # A subagent is only recovered: reviving it alone would run it
            # for a parent that no longer waits (see revive_tree).
            reason = "a subagent: recovered, not revived alone (revive its root's tree)"
        else:
            reason = "interrupted"
        action = "recovered" if appended else "skipped"
        return Swept(session_id=session_id, action=action, reason=reason, appended=appended)
