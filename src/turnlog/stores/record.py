"""One stored line (JSONL, or an SQL row's line): its checksummed encoding, and the one rule
that says whether a line is a record, damage that may be a torn tail, or unreadable."""

from __future__ import annotations

import zlib
from typing import Final

import msgspec

from turnlog.errors import FormatError, UnreadableRecordError
from turnlog.events import (
    MAX_LINE_BYTES,
    Event,
    decode_record,
    decode_record_fast,
    encode_event_into,
)

# A line is  PREFIX + ',"crc":"' + 8 lowercase hex digits + '"}'  + "\n",
# where PREFIX is the event's JSON object without its closing brace and the
# digits are zlib's CRC-32 of PREFIX. Fixed width, so a reader finds and
# checks it with two slices and one C call, without re-serializing.
CRC_OPEN: Final = b',"crc":"'
CRC_SUFFIX_BYTES: Final = len(CRC_OPEN) + 8 + 2
_HEX: Final = frozenset(b"0123456789abcdef")


def encode_line_into(event: Event, buffer: bytearray) -> None:
    """The event as one checksummed line, newline included, in `buffer`.

    `encode_event_into` bounds the record so that the line is at most
    `MAX_LINE_BYTES`, the bound every reader applies to the same bytes. No
    copy is made: the record is encoded in place, its closing brace dropped,
    the checksum taken over the buffer, and the suffix appended.
    """
    encode_event_into(event, buffer)
    del buffer[-1:]
    buffer += b',"crc":"%08x"}\n' % zlib.crc32(buffer)


def encode_line(event: Event) -> bytes:
    """The event as one checksummed line, newline included."""
    buffer = bytearray()
    encode_line_into(event, buffer)
    return bytes(buffer)


def check_crc(line: bytes) -> bool | None:
    """True if the line carries a matching checksum, False if it carries a
    wrong or malformed one, None if it carries none (hand-made lines)."""
    if len(line) < CRC_SUFFIX_BYTES or line[-CRC_SUFFIX_BYTES:-10] != CRC_OPEN:
        return None
    digits = line[-10:-2]
    if line[-2:] != b'"}' or not _HEX.issuperset(digits):
        return False
    return int(digits, 16) == zlib.crc32(line[:-CRC_SUFFIX_BYTES])


def decode_sound_line(line: bytes) -> Event | None:
    """The common case of every read, in one pass: a whole line (without its
    newline) under the line limit whose checksum matches and whose record is
    of the vocabulary. None for anything else, which `decode_line` words."""
    if (
        len(line) >= MAX_LINE_BYTES
        or line[-18:-10] != CRC_OPEN
        or line[-2:] != b'"}'
        or b"%08x" % zlib.crc32(line[:-18]) != line[-10:-2]
    ):
        return None
    return decode_record_fast(line)


def decode_line(
    line: bytes, *, checksummed: bool, line_number: int | None = None
) -> tuple[Event, bool]:
    """Decode one line (without its newline). Returns the event and whether it
    carried a checksum.

    Raises `FormatError` for bytes that cannot be a finished record (a torn
    tail can be made of these): a checksum that does not match, or, in a
    checksummed session, one that is missing or not the last member. Raises
    `UnreadableRecordError` for a complete record that cannot be understood:
    its checksum matches (or it is a whole JSON object in a session without
    checksums), so no crash made it and it is never cut away.
    """
    crc = check_crc(line)
    if crc is False:
        raise FormatError("checksum mismatch", line=line_number)
    if crc is None and checksummed:
        raise FormatError(
            "no checksum as the last member, in a session whose lines all carry one",
            line=line_number,
        )
    try:
        event, crc_member = decode_record(line, line=line_number)
    except FormatError as exc:
        if crc is True or _is_json_object(line):
            raise UnreadableRecordError(exc.detail, line=line_number, hint=exc.hint) from exc
        raise
    if crc is None and crc_member:
        raise FormatError("a crc member that is not the last member", line=line_number)
    return event, crc is True


def classify_line(
    raw: bytes, *, checksummed: bool, line_number: int | None = None
) -> tuple[Event, bool] | None:
    """The one torn/corrupt/unreadable decision, which the forward reader, the
    backward reader and the SQL stores' rows all make through here.

    `raw` is a line as read, with its newline if it had one. Returns None for
    a blank line (not a record: hand-written files have them), else the event
    and whether it carried a checksum. Raises `FormatError` for bytes that
    cannot be a finished record (over the line limit, no newline, a checksum
    that does not match, JSON cut short): where nothing sound follows them,
    a torn tail. Raises `UnreadableRecordError` (a `FormatError`) for a
    complete record this turnlog cannot understand: refused, never cut away.
    """
    size = len(raw)
    if size > MAX_LINE_BYTES:
        raise FormatError(
            f"line of {size} bytes or more is over the {MAX_LINE_BYTES}-byte limit",
            line=line_number,
        )
    if raw[-1:] != b"\n":
        raise FormatError("unterminated record (no newline)", line=line_number)
    line = raw[:-1]
    if not line.strip(b" \t\r"):
        return None
    return decode_line(line, checksummed=checksummed, line_number=line_number)


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(_any_decoder.decode(line), dict)
    except (msgspec.DecodeError, RecursionError):
        return False


_any_decoder: Final = msgspec.json.Decoder()
