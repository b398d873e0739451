"""The backward reader: the tail that decides a session's state, read from the end of its file."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterator
from typing import Final, NoReturn

from turnlog.core.damage import Problem, TornTail
from turnlog.core.tail import Tail, collect_tail, revival_anchor
from turnlog.errors import (
    CorruptLogError,
    FormatError,
    UnreadableRecordError,
)
from turnlog.events import MAX_LINE_BYTES, Event
from turnlog.stores.jsonl.head import Head, line_number_at, read_head
from turnlog.stores.locks import flock_holder
from turnlog.stores.record import (
    classify_line,
    decode_line,
)

# Backward reads go in blocks this size: large enough that a typical open
# turn is one or two reads, small enough that detection reads almost nothing.
TAIL_BLOCK_BYTES: Final = 64 * 1024

# Both revival anchors hold these bytes ("run_revived", "revivals"), and
# ordinary records hardly ever do: one search finds either.
ANCHOR_MARK: Final = b"reviv"
# The anchor types as turnlog's compact encoding writes them, which a line
# shows near its start (right after `{"seq":N,`).
ANCHOR_TYPES: Final = (b'"type":"run_revived"', b'"type":"turn_start"')
TYPE_WITHIN_BYTES: Final = 48
SEARCH_BLOCK_BYTES: Final = 1024 * 1024


def line_at(fd: int, offset: int) -> tuple[int, bytes]:
    """(start, line without its newline) of the line holding byte `offset`."""
    start = offset
    while start > 0:
        window = os.pread(fd, min(TAIL_BLOCK_BYTES, start), max(0, start - TAIL_BLOCK_BYTES))
        cut = window.rfind(b"\n")
        if cut >= 0:
            start = start - len(window) + cut + 1
            break
        start -= len(window)
        if offset - start > MAX_LINE_BYTES:
            break
    pieces = []
    pos = start
    while pos - start <= MAX_LINE_BYTES:
        block = os.pread(fd, TAIL_BLOCK_BYTES, pos)
        if not block:
            break
        cut = block.find(b"\n")
        if cut >= 0:
            pieces.append(block[:cut])
            break
        pieces.append(block)
        pos += len(block)
    return start, b"".join(pieces)


def search_revivals_before(fd: int, offset: int, path: str) -> int:
    """The revival count before byte `offset` of a checksummed session: the
    newest `run_revived` (its number) or `revivals`-stamped `turn_start` (its
    stamp) before it, found by searching bytes backwards a block at a time; 0
    if there is none.

    Only candidate lines are decoded (the mark can also sit inside a payload),
    and a damaged anchor refuses the session.
    """
    pos = offset
    # The anchor is usually near (the open turn's own stamp): start with a
    # small block and double up to the full one for a long search.
    block_bytes = TAIL_BLOCK_BYTES
    while pos > 0:
        start = max(0, pos - block_bytes)
        block_bytes = min(2 * block_bytes, SEARCH_BLOCK_BYTES)
        # Each block runs a mark's length into the one searched before, so a
        # mark across the boundary is found; read, not joined: a search
        # through a whole log without stamps copies each byte once.
        block = os.pread(fd, min(pos + len(ANCHOR_MARK), offset) - start, start)
        limit = len(block)
        while (index := block.rfind(ANCHOR_MARK, 0, limit)) >= 0:
            line_start, line = line_at(fd, start + index)
            limit = max(line_start - start, 0)
            head = line[:TYPE_WITHIN_BYTES]
            if not any(kind in head for kind in ANCHOR_TYPES):
                continue
            try:
                event, _ = decode_line(line, checksummed=True)
            except FormatError as exc:
                raise CorruptLogError(
                    f"revival marker: {exc.detail}",
                    path=path,
                    line=line_number_at(fd, line_start),
                    offset=line_start,
                ) from exc
            anchor = revival_anchor(event.data)
            if anchor is not None:
                return anchor
        pos = start
    return 0


def lines_newest_first(fd: int, end: int, counter: list[int]) -> Iterator[tuple[int, bytes]]:
    """(offset, line) pairs from `end` backwards, each line with its newline
    if it had one; `counter[0]` accumulates the bytes read.

    A line longer than a block is gathered as a list of blocks and joined
    once, so a huge line costs its length, not its length squared.
    """
    pos = end
    # Blocks after `pos` that hold the start of the newest unfinished line.
    carry: collections.deque[bytes] = collections.deque()
    carry_bytes = 0
    while pos > 0:
        start = max(0, pos - TAIL_BLOCK_BYTES)
        block = os.pread(fd, pos - start, start)
        counter[0] += len(block)
        pos = start
        cut = block.find(b"\n")
        if cut < 0 and pos > 0:
            carry.appendleft(block)
            carry_bytes += len(block)
            if carry_bytes > MAX_LINE_BYTES:
                # Too long to be a record: hand it over for the caller to report.
                yield pos, b"".join(carry)
                carry.clear()
                carry_bytes = 0
            continue
        head_size = 0 if pos == 0 else cut + 1
        carry.appendleft(block[head_size:])
        rest = b"".join(carry)
        lines = rest.split(b"\n")
        # split leaves "" after a trailing newline; put newlines back.
        line_offset = pos + head_size
        spans = []
        for piece in lines[:-1]:
            spans.append((line_offset, piece + b"\n"))
            line_offset += len(piece) + 1
        if lines[-1]:
            spans.append((line_offset, lines[-1]))
        yield from reversed(spans)
        carry.clear()
        carry.append(block[:head_size])
        carry_bytes = head_size


def read_tail(
    fd: int,
    path: str,
    *,
    live_writer_possible: bool,
    check_head: Callable[[Head], None] | None = None,
    head: Head | None = None,
) -> Tail:
    """The one backward reader: the tail that decides the state, checked.

    Bytes that cannot be a finished record at the very end are the torn
    tail; damage or a seq out of order among the events read, or a
    complete record that cannot be understood, refuses the session.
    `check_head` may refuse the header before anything else is read.
    `head` is the header a caller holding the writer lock has already read
    (and checked) at this size: it is not read twice.
    """
    end = os.fstat(fd).st_size
    if head is None:
        head = read_head(fd, path, end)
    if check_head is not None:
        check_head(head)
    if head.header is None:
        torn = TornTail(offset=0, size_bytes=end) if end else None
        missing = (Problem(message="no complete session header", offset=0),) if end else ()
        return Tail(header=None, events=(), revivals_before=0, torn=torn, problems=missing)
    counter = [0]
    problems: list[Problem] = []
    torn_start: int | None = None
    valid_end = head.size_bytes
    in_flight = 0
    oldest_offset = end

    def refuse(exc: FormatError, offset: int, cls: type[FormatError]) -> NoReturn:
        line = line_number_at(fd, offset)
        if cls is UnreadableRecordError:
            raise UnreadableRecordError(exc.detail, path=path, line=line, offset=offset)
        raise CorruptLogError(exc.detail, path=path, line=line, offset=offset)

    def events() -> Iterator[Event]:
        nonlocal torn_start, valid_end, in_flight, oldest_offset
        expected: int | None = None
        # Damage met below a sound record: corruption, placed (as the forward
        # reader places it) at the oldest line of the damaged run, so the
        # walk goes on to the run's start before refusing.
        damaged: tuple[FormatError, int] | None = None
        for offset, raw in lines_newest_first(fd, end, counter):
            terminated = raw.endswith(b"\n")
            try:
                record = classify_line(raw, checksummed=head.checksummed)
            except UnreadableRecordError as exc:
                refuse(exc, offset, UnreadableRecordError)
            except FormatError as exc:
                if expected is not None:
                    damaged = (exc, offset)
                    continue
                if (
                    not terminated
                    and offset + len(raw) == end
                    and live_writer_possible
                    and flock_holder(fd) is not None
                ):
                    # The live writer's append, still arriving.
                    in_flight = len(raw)
                    continue
                problems.append(Problem(message=exc.detail, offset=offset))
                torn_start = offset
                continue
            if record is None:
                continue
            if damaged is not None:
                refuse(damaged[0], damaged[1], CorruptLogError)
            event, _ = record
            if expected is not None and event.seq != expected:
                gap = CorruptLogError(f"seq {event.seq} where {expected} was expected")
                refuse(gap, offset, CorruptLogError)
            if expected is None:
                valid_end = offset + len(raw)
            expected = event.seq - 1
            oldest_offset = offset
            yield event
            if event.seq == 0:
                return
        if damaged is not None:  # pragma: no cover - the header is always sound here
            refuse(damaged[0], damaged[1], CorruptLogError)

    def revivals_older(kept: int) -> int:
        counter[0] += oldest_offset
        return search_revivals_before(fd, oldest_offset, path)

    # A checksummed session is in turnlog's own compact encoding, so the
    # newest revival anchor before the kept events is found by a byte
    # search (about a second per GB at most, in one block of memory);
    # other sessions are walked record by record, nothing kept.
    older = revivals_older if head.checksummed else None
    collected, revivals_before = collect_tail(events(), revivals_older=older)
    if not collected:  # pragma: no cover - the header is always read back
        collected = [head.header]
    header = head.header if collected[0].seq != 0 else None
    torn = None
    if torn_start is not None:
        torn = TornTail(offset=torn_start, size_bytes=end - in_flight - torn_start)
    return Tail(
        header=header,
        events=tuple(collected),
        revivals_before=revivals_before,
        bytes_read=counter[0] + head.size_bytes,
        torn=torn,
        problems=tuple(reversed(problems)),
        valid_size_bytes=valid_end,
    )
