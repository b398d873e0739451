"""At most once: a tool call inside a durable engine's step runs its body once, or says why not.

An engine (DBOS, Temporal, Prefect, a Celery-style retry) runs a step again
when the worker running it died: at least once. `at_most_once` turns that
into at most once, with the model told the truth. The call's dispatch is
durable before the body runs; when the step runs again and finds the
dispatch with no result, the body does not run, and the step returns the
call's R1 answer (`tool_outcome_unknown`, "it has NOT been retried"), which
the engine checkpoints as the step's value and the model reads. A call the
log has answered returns its recorded answer.

A body that raises is an ordinary result: its error is the call's answer,
returned, not raised. An engine that retries the step after an ordinary
exception gets the same answer back without the body running; the model,
reading it, decides whether to call the tool again (a new call).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.core.recovery import crashed_call_result
from turnlog.core.state import newest_answer
from turnlog.errors import UsageError
from turnlog.events import IdempotencyValue, Origin, ToolCall
from turnlog.handle.async_log import AsyncLog
from turnlog.handle.dispatch import Dispatch
from turnlog.handle.log import Log
from turnlog.runtime.turn_rules import tool_error_text
from turnlog.text import display_text

# Tools that may run again after a crash left their outcome unknown, when
# the call opts in with `rerun=True`.
_RERUNNABLE: Final = frozenset({ev.Idempotency.READ_ONLY.value, ev.Idempotency.IDEMPOTENT.value})


@dataclass(frozen=True)
class Answer:
    """What a guarded call answers: the text the model reads, and how it came.

    A plain dataclass of plain values, so an engine can checkpoint it as a
    step's output (DBOS pickles it, Temporal encodes it as JSON).
    """

    call_id: str
    content: str
    is_error: bool = False
    # The body ran in this execution of the step.
    ran: bool = False
    # Set on turnlog's own answer for a call a crash cut short: its risk,
    # who wrote it (`recovery`), and the rule (R1) when the answer is new.
    risk: str | None = None
    origin: str | None = None
    rule: str | None = None


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return msgspec.json.encode(output).decode()


def _check(call: ToolCall, idempotency: IdempotencyValue | None, rerun: bool) -> None:
    if rerun and idempotency not in _RERUNNABLE:
        raise UsageError(
            f"call {call.id!r} asks to run again after a crash, but its tool is "
            f"{idempotency or 'of unknown idempotency'}",
            hint="only a read_only or idempotent tool may run again (rerun=True); say so "
            "with idempotency='idempotent'",
        )


def _recorded(log: Log, call_id: str) -> Answer | None:
    """The answer the open turn holds for `call_id`: met ahead in a replay,
    or already folded. A call of an earlier turn with the same id is another
    call, and answers nothing here."""
    replay = log.held.replay
    if replay is not None:
        replay.flush_calls()
        ahead = replay.recorded_result(call_id)
        if ahead is not None:
            return _answer_of(ahead.data, ran=False, origin=ahead.origin)
    sighting = log.open_call(call_id)
    if sighting is None or not sighting.answered:
        return None
    message = newest_answer(log.messages, call_id)
    if message is None:
        return None  # answered out of the transcript (orphaned): the write order refuses
    return Answer(
        call_id=call_id,
        content=display_text(message.content),
        is_error=message.is_error,
        risk=message.risk,
        origin=message.origin,
    )


def _answer_of(result: ev.ToolResult, *, ran: bool, origin: str | None = None) -> Answer:
    return Answer(
        call_id=result.call_id,
        origin=origin,
        content=display_text(result.content),
        is_error=result.is_error,
        ran=ran,
        risk=result.risk,
        rule=result.rule,
    )


@dataclass(frozen=True)
class Start:
    """What the guard found before the body: the answer to hand back in
    place of running it, or the running dispatch to record the body's result on."""

    answer: Answer | None
    running: Dispatch | None = None
    rerun: bool = False


