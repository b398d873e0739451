"""One JSONL line: an event's JSON with a fixed-width CRC-32 as its last member."""

from __future__ import annotations

import zlib
from typing import Final

from turnlog.errors import FormatError
from turnlog.events import (
    Event,
    decode_event,
    encode_event,
)

# A line is  PREFIX + ',"crc":"' + 8 lowercase hex digits + '"}'  + "\n",
# where PREFIX is the event's JSON object without its closing brace and the
# digits are zlib's CRC-32 of PREFIX. Fixed width, so a reader finds and
# checks it with two slices and one C call, without re-serializing.
CRC_OPEN: Final = b',"crc":"'
CRC_SUFFIX_BYTES: Final = len(CRC_OPEN) + 8 + 2
_HEX: Final = frozenset(b"0123456789abcdef")


def encode_line(event: Event) -> bytes:
    """The event as one checksummed line, newline included."""
    prefix = encode_event(event)[:-1]
    return prefix + (b',"crc":"%08x"}\n' % zlib.crc32(prefix))


def check_crc(line: bytes) -> bool | None:
    """True if the line carries a matching checksum, False if it carries a
    wrong or malformed one, None if it carries none (hand-made lines)."""
    if len(line) < CRC_SUFFIX_BYTES or line[-CRC_SUFFIX_BYTES:-10] != CRC_OPEN:
        return None
    digits = line[-10:-2]
    if line[-2:] != b'"}' or not _HEX.issuperset(digits):
        return False
    return int(digits, 16) == zlib.crc32(line[:-CRC_SUFFIX_BYTES])


def decode_line(line: bytes, *, line_number: int | None = None) -> tuple[Event, bool]:
    """Decode one line (without its newline). Returns the event and whether it
    carried a checksum. Raises `FormatError` for a bad checksum or record."""
    has_crc = check_crc(line)
    if has_crc is False:
        raise FormatError("checksum mismatch", line=line_number)
    return decode_event(line, line=line_number), has_crc is True
