"""Replay: an engine run executed again after a crash finds its earlier writes in the log.

A durable-execution engine (DBOS, Temporal, Prefect) recovers a workflow by
running it again from the top, with the outputs of its finished steps read
back from the engine's own record. Every turnlog write the workflow makes
before the crash point is made again. `Replay` holds the events the run
wrote in its earlier executions and answers each write with the event
already stored, so the log after a crash and a recovery is the log of one
run; a write the log does not hold at that point raises
`ReplayDivergedError`, and nothing is written.

Tool-call events (dispatches and results) are matched by their call id, not
by position: a step the engine finished is not run again, so its writes are
not made again, and calls that ran side by side may finish in another order.
They are applied in the order the log holds them, as soon as they reach the
front; everything else is matched in order, type, content and origin.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import NoReturn

from turnlog import events as ev
from turnlog.errors import ReplayDivergedError
from turnlog.events import Event, EventData

Apply = Callable[[Event], None]

_CALL_EVENTS = (ev.ToolDispatch, ev.ToolResult)


def _is_call_event(data: EventData) -> bool:
    return isinstance(data, _CALL_EVENTS)


def _describe(data: EventData, origin: str | None) -> str:
    what = data.TYPE
    call_id = getattr(data, "call_id", None)
    if call_id is not None:
        what += f" of call {call_id!r}"
    return what + (f" ({origin})" if origin else "")


class Replay:
    """The events an engine run wrote before this execution, not yet met again."""

    __slots__ = ("_applied_ahead", "_apply", "_pending")

    def __init__(self, pending: Sequence[Event], apply: Apply) -> None:
        self._pending: deque[Event] = deque(pending)
        # Feeds the handle's fold: it stands where the run stands in its replay.
        self._apply = apply
        # Call events applied as they reached the front, by type and call id:
        # a batch made again (a decision, then the result it writes) meets
        # its result here, applied when the decision before it was met.
        self._applied_ahead: dict[tuple[type, str], Event] = {}
        self.flush_calls()

    @property
    def done(self) -> bool:
        """Every earlier write has been met: what comes next is new."""
        return not self._pending

    def flush_calls(self) -> None:
        """Apply the tool-call events at the front: they wait for no write."""
        pending = self._pending
        while pending and _is_call_event(pending[0].data):
            event = pending.popleft()
            self._apply(event)
            self._applied_ahead[(type(event.data), getattr(event.data, "call_id", ""))] = event

    def match(self, data: EventData, origin: str | None) -> Event | None:
        """The stored event this write is made again as, or None once the
        replay is done (the write is then new)."""
        pending = self._pending
        if _is_call_event(data):
            key = (type(data), getattr(data, "call_id", ""))
            ahead = self._applied_ahead.get(key)
            # Met only as it was written: a new write for the call (a rerun's
            # dispatch, say) is not the stored one.
            if ahead is not None and ahead.data == data:
                return self._applied_ahead.pop(key)
            if not pending:
                return None
            # Looked up before the flush, which would apply (and drop) it.
            found = self._call_event(*key)
            self.flush_calls()
            if found is not None:
                self._applied_ahead.pop(key, None)
            elif pending:
                self._diverged(data, origin)
            return found
        if not pending:
            return None
        self.flush_calls()
        if not pending:
            return None
        expected = pending[0]
        if (
            type(expected.data) is not type(data)
            or expected.data != data
            or expected.origin != origin
        ):
            self._diverged(data, origin)
        self._apply(pending.popleft())
        self.flush_calls()
        return expected

    def recorded_result(self, call_id: str) -> Event[ev.ToolResult] | None:
        """The result of `call_id` still ahead in the replay (a step the engine
        finished writes nothing again, so its result is read, not met)."""
        found = self._call_event(ev.ToolResult, call_id)
        return found  # type: ignore[return-value]

    def _call_event(self, kind: type, call_id: str) -> Event | None:
        for event in self._pending:
            data = event.data
            if type(data) is kind and getattr(data, "call_id", None) == call_id:
                return event
        return None

    def _diverged(self, data: EventData, origin: str | None) -> NoReturn:
        expected = self._pending[0]
        raise ReplayDivergedError(
            f"this engine run, run again, wrote {_describe(data, origin)} where its earlier "
            f"execution wrote {_describe(expected.data, expected.origin)} (seq {expected.seq})"
        )
