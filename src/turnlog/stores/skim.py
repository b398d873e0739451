"""The skim: every record of a session checked, only the types a reader asks for handed over."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from turnlog.events import MAX_LINE_BYTES, VOCABULARY

#: What a skim hands each record of a type it was asked for: its seq and the
#: record as stored (one JSON object, its `crc` member last), which the
#: reader decodes with a decoder of its own (msgspec ignores the members its
#: struct does not name).
RecordHandler = Callable[[int, bytes], None]
SkimHandlers = Mapping[str, RecordHandler]

# The canonical record a turnlog writer encodes starts with its seq and its
# type, in that order: `{"seq":N,"type":"T",...`, and ends with its checksum.
_SEQ_OPEN: Final = b'{"seq":'
_TYPE_OPEN: Final = b',"type":"'
_CRC_OPEN: Final = b',"crc":"'
_KNOWN_TYPES: Final = frozenset(name.encode() for name in VOCABULARY)


def skim_lines(
    lines: Iterable[bytes], handlers: SkimHandlers, *, expected_seq: int = 0
) -> int | None:
    """Check each line (without its newline) and hand the records of the
    asked-for types to their handlers, in seq order. Returns the seq the next
    record would have; None as soon as a line is not a sound record of the
    vocabulary in its canonical form, with the seq expected.

    A sound line is one `decode_sound_line` takes: under the line limit, its
    checksum matching. The checksum proves a turnlog writer wrote the record,
    so a record of a type nobody asked for is checked, never decoded. None
    says nothing about the session: the reader then reads it the careful way
    (`Store.iter_events`), which words whatever it finds. The handlers may
    have been handed records by then: a reader collects them apart from
    what it keeps, and drops them on None.
    """
    by_type = {name.encode(): handler for name, handler in handlers.items()}
    known = _KNOWN_TYPES
    crc32 = zlib.crc32
    expected = expected_seq
    for line in lines:
        comma = line.find(b",", 7)
        if (
            len(line) >= MAX_LINE_BYTES
            or line[-18:-10] != _CRC_OPEN
            or line[-2:] != b'"}'
            or b"%08x" % crc32(line[:-18]) != line[-10:-2]
            or line[:7] != _SEQ_OPEN
            or line[comma : comma + 9] != _TYPE_OPEN
            or line[7:comma] != b"%d" % expected
        ):
            return None
        name = line[comma + 9 : line.find(b'"', comma + 9)]
        if not expected and name != b"session":
            return None
        handler = by_type.get(name)
        if handler is not None:
            handler(expected, line)
        elif name not in known and name[:2] != b"x_":
            return None
        expected += 1
    return expected
