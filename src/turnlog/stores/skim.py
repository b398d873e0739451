"""The skim: every record of a session checked, only the types a reader asks for handed over."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from turnlog import events as ev
from turnlog.errors import TurnlogError
from turnlog.stores.record import decode_line, decode_sound_line

#: What a skim hands each record of a type it was asked for: (its seq, the
#: record as stored: one JSON object, its `crc` member last; a view of the
#: bytes read, valid as long as the reader keeps it), which the reader
#: decodes with a decoder of its own (msgspec ignores the members its struct
#: does not name).
#: A record is handed over as one pair, so a reader that only collects them
#: hands a list's `append` (no Python call per record).
Record = tuple[int, bytes | memoryview]
RecordHandler = Callable[[Record], None]
SkimHandlers = Mapping[str, RecordHandler]

#: An index of a skim is written again once this many records lie past it:
#: fewer are skimmed line by line at the next read for less than a rewrite costs.
REINDEX_AFTER_RECORDS: Final = 64

#: Where a skim found a record it handed over: its seq, the number of its
#: type (its place among the sorted names asked for), and its line's offset
#: and length in bytes (the newline left out).
Found = tuple[int, int, int, int]


def skim_lines(
    lines: Iterable[bytes],
    handlers: SkimHandlers,
    *,
    expected_seq: int = 0,
    offset: int = 0,
    found: list[Found] | None = None,
) -> int | None:
    """Check each line (without its newline) as every reader checks it
    (`turnlog.stores.record`: checksum, limit, vocabulary, one decode) and
    hand the records of the asked-for types to their handlers, in seq order,
    as they are stored. Returns the seq the next record would have; None as
    soon as a line is not a sound checksummed record with the seq expected.
    With `found`, each handed-over record's place is appended to it
    (`offset` is where the first line starts).

    None says nothing about the session: the reader then reads it the
    careful way (`Store.iter_events`), which words whatever it finds. The
    handlers may have been handed records by then: a reader collects them
    apart from what it keeps, and drops them on None.
    """
    names = sorted(handlers)
    by_type = {name: (handlers[name], number) for number, name in enumerate(names)}.get
    note = found.append if found is not None else None
    expected = expected_seq
    for line in lines:
        event = decode_sound_line(line)
        if event is None:  # a custom type, or a line the careful read words
            try:
                event, _ = decode_line(line, checksummed=True)
            except TurnlogError:
                return None
        if event.seq != expected or (not expected and not isinstance(event.data, ev.Session)):
            return None
        asked = by_type(event.type)
        if asked is not None:
            asked[0]((expected, line))
            if note is not None:
                note((expected, asked[1], offset, len(line)))
        expected += 1
        offset += len(line) + 1
    return expected
