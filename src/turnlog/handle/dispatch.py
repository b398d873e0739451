"""Dispatch handles: a tool call made durable before it runs, and its answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from turnlog import events as ev
from turnlog.core.recovery import unwind_result
from turnlog.errors import UsageError, WriteOrderError
from turnlog.events import Content, Event, IdempotencyValue, Origin, ToolCall
from turnlog.handle.turns import describe_exception

# These are the handle's own rules, kept apart by concept: they take the
# state a handle holds (`turnlog.handle.state`), never the handle.
if TYPE_CHECKING:
    from turnlog.handle.state import HandleState


class Dispatch:
    """A tool call whose dispatch is durable; record its outcome with `result`."""

    def __init__(self, held: HandleState, call: ToolCall, seq: int) -> None:
        self._held = held
        self.call = call
        # The dispatch event's seq: the id may be asked and dispatched again
        # in a later turn, and this handle answers only its own dispatch.
        self.seq = seq
        self.answered = False

    def result(
        self, content: Content, *, is_error: bool = False, rerun: bool = False
    ) -> Event[ev.ToolResult]:
        """Record the call's answer. `rerun`: the body ran again after a crash
        left this dispatch unanswered (an idempotent tool's opt-in)."""
        with self._held.lock:
            if self.answered:
                raise UsageError(f"call {self.call.id!r} already has a result")
            if self._held.fold.open_dispatch_seq(self.call.id) != self.seq:
                raise WriteOrderError(
                    f"this handle's dispatch of call {self.call.id!r} (seq {self.seq}) was "
                    "already closed; a later dispatch reuses the id",
                    hint="record a result through the handle of the dispatch that is running",
                )
            event = self._held.append(
                ev.ToolResult(
                    call_id=self.call.id,
                    name=self.call.name,
                    content=content,
                    is_error=is_error,
                    rerun=rerun,
                )
            )
            self.answered = True
            return event


_AT_MOST_ONCE_HINT = (
    "an engine runs a step again after a crash: run its tool call through "
    "turnlog.at_most_once, which answers it instead of running it twice"
)


def begin_dispatch(
    held: HandleState, call: ToolCall, *, idempotency: IdempotencyValue | None, join: str | None
) -> Dispatch:
    """`Log.begin_dispatch`: refuse a call outside a turn, answered or running."""
    payload = ev.ToolDispatch(call_id=call.id, name=call.name, idempotency=idempotency, join=join)
    return dispatch_payload(held, call, payload)


def end_dispatch(held: HandleState, handle: Dispatch, exc: BaseException | None) -> None:
    """Answer the call as outcome unknown if the block left it unanswered."""
    if handle.answered:
        return
    if exc is not None:
        _unwind_call(held, handle, describe_exception(exc))
    else:
        _unwind_call(held, handle, "the tool block ended without recording a result")


def _unwind_call(held: HandleState, handle: Dispatch, error: str) -> None:
    call = handle.call
    with held.lock:
        if held.fold.open_dispatch_seq(call.id) != handle.seq:
            return  # answered meanwhile, or already closed by an unwinding turn
        result = unwind_result(call.id, call.name, dispatched=True, error=error)
        held.append(result, origin=Origin.UNWIND.value)


def begin_dispatch_with(held: HandleState, call: ToolCall, fields: Mapping[str, Any]) -> Dispatch:
    """`Log.begin_dispatch` with every field a dispatch may record (a
    deadline, a background spawn): durable before the tool body runs."""
    return dispatch_payload(held, call, ev.ToolDispatch(call_id=call.id, name=call.name, **fields))


def dispatch_payload(held: HandleState, call: ToolCall, payload: ev.ToolDispatch) -> Dispatch:
    """Append `payload`, the dispatch of `call`, and hand back its handle. Every
    dispatch of either loop comes through here, so a refused one reads alike.

    The append's write-order check decides; only a refusal pays for the
    question of which rule refused, so the hot path checks once.
    """
    try:
        dispatched = held.append(payload)
    except WriteOrderError:
        # Under an engine run, a dispatch written again is a step run again.
        hint = _AT_MOST_ONCE_HINT if held.engine_run is not None else None
        with held.lock:
            fold = held.fold
            if not fold.turn_open:
                raise UsageError(
                    "a dispatch must be inside a turn", hint="use `with log.turn():` first"
                ) from None
            if fold.is_answered(call.id):
                raise UsageError(
                    f"call {call.id!r} already has a result in this turn; "
                    "tool calls are never replayed",
                    hint=hint,
                ) from None
            if fold.is_dispatched(call.id):
                raise UsageError(
                    f"call {call.id!r} is already dispatched and running", hint=hint
                ) from None
        raise
    if dispatched.data is not payload:
        # An engine run's replay met this dispatch in the log: the body ran
        # (or started) in an earlier execution and must not run again.
        raise UsageError(
            f"call {call.id!r} was dispatched by an earlier execution of this engine run",
            hint=_AT_MOST_ONCE_HINT,
        )
    return Dispatch(held, call, dispatched.seq)
