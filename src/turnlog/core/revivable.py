"""Whether a session may be revived: the pure rule inspect, revive and revive_tree share."""

from __future__ import annotations

from typing import Final, Literal

from turnlog.core.fold import Fold, Message, OpenTurn
from turnlog.core.verdict import Verdict, decide
from turnlog.errors import UsageError

DEFAULT_MAX_REVIVALS: Final = 3

#: Why a session may not be revived (`refusal`).
Refusal = Literal["empty", "finished", "paused", "engine_run", "revival_disabled", "revival_cap"]


def check_max_revivals(value: object) -> int:
    """The revival cap, checked once for every entry point: a whole number
    >= 0. A float NaN compares false with every count and would turn the cap
    off; a string would fail deep inside with a bare `TypeError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"max_revivals must be a whole number >= 0, not {value!r}",
            hint="pass the most revivals a session may have, such as 3; 0 turns revival off",
        )
    return value


def already_told(last: Message | None, turn: OpenTurn | None) -> bool:
    """True when the session was revived and has not been run on since.

    That is: the newest message of the transcript is the revival notice (a
    `user_message` with `injected: "revival"`), and no turn or step started
    after it (no open turn, or one that, with its open step, began before the
    notice: a tree revival keeps a parent's turn open for its children). Both
    are exact from a tail fold (`Fold.last_message()`, `Fold.open_turn`). A
    loop that runs on writes a `turn_start` (or, resuming a turn, a
    `step_start`) before the model speaks, so a session it crashed again is
    not mistaken for one still waiting; results answering the waits the
    revival left pending come after the notice but are placed before it in
    the transcript, so they do not count as running on.
    """
    if last is None or last.role != "user" or last.injected != "revival":
        return False
    if turn is None:
        return True
    if turn.seq > last.seq:
        return False
    return turn.open_step is None or turn.open_step.seq < last.seq


def awaiting_children(fold: Fold) -> bool:
    """True when the open turn was left open on purpose by a tree revival:
    the session was revived and not run on since (`already_told`), and
    every call its turn still owes is a wait on a subagent, to be answered by
    that child under its call id. Such a turn is not a crash: its process
    may carry on in another process than the one that revived it."""
    turn = fold.open_turn
    if turn is None or not already_told(fold.last_message(), turn):
        return False
    found = decide(fold)
    waits = {wait.call_id for wait in found.waits}
    return bool(found.owed) and all(call.call_id in waits for call in found.owed)


def refusal(found: Verdict, max_revivals: int, *, told: bool = False) -> Refusal | None:
    """Why a session may not be revived, or None: the one rule `inspect`,
    `revive` and `revive_tree` share.

    `told` (see `already_told`) lifts the cap: a session already revived and
    not yet run on spends nothing more, it is only carried on.
    """
    if found.empty:
        return "empty"
    if found.awaiting:
        # A paused run waits for decisions; it did not crash. Reviving it
        # would tell the model a lie and spend the cap on a pause.
        return "paused"
    if found.open_turn is not None and found.open_turn.engine_run is not None:
        # A durable engine owns the turn and runs it again itself: a revival
        # by turnlog would be a second run of the same work.
        return "engine_run"
    if found.finished:
        return "finished"
    if max_revivals == 0:
        return "revival_disabled"
    if found.revivals >= max_revivals and not told:
        return "revival_cap"
    return None
