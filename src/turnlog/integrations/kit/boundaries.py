"""The turn and step boundaries a framework's hooks imply, written as the
reference loop writes them."""

from __future__ import annotations

from turnlog import events as ev
from turnlog.handle.log import Log
from turnlog.runtime.approvals import undecided

# Each runs under the handle's lock (the sync wrapper) or on its writer
# thread (`AsyncLog.call`), so a check and the append it leads to are one step.


def begin_turn_if_none(log: Log) -> None:
    """Open a turn unless one is open."""
    with log.lock:
        if not log.turn_open:
            log.append(log.next_turn_start())


def begin_step(log: Log, *, open_step: bool = True) -> None:
    """A model request is about to be made: a turn if none is open, the open
    step ended, the next one started (or only ensured, with `open_step=False`,
    for items recorded outside the hooks)."""
    with log.lock:
        begin_turn_if_none(log)
        turn = log.open_turn
        assert turn is not None
        if turn.open_step is not None:
            if not open_step:
                return
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.StepStart(turn=turn.turn, step=turn.steps + 1))


def end_step_paused(log: Log) -> None:
    """End the open step `paused` when a call of the turn waits undecided and
    none is owed: the step stopped on that pause."""
    with log.lock:
        turn = log.open_turn
        if turn is not None and turn.open_step is not None and not turn.owed and undecided(log):
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="paused"))


def end_turn(log: Log) -> bool:
    """The run answered: end the open step and the turn, unless calls are owed
    (then the turn is left for recovery to judge). True when it ended."""
    with log.lock:
        turn = log.open_turn
        if turn is None or turn.owed:
            return False
        if turn.open_step is not None:
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.TurnEnd(reason="complete", turn=turn.turn, steps=turn.steps))
        return True
