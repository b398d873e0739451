"""Turns and steps of a writer: begin and end them, and close honestly what a raising block left."""

from __future__ import annotations

import sys

from turnlog import events as ev
from turnlog.core.clock import utc_now
from turnlog.core.recovery import unwind_events
from turnlog.errors import TurnlogError, UsageError, WriteOrderError
from turnlog.events import TurnEndReason

# These are the handle's own rules, kept apart by concept: they take the
# state a handle holds (`turnlog.handle.state`), never the handle.
from turnlog.handle.state import HandleState, Turn


def is_cancellation(exc: BaseException) -> bool:
    """Ctrl-C, a closed generator, or an asyncio cancellation. asyncio is looked
    up, not imported: a program that never imported it cannot be cancelled by
    it, and importing it costs every command-line call a twentieth of a second."""
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return True
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def begin_turn(held: HandleState, *, resume: bool = False) -> Turn:
    with held.lock:
        if resume:
            turn = _adopt_turn(held)
        else:
            if held.fold.turn_open and held.crashed and held.replay is None:
                raise held.crashed_refusal()
            if held.fold.turn_open:
                raise UsageError(
                    "a turn is already open; turns never nest",
                    hint="end the open turn first, or recover the session if it crashed",
                )
            # Cheap accessors, not `state`: a snapshot copies the whole transcript.
            start = held.next_turn_start()
            held.append(start)
            turn = Turn(start.turn or 0)
        held.turn = turn
        return turn


def fail_turn(held: HandleState, exc: BaseException) -> None:
    reason = TurnEndReason.CANCELLED if is_cancellation(exc) else TurnEndReason.ERROR
    held.turn = None
    unwind(held, exc, reason=reason.value)


def end_turn(held: HandleState, turn: Turn) -> None:
    with held.lock:
        held.turn = None
        fold = held.fold
        if fold.waiting_calls():
            # The turn stopped on purpose: it stays open for its decisions,
            # with its step closed, and is resumed with `turn(resume=True)`.
            if fold.step_open:
                held.append(ev.StepEnd(turn=turn.number, step=turn.steps, outcome="paused"))
            return
        unanswered = fold.owed_in_open_turn()
        if unanswered:
            error = WriteOrderError(
                f"turn {turn.number} ended with calls still unanswered: {', '.join(unanswered)}",
                hint="dispatch every call the turn requested and record its result",
            )
            unwind(held, error, reason=TurnEndReason.ERROR.value)
            raise error
        if held.fold.step_open:
            held.append(ev.StepEnd(turn=turn.number, step=turn.steps, outcome="ok"))
        owed = held.fold.reports_owed()
        held.append(
            ev.TurnEnd(
                reason=turn.reason,
                turn=turn.number,
                steps=turn.steps,
                reports_owed=owed if owed else None,
            )
        )


def _adopt_turn(held: HandleState) -> Turn:
    fold = held.fold
    open_turn = fold.open_turn
    if open_turn is None:
        raise UsageError("no open turn to resume", hint="start a turn with `with log.turn():`")
    # Paused calls may still wait: resuming acts on their decisions.
    owed = [call.call_id for call in open_turn.owed]
    if owed:
        raise WriteOrderError(
            f"the open turn still owes results for {', '.join(owed)}",
            hint="answer the waits a tree revival left pending before resuming the turn",
        )
    number = open_turn.turn if open_turn.turn is not None else fold.last_turn_number
    turn = Turn(number)
    turn.steps = open_turn.steps
    step = open_turn.open_step
    if step is not None:
        held.append(ev.StepEnd(turn=step.turn, step=step.step, outcome="ok"))
    return turn


def begin_step(held: HandleState) -> int:
    turn = held.turn
    if turn is None:
        raise UsageError("a step must be inside a turn", hint="use `with log.turn():` first")
    with held.lock:
        try:
            held.append(ev.StepStart(turn=turn.number, step=turn.steps + 1))
        except WriteOrderError as error:
            # The append's check refused; say it in the words of a step block.
            if not held.fold.turn_open:
                raise UsageError(
                    "a step must be inside a turn", hint="use `with log.turn():` first"
                ) from None
            if held.fold.step_open:
                raise UsageError("a step is already open; steps never nest") from None
            raise error
        turn.steps += 1
        return turn.steps


def end_step(held: HandleState) -> None:
    turn = held.turn
    if turn is None:
        raise UsageError(
            "no step of this handle's turn is open",
            hint="end a step begun with `log.begin_step()` inside `log.turn()`; a "
            "step_start appended by hand is ended with `held.append(StepEnd(...))`",
        )
    try:
        # A step whose calls wait on decisions ends paused, not done.
        outcome = "paused" if held.fold.waiting_calls() else "ok"
        held.append(ev.StepEnd(turn=turn.number, step=turn.steps, outcome=outcome))
    except WriteOrderError:
        # The append's check refused; say it in the words of a step block.
        with held.lock:
            owed = held.fold.owed_in_open_step()
        if not owed:
            raise
        # A normal step_end would say nothing was in flight, and recovery
        # would then call these calls "not started" (R3) even if the
        # program runs them after the block. Refuse, and let the turn
        # close them as outcome unknown.
        raise WriteOrderError(
            f"step {turn.steps} of turn {turn.number} ended with calls unanswered: "
            f"{', '.join(owed)}",
            hint="run each requested call inside `with log.dispatch(call)` and record "
            "its result before the step ends",
        ) from None


def unwind(held: HandleState, exc: BaseException, *, reason: str | None) -> None:
    """Close what a raising block left open: answer its owed calls, end its
    step, and end its turn with `reason` (None: the step only)."""
    with held.lock:
        writer = held.writer
        if writer is None:
            return
        repairs = unwind_events(
            held.fold,
            reason=reason,
            error=describe_exception(exc),
            order_kept=not isinstance(exc, WriteOrderError),
            ts=utc_now(),
        )
        if not repairs:
            return
        try:
            held.write(writer, repairs, None)
        except TurnlogError as write_error:
            # The original exception is what the caller must see; the log is
            # left open and a later recovery closes it.
            exc.add_note(f"turnlog could not close the turn: {write_error}")
