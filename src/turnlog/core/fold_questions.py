"""What the write-order rules ask of the open turn, answered from the fold's own record. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from turnlog.core.open_turn import MutableCall, MutableTurn


class OpenTurnQuestions:
    """The fold's answers about the open turn's calls, asked on every step
    and turn end (`turnlog.core.write_order`) without building a snapshot.
    `Fold` keeps `_turn`; these only read it."""

    _turn: MutableTurn | None

    def is_answered(self, call_id: str) -> bool:
        """True when the open turn asked for `call_id` and a result answered it."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return call is not None and call.answered

    def is_dispatched(self, call_id: str) -> bool:
        """True when the open turn dispatched `call_id` and no result answered it yet."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return call is not None and call.dispatch is not None and not call.answered

    def open_dispatch_seq(self, call_id: str) -> int | None:
        """The seq of the open turn's unanswered dispatch of `call_id`, if any."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        if call is None or call.answered:
            return None
        return call.dispatch_seq

    def is_requested(self, call_id: str) -> bool:
        """True when a message of the open turn asked for `call_id`, it is
        still in the live transcript, and no result answered it yet."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return (
            call is not None
            and not call.answered
            and call.request_seq is not None
            and not call.swallowed
        )

    def owed_requested_through(self, seq: int) -> list[str]:
        """Owed calls of the open turn asked for at or before `seq`: those a
        compaction through `seq` would leave without their request."""
        if self._turn is None:
            return []
        return [
            call_id
            for call_id, call in self._turn.calls.items()
            if not call.answered and call.request_seq is not None and call.request_seq <= seq
        ]

    # The write-order checks ask these on every step and turn end: plain
    # loops, since a comprehension's own frame costs more than a turn's few calls.

    def owed_in_open_turn(self) -> list[str]:
        """Unanswered calls of the open turn, without building a snapshot."""
        owed: list[str] = []
        if self._turn is not None:
            for call_id, call in self._turn.calls.items():
                if not call.answered:
                    owed.append(call_id)
        return owed

    def owed_names(self) -> dict[str, str | None]:
        """Unanswered calls of the open turn and their names, in order of first sighting."""
        owed: dict[str, str | None] = {}
        if self._turn is not None:
            for call_id, call in self._turn.calls.items():
                if not call.answered:
                    owed[call_id] = call.name
        return owed

    def owed_in_open_step(self) -> list[str]:
        """Unanswered calls requested in the open step, but those paused for a
        decision: a step may close while they wait."""
        owed: list[str] = []
        turn = self._turn
        if turn is not None and turn.open_step is not None:
            step_seq = turn.open_step.seq
            for call_id, call in turn.calls.items():
                if not call.answered and call.step_seq == step_seq and not call.waiting:
                    owed.append(call_id)
        return owed

    def waiting_call(self, call_id: str) -> MutableCall | None:
        """The open turn's call `call_id` while it waits on a decision, else None.
        Read only: the fold alone changes it."""
        call = self._turn.calls.get(call_id) if self._turn is not None else None
        return call if call is not None and call.waiting else None

    def waiting_calls(self) -> list[str]:
        """The open turn's calls paused for a decision and not yet acted on."""
        if self._turn is None:
            return []
        return [call_id for call_id, call in self._turn.calls.items() if call.waiting]

    @property
    def paused(self) -> bool:
        """The open turn's only unanswered calls wait on decisions (see `OpenTurn.paused`)."""
        turn = self._turn
        if turn is None:
            return False
        waiting = False
        for call in turn.calls.values():
            if call.answered:
                continue
            if not call.waiting:
                return False
            waiting = True
        return waiting or (turn.held and turn.open_step is None)

    def requested_among(self, call_ids: Iterable[str]) -> list[str]:
        """Those of `call_ids` that `is_requested` says are asked for and owed."""
        owed: list[str] = []
        if self._turn is not None:
            calls = self._turn.calls
            for call_id in call_ids:
                call = calls.get(call_id)
                if (
                    call is not None
                    and not call.answered
                    and call.request_seq is not None
                    and not call.swallowed
                ):
                    owed.append(call_id)
        return owed
