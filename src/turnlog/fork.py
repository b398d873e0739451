"""Forks: a new session that inherits a closed prefix of another, with lineage."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from turnlog import events as ev
from turnlog.errors import ForkBoundaryError, FormatError
from turnlog.events import Event
from turnlog.fold import Fold


def fork(
    events: Sequence[Event], at_seq: int, *, session_id: str, created_at: str | None = None
) -> list[Event]:
    """Events `0..at_seq` inclusive, with their seqs, under a new header.

    The new header names the parent and how many events were inherited
    (`parent.seed_length`) and its own `created_at` (fork is pure, so the
    caller passes the time; the parent's is not copied). A boundary inside an
    open turn is refused with the seq of that turn's `turn_start`: half a turn
    is never inherited.
    """
    if not events or not isinstance(events[0].data, ev.Session):
        raise FormatError("cannot fork a log without a session header")
    last = events[-1].seq
    if isinstance(at_seq, bool) or not isinstance(at_seq, int) or not 0 <= at_seq <= last:
        raise ForkBoundaryError(
            f"fork point {at_seq!r} is outside the log (seq 0 to {last})",
            hint=f"pick a seq between 0 and {last}",
        )
    prefix = events[: at_seq + 1]
    state = Fold(prefix).state
    if state.open_turns:
        start = state.open_turns[0].seq
        raise ForkBoundaryError(
            f"fork point {at_seq} is inside the turn that starts at seq {start}",
            hint=f"fork at seq {start - 1} (before the turn) or after its turn_end"
            + ("; recover the session first if it crashed" if len(prefix) == len(events) else ""),
        )
    parent_header = events[0].data
    assert isinstance(parent_header, ev.Session)
    header = msgspec.structs.replace(
        parent_header,
        session_id=session_id,
        created_at=created_at,
        parent=ev.Parent(session_id=parent_header.session_id, seed_length=at_seq + 1),
    )
    return [msgspec.structs.replace(events[0], data=header), *prefix[1:]]
