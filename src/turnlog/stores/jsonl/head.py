"""The first line of a session file: the proof it is ours, or the refusal of a foreign one."""

from __future__ import annotations

import os
import shlex
from typing import Final, NoReturn

import msgspec

from turnlog import events as ev
from turnlog.errors import (
    CorruptLogError,
    FormatError,
    NotASessionError,
    UnreadableRecordError,
)
from turnlog.events import FORMAT_VERSION, MAX_LINE_BYTES, Event
from turnlog.stores.record import (
    check_crc,
    decode_line,
)

# The first read of a file: a header is almost always far shorter.
HEAD_BLOCK_BYTES: Final = 64 * 1024
# Counting lines (only for an error's location) reads this much at a time.
_COUNT_BLOCK_BYTES: Final = 256 * 1024
# How every header turnlog writes begins; a first line cut short that is a
# prefix of this (or begins with it) is a header torn while being created.
HEADER_START: Final = b'{"seq":0,"type":"session"'
BOM: Final = b"\xef\xbb\xbf"


class Head(msgspec.Struct, frozen=True, kw_only=True):
    """What the first line of a session file says: the proof the file is ours.

    `header` is None for an unfinished file: empty, or a header cut short by
    a crash while the session was being created.
    """

    header: Event | None
    checksummed: bool
    size_bytes: int


def line_number_at(fd: int, offset: int) -> int:
    """The 1-based line number of the line starting at `offset`; reads the
    file up to there, which only error paths pay for."""
    count = 0
    pos = 0
    while pos < offset:
        block = os.pread(fd, min(_COUNT_BLOCK_BYTES, offset - pos), pos)
        if not block:
            break
        count += block.count(b"\n")
        pos += len(block)
    return count + 1


def read_head(fd: int, path: str, end: int) -> Head:
    """Prove the file is a turnlog session before anything reads on or writes.

    Raises `NotASessionError` for a file whose first line is not a turnlog
    `session` header (a Claude Code or Codex transcript, any other JSONL),
    `UnreadableRecordError` for a header of a newer format, `CorruptLogError`
    for a damaged header with records after it.
    """
    head = os.pread(fd, min(HEAD_BLOCK_BYTES, end), 0)
    newline = head.find(b"\n")
    if newline < 0 and len(head) < end:
        head = os.pread(fd, min(MAX_LINE_BYTES, end), 0)
        newline = head.find(b"\n")
    if not head:
        return Head(header=None, checksummed=False, size_bytes=0)
    if newline < 0 and len(head) < end:
        if not head.startswith(HEADER_START):
            not_ours(path, head[:HEAD_BLOCK_BYTES])
        raise UnreadableRecordError(
            f"the first line is over the {MAX_LINE_BYTES}-byte limit",
            path=path,
            line=1,
            offset=0,
            hint="no turnlog writer makes such a line; the file was left unchanged",
        )
    if newline < 0:
        cut = head.rstrip(b"\0")
        if HEADER_START.startswith(cut) or cut.startswith(HEADER_START):
            return Head(header=None, checksummed=False, size_bytes=0)
        not_ours(path, head)
    line = head[:newline]
    checksummed = check_crc(line) is not None
    try:
        event, _ = decode_line(line, checksummed=checksummed, line_number=1)
    except UnreadableRecordError as exc:
        if line.startswith(HEADER_START):
            raise UnreadableRecordError(exc.detail, path=path, line=1, offset=0) from exc
        not_ours(path, line)
    except FormatError as exc:
        if not line.startswith(HEADER_START):
            not_ours(path, line)
        if newline + 1 >= end:
            # The only line, damaged: a header torn while being created.
            return Head(header=None, checksummed=False, size_bytes=0)
        raise CorruptLogError(
            f"damaged session header: {exc.detail}", path=path, line=1, offset=0
        ) from exc
    if event.seq != 0 or not isinstance(event.data, ev.Session):
        not_ours(path, line)
    if event.data.format > FORMAT_VERSION:
        raise UnreadableRecordError(
            f"the session is in format {event.data.format}; this turnlog reads format "
            f"{FORMAT_VERSION}",
            path=path,
            line=1,
            offset=0,
            hint="the session was written by a newer turnlog: upgrade turnlog to read it",
        )
    return Head(header=event, checksummed=checksummed, size_bytes=newline + 1)


def not_ours(path: str, first_line: bytes) -> NoReturn:
    # The sniffer names what the file is instead: needed only on this refusal.
    from turnlog.core.sniff import foreign_hint

    if first_line.startswith(BOM):
        what = "starts with a byte-order mark, and a turnlog session starts with its header"
    else:
        what = "does not start with a turnlog 'session' header"
    raise NotASessionError(
        f"{path} is not a turnlog session: it {what}", hint=foreign_hint(first_line)
    )


def misnamed_hint(path: str, home: str) -> str:
    """What a person does with the file `path` whose header names another
    session, whose own file is `home`: name it back, or, when that session is
    there already, take the copy out of the store."""
    if os.path.lexists(home):
        named = os.path.basename(home)
        return (
            f"{home} is that session; this file is a copy of it under another name: move it "
            f"out of the store, into a directory of its own as {named}, where it reads as "
            "that session again (and `turnlog copy DIR DEST` copies it into another store)"
        )
    return (
        "rename it back to the name its header gives it: "
        f"mv {shlex.quote(path)} {shlex.quote(home)}"
    )
