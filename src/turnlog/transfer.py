"""Moving sessions between stores, event for event, each written whole or not at all."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from turnlog.errors import SessionExistsError, SessionLockedError, TurnlogError
from turnlog.events import Event, encode_event
from turnlog.stores.base import WRITE_BATCH_EVENTS, Store

# Events go to the destination in batches this size (see the stores).
COPY_BATCH_EVENTS = WRITE_BATCH_EVENTS


def _ignore(event: Event) -> None:
    pass


def write_events(dest: Store, events: Iterable[Event]) -> int:
    """Write a whole session of prebuilt events into a store as they are: the
    same seq, ts, origin and content (for copy, fork and importers). The first
    must be the `session` header; the session must not exist. Returns the count.

    Nothing is checked or stamped here beyond what every store checks on
    append (contiguous seqs, the limits), so what went in is what comes out.
    Atomic per session (`Store.write_session`): a write that fails half way
    leaves no session behind, and the retry succeeds.
    """
    return dest.write_session(events)


class Copied(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    events: int


def copy_session(source: Store, session_id: str, dest: Store) -> Copied:
    """Copy one session into another store: the same events with the same seq,
    ts, origin and content. Refuses to overwrite, refuses a damaged source
    (the store's read raises), and reads the copy back to check it."""
    holder = source.lock_holder(session_id)
    if holder is not None:
        # Its writer is appending: a copy now could end mid-turn and pass
        # for a crashed session in the destination.
        raise SessionLockedError(
            f"session {session_id!r} in {source.url} is being written by {holder.describe()}",
            hint="copy it once its writer has closed the session",
        )
    if dest.exists(session_id):
        raise SessionExistsError(
            f"session {session_id!r} already exists in {dest.url}",
            hint="copy never overwrites; remove it there first, or copy another session",
        )
    # Check the whole source first (streamed, nothing kept): a damaged source
    # is refused before the destination holds a single event of it.
    if source.scan(session_id, on_event=_ignore).refusal is not None:
        source.read(session_id)  # raises the store's own refusal, located
    count = write_events(dest, source.iter_events(session_id))
    # The copy reads back record for record as the source holds it.
    pairs = zip(source.iter_events(session_id), dest.iter_events(session_id), strict=False)
    checked = 0
    for original, copied in pairs:
        if encode_event(original) != encode_event(copied):
            raise TurnlogError(
                f"session {session_id!r}: the copy differs from the source at seq {original.seq}",
                hint="the destination store changed the record; keep the source",
            )
        checked += 1
    if checked != count:
        raise TurnlogError(f"session {session_id!r}: copied {count} events, read back {checked}")
    return Copied(session_id=session_id, events=count)
