"""The forward reader: each line of a session file classified as it streams past."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from typing import BinaryIO, Final

from turnlog import events as ev
from turnlog.core.damage import Problem, Scan, TornTail
from turnlog.errors import (
    FormatError,
    UnreadableRecordError,
)
from turnlog.events import MAX_LINE_BYTES, Event
from turnlog.stores.record import (
    classify_line,
    decode_sound_line,
)

# Forward reads take this much at a time: large enough that the per-block
# work vanishes beside the records', small enough that a load holds little
# more than one block of records at once (the memory tests' bound).
READ_BLOCK_BYTES: Final = 256 * 1024
# The buffer behind the line-by-line reads of over-long lines and an
# unterminated end (a block read bypasses it).
LINE_BUFFER_BYTES: Final = 64 * 1024


def lines_forward(f: object, end: int) -> Iterator[bytes]:
    """Lines of an open binary file from its current position up to `end`,
    each with its newline if it had one, none longer than a line may be."""
    readline = f.readline  # type: ignore[attr-defined]
    offset = 0
    while offset < end:
        raw = readline(min(MAX_LINE_BYTES + 1, end - offset))
        if not raw:
            return
        offset += len(raw)
        yield raw


class Scanner:
    """Classifies lines as they stream past, keeping only what it found wrong.

    `events` yields the valid prefix one event at a time, so a caller that
    does not keep them reads a log of any length in memory bounded by one
    record; `scan` then says what the whole file held.
    """

    def __init__(self, *, checksummed: bool) -> None:
        self.checksummed = checksummed
        self.problems: list[Problem] = []
        self.refusal: Problem | None = None
        self.kind: str | None = None
        self.without_crc: list[int] = []
        self.first_bad_offset: int | None = None
        self.offset = 0
        self.count = 0

    def events(
        self,
        lines: Iterator[bytes],
        *,
        expected_seq: int = 0,
        offset: int = 0,
        first_line: int = 1,
    ) -> Iterator[Event]:
        """Bytes that cannot be a finished record followed only by more such
        bytes are a torn tail (a crash artifact). A bad record followed by a
        good one, a good record out of seq order, or a complete record that
        cannot be understood is a refusal: no crash writes those, and nothing
        is moved. Yields the valid prefix, before the first problem.

        `expected_seq`, `offset` and `first_line` say where `lines` start when
        `batches` has already taken the records before them."""
        problems = self.problems
        checksummed = self.checksummed
        decode_sound = decode_sound_line
        try:
            for line_number, raw in enumerate(lines, start=first_line):
                size = len(raw)
                if (
                    expected_seq
                    and self.first_bad_offset is None
                    and self.refusal is None
                    and raw[-1:] == b"\n"
                ):
                    # The fast path: a whole record whose checksum matches, in a
                    # file with no damage so far.
                    fast = decode_sound(raw[:-1])
                    if fast is not None and fast.seq == expected_seq:
                        expected_seq += 1
                        offset += size
                        yield fast
                        continue
                try:
                    record = classify_line(raw, checksummed=checksummed, line_number=line_number)
                    if record is None:
                        offset += size
                        continue
                    event, has_crc = record
                except UnreadableRecordError as exc:
                    problem = Problem(message=exc.detail, line=line_number, offset=offset)
                    problems.append(problem)
                    if self.refusal is None:
                        self.refusal = problem
                        self.kind = "unreadable" if self.first_bad_offset is None else "corrupt"
                    offset += size
                    continue
                except FormatError as exc:
                    problems.append(Problem(message=exc.detail, line=line_number, offset=offset))
                    if self.first_bad_offset is None:
                        self.first_bad_offset = offset
                    offset += size
                    continue
                if self.first_bad_offset is not None:
                    if self.refusal is None:
                        self.refusal = next(
                            p for p in problems if p.offset == self.first_bad_offset
                        )
                        self.kind = "corrupt"
                    self.first_bad_offset = None
                    # The damaged lines held the seqs in between; do not report them twice.
                    expected_seq = event.seq
                misplaced = None
                if event.seq != expected_seq:
                    misplaced = f"seq {event.seq} where {expected_seq} was expected"
                elif event.seq == 0 and not isinstance(event.data, ev.Session):
                    misplaced = f"the first record is {event.type!r}, not the 'session' header"
                expected_seq = event.seq + 1
                offset += size
                if misplaced is not None:
                    problem = Problem(message=misplaced, line=line_number, offset=offset - size)
                    problems.append(problem)
                    if self.refusal is None:
                        self.refusal, self.kind = problem, "corrupt"
                elif self.refusal is None:
                    if not has_crc:
                        self.without_crc.append(line_number)
                    yield event
        finally:
            self.offset = offset
            self.count = expected_seq

    def batches(
        self, f: BinaryIO, end: int, *, block_bytes: int = READ_BLOCK_BYTES
    ) -> Iterator[list[Event]]:
        """`events` over a whole file from its first byte up to `end`, a block
        at a time: the same classification, in lists of at most a block's
        records.

        Loading is the one read that touches every record, so its common case
        runs in one tight loop per block: a sound line (`decode_sound_line`)
        holding the next seq is taken as is. A line that loop cannot take (a
        custom event, a line without a checksum, damage) is classified alone
        by `events`, which words every problem; after damage every line goes
        through it. A line longer than the limit, or an unterminated end,
        hands the rest of the file to the line reader, which reads such lines
        in bounded pieces.
        """
        # A block shorter than the line limit is what lets only a block's
        # first line (which may hold earlier blocks' bytes) run over it.
        assert 0 < block_bytes < MAX_LINE_BYTES, block_bytes
        decode_sound = decode_sound_line
        session_type = ev.Session
        expected_seq = 0
        offset = 0  # the first byte not yet classified
        line_number = 1
        position = 0  # the bytes read so far
        carry = b""
        handed_over = False
        try:
            while position < end:
                block = f.read(min(block_bytes, end - position))
                if not block:
                    break
                position += len(block)
                lines = (carry + block if carry else block).split(b"\n")
                # The last piece has no newline yet: the start of the next block's first line.
                carry = lines.pop()
                if lines and len(lines[0]) >= MAX_LINE_BYTES:
                    break
                taken: list[Event] = []
                keep = taken.append
                pending = iter(lines)
                done = 0  # lines of this block classified
                while done < len(lines):
                    rest: Iterable[bytes]
                    if self.first_bad_offset is None and self.refusal is None:
                        before = len(taken)
                        odd = None
                        for line in pending:
                            event = decode_sound(line)
                            if (
                                event is None
                                or event.seq != expected_seq
                                or (not expected_seq and type(event.data) is not session_type)
                            ):
                                odd = line
                                break
                            keep(event)
                            expected_seq += 1
                        sound = len(taken) - before
                        offset += sum(map(len, lines[done : done + sound])) + sound
                        line_number += sound
                        done += sound
                        if odd is None:
                            break
                        # The one line the loop could not take, classified alone.
                        rest, count = (odd,), 1
                    else:
                        # After damage, every line is classified one by one.
                        rest, count = pending, len(lines) - done
                    taken.extend(
                        self.events(
                            (line + b"\n" for line in rest),
                            expected_seq=expected_seq,
                            offset=offset,
                            first_line=line_number,
                        )
                    )
                    expected_seq, offset = self.count, self.offset
                    line_number += count
                    done += count
                if taken:
                    yield taken
                if len(carry) >= MAX_LINE_BYTES:
                    break
            if offset < end:
                handed_over = True
                f.seek(offset)
                rest_of_file = self.events(
                    lines_forward(f, end - offset),
                    expected_seq=expected_seq,
                    offset=offset,
                    first_line=line_number,
                )
                # One record at a time: the lines past here may be long.
                for event in rest_of_file:
                    yield [event]
        finally:
            if not handed_over:
                self.offset = offset
                self.count = expected_seq

    def stream(self, f: BinaryIO, end: int) -> Iterator[Event]:
        """`batches`, one event at a time."""
        return itertools.chain.from_iterable(self.batches(f, end))

    def scan(self, events: list[Event]) -> Scan:
        torn = None
        if self.first_bad_offset is not None and self.refusal is None:
            torn = TornTail(
                offset=self.first_bad_offset, size_bytes=self.offset - self.first_bad_offset
            )
        return Scan(
            events=events,
            problems=self.problems,
            torn=torn,
            refusal=self.refusal,
            refusal_kind=self.kind,
            lines_without_crc=self.without_crc,
        )


def scan_lines(lines: Iterator[bytes], *, checksummed: bool) -> Scan:
    """Classify every line, keeping the valid prefix (see `Scanner.events`)."""
    scanner = Scanner(checksummed=checksummed)
    return scanner.scan(list(scanner.events(lines)))


def scan_file(
    f: BinaryIO, end: int, *, checksummed: bool, block_bytes: int = READ_BLOCK_BYTES
) -> Scan:
    """`scan_lines` over an open file from its start up to `end`, read in blocks."""
    scanner = Scanner(checksummed=checksummed)
    return scanner.scan(
        list(itertools.chain.from_iterable(scanner.batches(f, end, block_bytes=block_bytes)))
    )


def scan_fd(fd: int, end: int, *, checksummed: bool) -> Scan:
    """Classify every line of an open session file up to `end`."""
    with os.fdopen(os.dup(fd), "rb", buffering=LINE_BUFFER_BYTES) as f:
        f.seek(0)
        return scan_file(f, end, checksummed=checksummed)