def begin_once(
    log: Log,
    call: ToolCall,
    idempotency: IdempotencyValue | None,
    rerun: bool = False,
    *,
    runs_here: bool = False,
) -> Start:
    """The guard's first half, for a framework that runs the body itself (a
    tool hook): an answer to hand back in place of running it, or none, with
    the dispatch durable: run the body and record its result. `runs_here`:
    the caller runs the body in this process and calls `end_once` after it,
    so a second guard of the call meanwhile is refused, not answered R1."""
    with log.lock:
        recorded = _recorded(log, call.id)
        if recorded is not None:
            return Start(recorded)
        if call.id in log.held.running_bodies:
            # Its dispatch has no result because the body runs now, here (in
            # another thread, or this one): no crash, so no R1 over it.
            raise UsageError(
                f"call {call.id!r} is already running under at_most_once in this process",
                hint="guard each call once: wait for the first to return, whose answer "
                "a later guard of the same call then hands back",
            )
        sighting = log.open_call(call.id)
        if sighting is not None and sighting.dispatch_seq is not None and not sighting.answered:
            # The dispatch is durable and nothing answered it: a worker died
            # inside the body, and the engine runs the step again.
            if rerun:
                if runs_here:
                    log.held.running_bodies.add(call.id)
                return Start(None, Dispatch(log.held, call, sighting.dispatch_seq), rerun=True)
            result = crashed_call_result(sighting)
            log.append(result, origin=Origin.RECOVERY.value)
            return Start(_answer_of(result, ran=False, origin=Origin.RECOVERY.value))
        running = log.begin_dispatch(call, idempotency=idempotency)
        if runs_here:
            log.held.running_bodies.add(call.id)
        return Start(None, running)


def end_once(log: Log, call_id: str) -> None:
    """The body `begin_once` let run has ended (returned, raised, or was cut off)."""
    with log.lock:
        log.held.running_bodies.discard(call_id)


def _finish(running: Dispatch, start: Start, output: Any, error: Exception | None) -> Answer:
    if error is not None:
        content, is_error = tool_error_text(error), True
    else:
        content, is_error = _text(output), False
    result = running.result(content, is_error=is_error, rerun=start.rerun)
    return _answer_of(result.data, ran=True)


def at_most_once(
    log: Log,
    call: ToolCall,
    body: Callable[[], Any],
    *,
    idempotency: IdempotencyValue | None = None,
    rerun: bool = False,
) -> Answer:
    """Run `body` for `call` at most once across every execution of the step.

    The first execution writes the call's dispatch (durable before the body,
    as every dispatch), runs `body` and records what it returned (or raised)
    as the call's result. An execution after a crash inside `body` does not
    run it: it records and returns R1. An execution after the result returns
    the recorded answer. `rerun=True` lets a `read_only` or `idempotent` tool
    run again after a crash instead; the result says so (`rerun`). Call it
    inside a turn, on a handle opened for the engine run
    (`turnlog.open(..., engine_run=...)`).
    """
    _check(call, idempotency, rerun)
    start = begin_once(log, call, idempotency, rerun, runs_here=True)
    if start.answer is not None:
        return start.answer
    running = start.running
    assert running is not None
    try:
        try:
            output = body()
        except Exception as exc:  # a failing tool is a result the model reads, not a crash
            return _finish(running, start, None, exc)
        except BaseException as exc:
            # Interrupted or cancelled inside the body: it may have run (U1).
            log.end_dispatch(running, exc)
            raise
        return _finish(running, start, output, None)
    finally:
        end_once(log, call.id)


async def aat_most_once(
    log: AsyncLog,
    call: ToolCall,
    body: Callable[[], Awaitable[Any]],
    *,
    idempotency: IdempotencyValue | None = None,
    rerun: bool = False,
) -> Answer:
    """`at_most_once` for asyncio: `body` is awaited, the writes run off the loop."""
    _check(call, idempotency, rerun)
    start = await log.call(begin_once, log.log, call, idempotency, rerun, runs_here=True)
    if start.answer is not None:
        return start.answer
    running = start.running
    assert running is not None
    try:
        try:
            output = await body()
        except Exception as exc:  # a failing tool is a result the model reads, not a crash
            return await log.call(_finish, running, start, None, exc)
        except BaseException as exc:
            # Synchronous: a cancelled task may not get to await.
            log.log.end_dispatch(running, exc)
            raise
        return await log.call(_finish, running, start, output, None)
    finally:
        end_once(log.log, call.id)
