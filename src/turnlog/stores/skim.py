"""The skim: every record of a session checked, only the types a reader asks for handed over."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from turnlog.errors import TurnlogError
from turnlog.events import MAX_LINE_BYTES, VOCABULARY, decode_record, decode_record_fast

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

# The canonical record a turnlog writer encodes starts with its seq and its
# type, in that order (`{"seq":N,"type":"T",...`), and ends with its checksum
# (`turnlog.stores.record`).
_KNOWN_TYPES: Final = frozenset(name.encode() for name in VOCABULARY)


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
    """Check each line (without its newline) and hand the records of the
    asked-for types to their handlers, in seq order. Returns the seq the next
    record would have; None as soon as a line is not a sound record of the
    vocabulary in its canonical form, with the seq expected. With `found`,
    each handed-over record's place is appended to it (`offset` is where
    the first line starts).

    A sound line is one `decode_sound_line` takes: under the line limit, its
    checksum matching. The checksum proves a turnlog writer wrote the record,
    and every record is decoded once to prove this turnlog reads it (an
    index beside the file then spares the next skim all of it). None
    says nothing about the session: the reader then reads it the careful way
    (`Store.iter_events`), which words whatever it finds. The handlers may
    have been handed records by then: a reader collects them apart from
    what it keeps, and drops them on None.
    """
    names = sorted(handlers)
    by_type = {name.encode(): (handlers[name], number) for number, name in enumerate(names)}.get
    note = found.append if found is not None else None
    known = _KNOWN_TYPES
    crc32 = zlib.crc32
    expected = expected_seq
    for line in lines:
        # Three comparisons check a line: its start names the seq expected,
        # its last 18 bytes are exactly the checksum member of the rest, and
        # it is under the limit.
        head = b'{"seq":%d,"type":"' % expected
        size = len(line)
        if (
            line[-18:] != b',"crc":"%08x"}' % crc32(line[:-18])
            or not line.startswith(head)
            or size >= MAX_LINE_BYTES
        ):
            return None
        start = len(head)
        name = line[start : line.find(b'"', start)]
        if not expected and name != b"session":
            return None
        # Checked as every reader checks it: a record whose checksum matches
        # but that this turnlog cannot read stops the skim, and the careful
        # read reports it.
        if decode_record_fast(line) is None:
            try:
                decode_record(line)
            except TurnlogError:
                return None
        asked = by_type(name)
        if asked is not None:
            asked[0]((expected, line))
            if note is not None:
                note((expected, asked[1], offset, size))
        elif name not in known and name[:2] != b"x_":
            return None
        expected += 1
        offset += size + 1
    return expected
