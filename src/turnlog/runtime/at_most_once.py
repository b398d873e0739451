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

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.core.open_turn import CallSighting
from turnlog.core.recovery import crashed_call_result, unwind_result
from turnlog.errors import UsageError
from turnlog.events import IdempotencyValue, Origin, ToolCall
from turnlog.handle.async_log import AsyncLog
from turnlog.handle.log import Log
from turnlog.handle.turns import describe_exception
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


def _sighting(log: Log, call_id: str) -> CallSighting | None:
    turn = log.open_turn
    if turn is None:
        return None
    for call in turn.calls:
        if call.call_id == call_id:
            return call
    return None


def _recorded(log: Log, call_id: str) -> Answer | None:
    """The answer the log holds for the newest request of `call_id`."""
    replay = log.held.replay
    if replay is not None:
        replay.flush_calls()
        ahead = replay.recorded_result(call_id)
        if ahead is not None:
            return _answer_of(ahead.data, ran=False, origin=ahead.origin)
    sighting = _sighting(log, call_id)
    if sighting is not None and not sighting.answered:
        return None
    for message in reversed(log.messages):
        if message.role == "tool" and message.call_id == call_id:
            return Answer(
                call_id=call_id,
                content=display_text(message.content),
                is_error=message.is_error,
                risk=message.risk,
                origin=message.origin,
            )
        if message.role == "assistant" and any(c.id == call_id for c in message.tool_calls):
            return None
    return None


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
    """What the guard found before the body: an answer, or leave to run."""

    answer: Answer | None
    rerun: bool = False


def begin_once(
    log: Log, call: ToolCall, idempotency: IdempotencyValue | None, rerun: bool = False
) -> Start:
    """The guard's first half, for a framework that runs the body itself (a
    tool hook): an answer to hand back in place of running it, or none, with
    the dispatch durable: run the body and record its result."""
    with log.lock:
        recorded = _recorded(log, call.id)
        if recorded is not None:
            return Start(recorded)
        sighting = _sighting(log, call.id)
        if sighting is not None and sighting.dispatch is not None and not sighting.answered:
            # The dispatch is durable and nothing answered it: a worker died
            # inside the body, and the engine runs the step again.
            if rerun:
                return Start(None, rerun=True)
            result = crashed_call_result(sighting)
            log.append(result, origin=Origin.RECOVERY.value)
            return Start(_answer_of(result, ran=False, origin=Origin.RECOVERY.value))
        log.append(
            ev.ToolDispatch(call_id=call.id, name=call.name, idempotency=idempotency), sync=True
        )
        return Start(None)


def _finish(log: Log, call: ToolCall, start: Start, output: Any, error: Exception | None) -> Answer:
    if error is not None:
        content, is_error = tool_error_text(error), True
    else:
        content, is_error = _text(output), False
    result = ev.ToolResult(
        call_id=call.id, name=call.name, content=content, is_error=is_error, rerun=start.rerun
    )
    log.append(result)
    return _answer_of(result, ran=True)


def _unwind(log: Log, call: ToolCall, exc: BaseException) -> None:
    """A cancellation or interrupt inside the body: the call may have run."""
    with log.lock:
        sighting = _sighting(log, call.id)
        if sighting is None or sighting.answered:
            return
        result = unwind_result(call.id, call.name, dispatched=True, error=describe_exception(exc))
        log.append(result, origin=Origin.UNWIND.value)


def at_most_once(
    log: Log,
    call: ToolCall,
    body: Callable[[], Any],
    *,
    idempotency: IdempotencyValue | None = None,
    rerun: bool = False,
) -> Answer:
    """Run `body` for `call` at most once across every execution of the step.

    The first execution writes the call's dispatch (durable), runs `body`
    and records what it returned (or raised) as the call's result. An
    execution after a crash inside `body` does not run it: it records and
    returns R1. An execution after the result returns the recorded answer.
    `rerun=True` lets a `read_only` or `idempotent` tool run again after a
    crash instead; the result says so (`rerun`). Call it inside a turn, on a
    handle opened for the engine run (`turnlog.open(..., engine_run=...)`).
    """
    _check(call, idempotency, rerun)
    start = begin_once(log, call, idempotency, rerun)
    if start.answer is not None:
        return start.answer
    try:
        output = body()
    except Exception as exc:  # a failing tool is a result the model reads, not a crash
        return _finish(log, call, start, None, exc)
    except BaseException as exc:
        _unwind(log, call, exc)
        raise
    return _finish(log, call, start, output, None)


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
    start = await log.call(begin_once, log.log, call, idempotency, rerun)
    if start.answer is not None:
        return start.answer
    try:
        output = await body()
    except Exception as exc:  # a failing tool is a result the model reads, not a crash
        return await log.call(_finish, log.log, call, start, None, exc)
    except BaseException as exc:
        # Synchronous: a cancelled task may not get to await.
        _unwind(log.log, call, exc)
        raise
    return await log.call(functools.partial(_finish, log.log, call, start, output, None))
