"""Forks: a new session that inherits a closed prefix of another, with lineage."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.errors import ForkBoundaryError, FormatError
from turnlog.events import Event
from turnlog.stores.base import Store


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
    if state.open_turn is not None:
        start = state.open_turn.seq
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


def fork_session(
    store: Store,
    session_id: str,
    at_seq: int,
    *,
    new_id: str | None = None,
    created_at: str | None = None,
) -> str:
    """Fork a stored session into a new one in the same store; returns its id.

    The source is read in full and must be sound: a damaged record anywhere
    refuses the fork (it is never re-checksummed into a clean-looking copy),
    and so does a torn tail the fork point would reach into.
    """
    scan = store.scan(session_id)
    if scan.refusal is not None:
        store.read(session_id)  # raises the store's own refusal, located
    events = scan.events
    if scan.torn is not None and at_seq >= len(events):
        raise FormatError(
            f"seq {at_seq} lies in the torn tail of session {session_id!r}",
            hint="run `turnlog recover` first, or fork at an earlier seq",
        )
    if new_id is None:
        n = 1
        while store.exists(f"{session_id}-fork-{n}"):
            n += 1
        new_id = f"{session_id}-fork-{n}"
    from turnlog.ops.transfer import write_events

    write_events(store, fork(events, at_seq, session_id=new_id, created_at=created_at))
    return new_id
