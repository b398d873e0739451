"""The `with` blocks of a writer handle: a turn, a step, a dispatch, each closed honestly.

They are plain classes rather than generator-based context managers, and
call the rules in `turnlog.handle.turns` and `turnlog.handle.dispatch`
directly rather than through `Log`'s halves: a reference turn enters five of them, and a
generator's set-up and teardown cost more than the appends' own checks.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from turnlog import events as ev
from turnlog.events import ToolCall
from turnlog.handle import turns
from turnlog.handle.dispatch import Dispatch, dispatch_payload, end_dispatch
from turnlog.handle.state import Turn

if TYPE_CHECKING:
    from turnlog.handle.state import HandleState


class TurnBlock:
    """`with log.turn():` — `turn_start` on entry, `turn_end` on exit; a block
    that raises has its owed calls answered and its turn ended `error`."""

    __slots__ = ("_held", "_resume", "_turn")

    def __init__(self, held: HandleState, resume: bool) -> None:
        self._held = held
        self._resume = resume
        self._turn: Turn | None = None

    def __enter__(self) -> Turn:
        self._turn = turns.begin_turn(self._held, resume=self._resume)
        return self._turn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        held = self._held
        try:
            if exc is not None:
                turns.fail_turn(held, exc)
            elif self._turn is not None:
                turns.end_turn(held, self._turn)
        finally:
            held.turn = None


class StepBlock:
    """`with log.step():` — `step_start` on entry, `step_end` on exit."""

    __slots__ = ("_held",)

    def __init__(self, held: HandleState) -> None:
        self._held = held

    def __enter__(self) -> int:
        return turns.begin_step(self._held)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            turns.unwind(self._held, exc, reason=None)
        else:
            turns.end_step(self._held)


class DispatchBlock:
    """`with log.dispatch(call):` — `tool_dispatch` on entry; a block that
    raises or records no result leaves the call answered outcome unknown."""

    __slots__ = ("_call", "_handle", "_held", "_payload")

    def __init__(self, held: HandleState, call: ToolCall, payload: ev.ToolDispatch) -> None:
        self._held = held
        self._call = call
        self._payload = payload
        self._handle: Dispatch | None = None

    def __enter__(self) -> Dispatch:
        self._handle = dispatch_payload(self._held, self._call, self._payload)
        return self._handle

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        handle = self._handle
        if handle is not None and not handle.answered:
            end_dispatch(self._held, handle, exc)
