"""Stored rows of the SQL stores: a line read back and checked as a JSONL reader checks it."""

from __future__ import annotations

from typing import NoReturn

from turnlog.errors import CorruptLogError, FormatError, UnreadableRecordError
from turnlog.events import Event
from turnlog.stores.record import classify_line, decode_sound_line


def decode_row(where: str, session_id: str, seq: int, line: object) -> Event:
    """The event a stored line holds. A damaged or unreadable line refuses the
    session: a database has no torn tail, so no damage is a crash artifact."""
    if isinstance(line, str):
        line = line.encode("utf-8", "surrogateescape")  # a text column, or edited by hand
    if not isinstance(line, bytes):
        raise CorruptLogError(
            f"session {session_id!r} seq {seq}: a {type(line).__name__}, not a record", path=where
        )
    line = line.rstrip(b"\n")
    event = decode_sound_line(line)
    if event is not None and event.seq == seq:
        return event
    try:
        # The rule every reader applies: a row is a whole line, so damage in
        # it is corrupt (a database has no torn tail), never torn.
        record = classify_line(line + b"\n", checksummed=True)
        if record is None:
            raise FormatError("a blank line, not a record")
        event, _ = record
    except UnreadableRecordError as exc:
        raise UnreadableRecordError(
            f"session {session_id!r} seq {seq}: {exc.detail}", path=where
        ) from exc
    except FormatError as exc:
        raise CorruptLogError(
            f"session {session_id!r} seq {seq}: {exc.detail}", path=where
        ) from exc
    if event.seq != seq:
        raise CorruptLogError(
            f"session {session_id!r}: the record stored as seq {seq} says seq {event.seq}",
            path=where,
        )
    return event


def refuse_gap(where: str, session_id: str, expected: int, seq: int) -> NoReturn:
    raise CorruptLogError(
        f"session {session_id!r}: seq {seq} where {expected} was expected", path=where
    )
