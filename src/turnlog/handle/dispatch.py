"""Dispatch handles: a tool call made durable before it runs, and its answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from turnlog import events as ev
from turnlog.core.recovery import unwind_result
from turnlog.errors import UsageError, WriteOrderError
from turnlog.events import Content, Event, IdempotencyValue, Origin, ToolCall
from turnlog.handle.turns import describe_exception

# These are the handle's own rules, kept apart by concept: they read and
# change its private state under its lock, as its methods did.
if TYPE_CHECKING:
    from turnlog.handle.log import Log


class Dispatch:
    """A tool call whose dispatch is durable; record its outcome with `result`."""

    def __init__(self, log: Log, call: ToolCall, seq: int) -> None:
        self._log = log
        self.call = call
        # The dispatch event's seq: the id may be asked and dispatched again
        # in a later turn, and this handle answers only its own dispatch.
        self.seq = seq
        self.answered = False

    def result(self, content: Content, *, is_error: bool = False) -> Event[ev.ToolResult]:
        with self._log._lock:
            if self.answered:
                raise UsageError(f"call {self.call.id!r} already has a result")
            if self._log._fold.open_dispatch_seq(self.call.id) != self.seq:
                raise WriteOrderError(
                    f"this handle's dispatch of call {self.call.id!r} (seq {self.seq}) was "
                    "already closed; a later dispatch reuses the id",
                    hint="record a result through the handle of the dispatch that is running",
                )
            event = self._log.append(
                ev.ToolResult(
                    call_id=self.call.id, name=self.call.name, content=content, is_error=is_error
                )
            )
            self.answered = True
            return event


def begin_dispatch(
    log: Log, call: ToolCall, *, idempotency: IdempotencyValue | None, join: str | None
) -> Dispatch:
    """`Log.begin_dispatch`: refuse a call outside a turn, answered or running."""
    payload = ev.ToolDispatch(call_id=call.id, name=call.name, idempotency=idempotency, join=join)
    return dispatch_payload(log, call, payload)


def end_dispatch(log: Log, handle: Dispatch, exc: BaseException | None) -> None:
    """Answer the call as outcome unknown if the block left it unanswered."""
    if handle.answered:
        return
    if exc is not None:
        _unwind_call(log, handle, describe_exception(exc))
    else:
        _unwind_call(log, handle, "the tool block ended without recording a result")


def _unwind_call(log: Log, handle: Dispatch, error: str) -> None:
    call = handle.call
    with log._lock:
        if log._fold.open_dispatch_seq(call.id) != handle.seq:
            return  # answered meanwhile, or already closed by an unwinding turn
        result = unwind_result(call.id, call.name, dispatched=True, error=error)
        log.append(result, origin=Origin.UNWIND.value)


def begin_dispatch_with(log: Log, call: ToolCall, fields: Mapping[str, Any]) -> Dispatch:
    """`Log.begin_dispatch` with every field a dispatch may record (a
    deadline, a background spawn): durable before the tool body runs."""
    return dispatch_payload(log, call, ev.ToolDispatch(call_id=call.id, name=call.name, **fields))


def dispatch_payload(log: Log, call: ToolCall, payload: ev.ToolDispatch) -> Dispatch:
    """Append `payload`, the dispatch of `call`, and hand back its handle. Every
    dispatch of either loop comes through here, so a refused one reads alike.

    The append's write-order check decides; only a refusal pays for the
    question of which rule refused, so the hot path checks once.
    """
    try:
        dispatched = log.append(payload)
    except WriteOrderError:
        with log._lock:
            fold = log._fold
            if not fold.turn_open:
                raise UsageError(
                    "a dispatch must be inside a turn", hint="use `with log.turn():` first"
                ) from None
            if fold.is_answered(call.id):
                raise UsageError(
                    f"call {call.id!r} already has a result in this turn; "
                    "tool calls are never replayed"
                ) from None
            if fold.is_dispatched(call.id):
                raise UsageError(f"call {call.id!r} is already dispatched and running") from None
        raise
    return Dispatch(log, call, dispatched.seq)
