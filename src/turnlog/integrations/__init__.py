"""turnlog under agent frameworks: one module per framework, imported only when used."""

from __future__ import annotations

from turnlog import events as ev
from turnlog.errors import SessionInterruptedError
from turnlog.log import Log


def refuse_interrupted(log: Log) -> None:
    """A framework run must not start inside a crashed turn: its owed calls
    would stay owed under the new run's messages. Recovery answers them first.

    A turn left open with nothing owed (a run that stopped between steps, or
    a LangGraph run whose `finish` was not called) claims nothing about any
    call: it is closed here as `interrupted`, as recovery would close it.
    """
    found = log.verdict()
    if found.open_turn is not None and not found.owed:
        log.recover()
    elif found.open_turn is not None:
        owed = ", ".join(call.call_id for call in found.owed)
        raise SessionInterruptedError(
            f"session {log.session_id!r} was interrupted mid-turn (owed: {owed}); "
            "a new run would start inside that turn",
            hint=f"run `turnlog recover {log.store.location(log.session_id) or log.session_id}` "
            "(or turnlog.recover / turnlog.revive) first, then resume on the same session",
        )


# The turn and step boundaries a framework's hooks imply, written the way the
# reference loop writes them. Each runs under the handle's lock (the sync
# wrapper) or on its writer thread (`AsyncLog.call`), so a check and the
# append it leads to are one step.


def begin_step(log: Log, *, open_step: bool = True) -> None:
    """A model request is about to be made: a turn if none is open, the open
    step ended, the next one started (or only ensured, with `open_step=False`,
    for items recorded outside the hooks)."""
    with log.lock:
        if log.verdict().open_turn is None:
            log.append(log.next_turn_start())
        turn = log.verdict().open_turn
        assert turn is not None
        if turn.open_step is not None:
            if not open_step:
                return
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.StepStart(turn=turn.turn, step=turn.steps + 1))


def end_turn(log: Log) -> bool:
    """The run answered: end the open step and the turn, unless calls are owed
    (then the turn is left for recovery to judge). True when it ended."""
    with log.lock:
        found = log.verdict()
        turn = found.open_turn
        if turn is None or found.owed:
            return False
        if turn.open_step is not None:
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.TurnEnd(reason="complete", turn=turn.turn, steps=turn.steps))
        return True
