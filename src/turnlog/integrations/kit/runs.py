"""A framework's run on a session: repaired before it starts, refused inside an
unfinished or crashed turn, closed when it raises."""

from __future__ import annotations

import warnings

from turnlog.errors import SessionInterruptedError
from turnlog.handle.log import Log


def repair(log: Log, *, recover: bool = False, revive: bool = False) -> None:
    """Close a turn left open with nothing owed; recover or revive a crashed one
    when asked (see `acquire`)."""
    with log.lock:
        if not log.crashed and not revive:
            return
        if revive:
            # Also for a session recovered already (by `turnlog recover` or a
            # sweep) and not yet told: the model learns its process died, as
            # `turnlog revive` tells it. A healthy session is left as it is.
            from turnlog.ops.revival import refuse_engine_owned, revive as revive_log

            revived = revive_log(log)
            refuse_engine_owned(revived)
            capped = revived.reason in ("revival_cap", "revival_disabled")
            if not revived.revived and capped and log.crashed:
                # The cap exists to stop a crash loop; a handle that falls back
                # to recovery and runs on says so, or a loop goes unnoticed.
                warnings.warn(
                    f"session {log.session_id!r} is past its revival cap "
                    f"({revived.revival} revivals): recovered without a resume notice, "
                    "and the run goes on",
                    RevivalCapWarning,
                    stacklevel=4,
                )
        # Past the revival cap nothing is revived, and recovery still closes
        # the turn, as `turnlog.open(..., revive=True)` does.
        if log.crashed and (recover or revive or not log.owed_calls()):
            log.recover()


class RevivalCapWarning(UserWarning):
    """A handle opened with `revive=True` found the session past its revival
    cap: it was recovered (owed calls answered, no resume notice) and the run
    goes on. Turn the warning into an error to stop a crash loop there."""


def fail_run(log: Log, exc: BaseException) -> None:
    """The framework's run raised or was cancelled in this process: close the
    turn it left open as the reference loop does (`Log.fail_turn`): a
    dispatched call unanswered is outcome unknown (U1), an undispatched one
    did not start (U2), the turn ends `error` (or `cancelled`). The next run
    on the session starts clean."""
    with log.lock:
        if log.closed or log.crashed or not log.turn_open:
            return
        log.fail_turn(exc)


def refuse_unfinished(log: Log, *, how: str) -> None:
    """A run is starting while an earlier run of this process left its turn
    open (an exception no hook of the framework saw): its words would land
    inside that turn. Refused; `how` says how to close it."""
    with log.lock:
        if log.crashed or not log.turn_open:
            return
        owed = ", ".join(log.owed_calls()) or "none"
    raise SessionInterruptedError(
        f"session {log.session_id!r}: an earlier run in this process ended without ending "
        f"its turn (owed: {owed}); a new run would start inside that turn",
        hint=how,
    )


def refuse_interrupted(log: Log, *, how: str | None = None) -> None:
    """A framework run must not start inside a crashed turn: its owed calls
    would stay owed under the new run's messages. Recovery answers them first."""
    if not log.crashed:
        return
    owed = ", ".join(log.owed_calls())
    where = log.store.location(log.session_id) or log.session_id
    raise SessionInterruptedError(
        f"session {log.session_id!r} was interrupted mid-turn (owed: {owed}); "
        "a new run would start inside that turn",
        hint=(how + ", or " if how else "")
        + f"run `turnlog recover {where}` (or open it with recover=True / revive=True) "
        "first, then resume on the same session",
    )
