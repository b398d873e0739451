"""The JSONL store: one checksummed, append-only, OS-locked file per session."""

from __future__ import annotations

import collections
import contextlib
import errno
import itertools
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO, Final, NoReturn

import msgspec

from turnlog import events as ev
from turnlog.damage import Problem, Scan, TornTail
from turnlog.errors import (
    CorruptLogError,
    FormatError,
    LogPoisonedError,
    NotASessionError,
    SeqConflictError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    StoreIOError,
    TurnlogError,
    UnfinishedSessionError,
    UnreadableRecordError,
    UsageError,
)
from turnlog.events import FORMAT_VERSION, MAX_LINE_BYTES, Event
from turnlog.sniff import foreign_hint
from turnlog.stores import holders
from turnlog.stores.base import (
    AGENTS_SUFFIX,
    MAX_AGENT_DEPTH,
    Holder,
    Store,
    StoreWriter,
    batched,
    check_contiguous,
    first_of_session,
    validate_check,
    validate_header,
    validate_session_id,
)
from turnlog.stores.fileio import DEFAULT_IO, O_DIRECTORY, O_NOFOLLOW, FileIO
from turnlog.stores.jsonl_record import (
    check_crc,
    decode_line,
    decode_sound_line,
    encode_line,
    encode_line_into,
)
from turnlog.stores.locks import flock_holder, lock_pid, retry_lock, try_flock
from turnlog.stores.sidecar import move_torn_tail
from turnlog.tail import Tail, collect_tail

SUFFIX: Final = ".jsonl"
# Backward reads go in blocks this size: large enough that a typical open
# turn is one or two reads, small enough that detection reads almost nothing.
TAIL_BLOCK_BYTES: Final = 64 * 1024
# Forward reads take this much at a time: large enough that the per-block
# work vanishes beside the records', small enough that a load holds little
# more than one block of records at once (the memory tests' bound).
READ_BLOCK_BYTES: Final = 256 * 1024
# The buffer behind the line-by-line reads of over-long lines and an
# unterminated end (a block read bypasses it).
_LINE_BUFFER_BYTES: Final = 64 * 1024
# Longer directory paths are refused up front (Linux's PATH_MAX), so a
# runaway path is a clear error, not a failure deep inside makedirs.
MAX_PATH_BYTES: Final = 4096
# How every header turnlog writes begins; a first line cut short that is a
# prefix of this (or begins with it) is a header torn while being created.
HEADER_START: Final = b'{"seq":0,"type":"session"'
_BOM: Final = b"\xef\xbb\xbf"


class Head(msgspec.Struct, frozen=True, kw_only=True):
    """What the first line of a session file says: the proof the file is ours.

    `header` is None for an unfinished file: empty, or a header cut short by
    a crash while the session was being created.
    """

    header: Event | None
    checksummed: bool
    size_bytes: int


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _line_number_at(fd: int, offset: int) -> int:
    """The 1-based line number of the line starting at `offset`; reads the
    file up to there, which only error paths pay for."""
    count = 0
    pos = 0
    while pos < offset:
        block = os.pread(fd, min(READ_BLOCK_BYTES, offset - pos), pos)
        if not block:
            break
        count += block.count(b"\n")
        pos += len(block)
    return count + 1


def _read_head(fd: int, path: str, end: int) -> Head:
    """Prove the file is a turnlog session before anything reads on or writes.

    Raises `NotASessionError` for a file whose first line is not a turnlog
    `session` header (a Claude Code or Codex transcript, any other JSONL),
    `UnreadableRecordError` for a header of a newer format, `CorruptLogError`
    for a damaged header with records after it.
    """
    head = os.pread(fd, min(TAIL_BLOCK_BYTES, end), 0)
    newline = head.find(b"\n")
    if newline < 0 and len(head) < end:
        head = os.pread(fd, min(MAX_LINE_BYTES, end), 0)
        newline = head.find(b"\n")
    if not head:
        return Head(header=None, checksummed=False, size_bytes=0)
    if newline < 0 and len(head) < end:
        if not head.startswith(HEADER_START):
            _not_ours(path, head[:TAIL_BLOCK_BYTES])
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
        _not_ours(path, head)
    line = head[:newline]
    checksummed = check_crc(line) is not None
    try:
        event, _ = decode_line(line, checksummed=checksummed, line_number=1)
    except UnreadableRecordError as exc:
        if line.startswith(HEADER_START):
            raise UnreadableRecordError(exc.detail, path=path, line=1, offset=0) from exc
        _not_ours(path, line)
    except FormatError as exc:
        if not line.startswith(HEADER_START):
            _not_ours(path, line)
        if newline + 1 >= end:
            # The only line, damaged: a header torn while being created.
            return Head(header=None, checksummed=False, size_bytes=0)
        raise CorruptLogError(
            f"damaged session header: {exc.detail}", path=path, line=1, offset=0
        ) from exc
    if event.seq != 0 or not isinstance(event.data, ev.Session):
        _not_ours(path, line)
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


def _not_ours(path: str, first_line: bytes) -> NoReturn:
    if first_line.startswith(_BOM):
        what = "starts with a byte-order mark, and a turnlog session starts with its header"
    else:
        what = "does not start with a turnlog 'session' header"
    raise NotASessionError(
        f"{path} is not a turnlog session: it {what}", hint=foreign_hint(first_line)
    )


def _lines_forward(f: object, end: int) -> Iterator[bytes]:
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


class _Scanner:
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
                line = raw[:-1] if raw.endswith(b"\n") else raw
                try:
                    if size > MAX_LINE_BYTES:
                        raise FormatError(
                            f"line of {size} bytes or more is over the {MAX_LINE_BYTES}-byte limit",
                            line=line_number,
                        )
                    if line is raw:
                        raise FormatError("unterminated record (no newline)", line=line_number)
                    if not line.strip(b" \t\r"):
                        # Blank lines are not records; hand-written files have them.
                        offset += size
                        continue
                    event, has_crc = decode_line(
                        line, checksummed=checksummed, line_number=line_number
                    )
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
                    _lines_forward(f, end - offset),
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
    """Classify every line, keeping the valid prefix (see `_Scanner.events`)."""
    scanner = _Scanner(checksummed=checksummed)
    return scanner.scan(list(scanner.events(lines)))


def scan_file(
    f: BinaryIO, end: int, *, checksummed: bool, block_bytes: int = READ_BLOCK_BYTES
) -> Scan:
    """`scan_lines` over an open file from its start up to `end`, read in blocks."""
    scanner = _Scanner(checksummed=checksummed)
    return scanner.scan(
        list(itertools.chain.from_iterable(scanner.batches(f, end, block_bytes=block_bytes)))
    )


# Both revival anchors hold these bytes ("run_revived", "revivals"), and
# ordinary records hardly ever do: one search finds either.
_ANCHOR_MARK: Final = b"reviv"
# The anchor types as turnlog's compact encoding writes them, which a line
# shows near its start (right after `{"seq":N,`).
_ANCHOR_TYPES: Final = (b'"type":"run_revived"', b'"type":"turn_start"')
_TYPE_WITHIN_BYTES: Final = 48
SEARCH_BLOCK_BYTES: Final = 1024 * 1024


def _line_at(fd: int, offset: int) -> tuple[int, bytes]:
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


def _revivals_before(fd: int, offset: int, path: str) -> int:
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
        block = os.pread(fd, min(pos + len(_ANCHOR_MARK), offset) - start, start)
        limit = len(block)
        while (index := block.rfind(_ANCHOR_MARK, 0, limit)) >= 0:
            line_start, line = _line_at(fd, start + index)
            limit = max(line_start - start, 0)
            head = line[:_TYPE_WITHIN_BYTES]
            if not any(kind in head for kind in _ANCHOR_TYPES):
                continue
            try:
                event, _ = decode_line(line, checksummed=True)
            except FormatError as exc:
                raise CorruptLogError(
                    f"revival marker: {exc.detail}",
                    path=path,
                    line=_line_number_at(fd, line_start),
                    offset=line_start,
                ) from exc
            if isinstance(event.data, ev.RunRevived):
                return event.data.revival
            if isinstance(event.data, ev.TurnStart) and event.data.revivals is not None:
                return event.data.revivals
        pos = start
    return 0


_holder = flock_holder


def _exists_at(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _translate(exc: OSError, action: str, path: str) -> TurnlogError:
    """The one place OS errors of this store become turnlog errors."""
    code = exc.errno
    if code == errno.ENOENT:
        return SessionNotFoundError(f"{path}: no such session file")
    if code == errno.ELOOP:
        return StoreIOError(
            f"{path} is a symbolic link; turnlog does not follow links in a store",
            errno=code,
            hint="replace the link with the session file itself",
        )
    if code == errno.ENOSPC:
        return StoreIOError(
            f"{action} {path}: no space left on device",
            errno=code,
            hint="free disk space; nothing after the last acknowledged append was kept",
        )
    if code in (errno.EACCES, errno.EPERM):
        return StoreIOError(f"{action} {path}: permission denied", errno=code)
    if code == errno.EISDIR:
        return StoreIOError(
            f"{path} is a directory, not a session file",
            errno=code,
            hint="a session is a <session_id>.jsonl file; move the directory out of the store",
        )
    if code == errno.ENAMETOOLONG:
        return StoreIOError(f"{action} {path}: the path is too long", errno=code)
    return StoreIOError(f"{action} {path}: {exc.strerror or exc}", errno=code)


@contextlib.contextmanager
def _closed_on_error(fd: int, action: str, path: str) -> Iterator[int]:
    """Hand out `fd`, closing it if the block raises; OS errors become turnlog errors."""
    try:
        yield fd
    except OSError as exc:
        os.close(fd)
        raise _translate(exc, action, path) from exc
    except BaseException:
        os.close(fd)
        raise


def _scan_fd(fd: int, end: int, *, checksummed: bool) -> Scan:
    """Classify every line of an open session file up to `end`."""
    with os.fdopen(os.dup(fd), "rb", buffering=_LINE_BUFFER_BYTES) as f:
        f.seek(0)
        return scan_file(f, end, checksummed=checksummed)


class _JSONLWriter(StoreWriter):
    """The locked, O_APPEND descriptor of one session file."""

    def __init__(
        self,
        io: FileIO,
        fd: int,
        path: str,
        *,
        size_bytes: int,
        next_seq: int,
        tail: Tail | None = None,
        torn: TornTail | None = None,
    ) -> None:
        super().__init__(tail=tail)
        # The writer's I/O is the descriptor and the file-system layer, not
        # the store.
        self._io = io
        # Plain `os.write` unless a test put a recording or faulty layer in:
        # one Python frame less per append.
        self._write = os.write if type(io) is FileIO else io.write
        # Reused for every single append, so encoding allocates nothing new.
        self._line = bytearray()
        self._fd: int | None = fd
        self._path = path
        self._size = size_bytes
        self._next_seq = next_seq
        self._torn = torn
        self._dirty = False
        self._poisoned: BaseException | None = None

    @property
    def next_seq(self) -> int:
        return self._next_seq

    @property
    def torn_tail(self) -> TornTail | None:
        return self._torn

    def _require_fd(self) -> int:
        if self._poisoned is not None:
            raise LogPoisonedError(f"{self._path}: an earlier sync failed ({self._poisoned})")
        if self._fd is None:
            raise UsageError("append on a closed writer")
        return self._fd

    def _conflict(self, expected_seq: int) -> SeqConflictError:
        return SeqConflictError(
            f"{self._path}: expected next seq {expected_seq}, the file's next seq is "
            f"{self._next_seq}",
            expected=expected_seq,
            actual=self._next_seq,
        )

    def append_one(self, event: Event, sync: bool) -> None:
        fd = self._fd
        if fd is None or self._poisoned is not None:
            fd = self._require_fd()
        if event.seq != self._next_seq:
            raise self._conflict(event.seq)
        line = self._line
        encode_line_into(event, line)
        self._write_bytes(fd, line, 1, sync)

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        fd = self._fd
        if fd is None or self._poisoned is not None:
            fd = self._require_fd()
        if expected_seq != self._next_seq:
            raise self._conflict(expected_seq)
        check_contiguous(events, expected_seq)
        self._write_bytes(fd, b"".join(map(encode_line, events)), len(events), sync)

    def _write_bytes(self, fd: int, data: bytes | bytearray, count: int, sync: bool) -> None:
        """One write of whole lines, then the bookkeeping, exception-safe."""
        try:
            written = self._write(fd, data)
        except OSError as exc:
            self._cut_back(fd)
            raise _translate(exc, "append to", self._path) from exc
        except BaseException:
            # A signal handler raised (Ctrl-C, SIGTERM calling sys.exit) while
            # or right after the bytes went out: account for what reached the
            # file before anything else runs, so no seq is ever written twice.
            self._settle(fd, len(data), count)
            raise
        if written != len(data):
            self._cut_back(fd)
            raise StoreIOError(
                f"append to {self._path}: short write ({written} of {len(data)} bytes)",
                errno=errno.ENOSPC,
                hint="the disk is likely full; nothing of this append was kept",
            )
        self._size += written
        self._next_seq += count
        self._dirty = True
        if sync:
            self.sync()

    def _settle(self, fd: int, size_bytes: int, count: int) -> None:
        """After an interrupted write: keep a whole batch that landed, cut a
        partial one back (its bytes are ours and acknowledged to no one)."""
        try:
            landed = os.fstat(fd).st_size - self._size
        except OSError as exc:
            self._poisoned = exc
            return
        if landed == size_bytes:
            self._size += size_bytes
            self._next_seq += count
            self._dirty = True
        elif landed:
            self._cut_back(fd)

    def _cut_back(self, fd: int) -> None:
        # A failed or short write may have left part of a record; cut the file
        # back so the next append starts on a record boundary.
        try:
            self._io.ftruncate(fd, self._size)
        except OSError as exc:
            self._poisoned = exc

    def sync(self) -> None:
        fd = self._require_fd()
        if not self._dirty:
            return
        try:
            self._io.fsync(fd)
        except OSError as exc:
            # After a failed fsync the kernel may have dropped the dirty pages
            # and cleared the error; a retry would report success for data
            # that is gone. So never retry: poison the handle.
            self._poisoned = exc
            raise LogPoisonedError(f"{self._path}: fsync failed: {exc.strerror or exc}") from exc
        self._dirty = False

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._dirty and self._poisoned is None:
                self._fd = fd
                try:
                    self.sync()
                finally:
                    self._fd = None
        finally:
            self.release_hold()
            # Closing the descriptor releases the flock.
            self._io.close(fd)


class JSONLStore(Store):
    """`<directory>/<session_id>.jsonl`, one file per session."""

    def __init__(self, directory: str | os.PathLike[str], *, io: FileIO = DEFAULT_IO) -> None:
        directory = os.fspath(directory)
        if "\0" in directory:
            raise UsageError(f"store directory {directory!r} holds a NUL byte")
        if len(os.fsencode(directory)) > MAX_PATH_BYTES:
            raise UsageError(
                f"store directory path is over {MAX_PATH_BYTES} bytes",
                hint="use a shorter path for the store",
            )
        self.directory = directory
        self.url = directory
        self.io = io

    # -- paths -----------------------------------------------------------------

    def filename(self, session_id: str) -> str:
        """The session file's name inside its directory (see `path`)."""
        return validate_session_id(session_id).rpartition("/")[2] + SUFFIX

    def _session_dir(self, session_id: str | None) -> str:
        """The directory a session file lives in: the store's own for a root,
        `<parent>.agents/` (nested under the store) for a subagent."""
        if session_id is None:
            return self.directory
        parts = validate_session_id(session_id).split("/")
        return os.path.join(self.directory, *parts[:-1])

    def path(self, session_id: str) -> str:
        return os.path.join(self._session_dir(session_id), self.filename(session_id))

    def init(self) -> None:
        os.close(self._dir_fd(create=True))

    def present(self) -> bool:
        return os.path.isdir(self.directory)

    def location(self, session_id: str) -> str:
        return self.path(session_id)

    def _make_dirs(self, directory: str) -> None:
        """Create `directory` and its parents, each made durable in its parent
        (a child session's file is worth nothing if its folder's name is lost)."""
        missing = []
        probe = directory
        while not os.path.isdir(probe):
            missing.append(probe)
            parent = os.path.dirname(probe)
            if not parent or parent == probe:
                break
            probe = parent
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise _translate(exc, "create directory", directory) from exc
        except RecursionError:
            raise UsageError(
                f"store directory {directory} has too many components to create",
                hint="use a shorter path for the store",
            ) from None
        for made in reversed(missing):
            parent_fd = os.open(os.path.dirname(made) or ".", os.O_RDONLY | O_DIRECTORY)
            try:
                self.io.fsync_dir(parent_fd)
            finally:
                os.close(parent_fd)

    def _dir_fd(self, session_id: str | None = None, *, create: bool = False) -> int:
        directory = self._session_dir(session_id)
        if create:
            self._make_dirs(directory)
        try:
            return os.open(directory, os.O_RDONLY | O_DIRECTORY)
        except FileNotFoundError:
            if session_id is not None and directory != self.directory:
                raise SessionNotFoundError(
                    f"no session {session_id!r}: no directory {directory}",
                    hint="list sessions with `turnlog ls`",
                ) from None
            raise SessionNotFoundError(
                f"no store directory {directory}",
                hint="check the path, or create a session there first",
            ) from None
        except OSError as exc:
            raise _translate(exc, "open directory", directory) from exc

    def _open_file(self, session_id: str, flags: int) -> int:
        """Open an existing session file: never through a link, never blocking
        on a pipe or device, and only if it is a regular file."""
        name = self.filename(session_id)
        path = self.path(session_id)
        dir_fd = self._dir_fd(session_id)
        try:
            fd = self.io.open(name, flags | O_NOFOLLOW | os.O_NONBLOCK, 0o600, dir_fd=dir_fd)
        except OSError as exc:
            raise _translate(exc, "open", path) from exc
        finally:
            os.close(dir_fd)
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            os.close(fd)
            raise _translate(exc, "open", path) from exc
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise StoreIOError(
                f"{path} is {_kind_of(mode)}, not a session file",
                hint="a session is a regular <session_id>.jsonl file; move this entry out of "
                "the store",
            )
        return fd

    def _head(self, fd: int, session_id: str) -> tuple[Head, int]:
        """The proof the file is ours, and the size this read goes up to
        (taken once, so a writer appending meanwhile is not read half-way)."""
        end = os.fstat(fd).st_size
        return _read_head(fd, self.path(session_id), end), end

    # -- reading -----------------------------------------------------------------

    def scan(self, session_id: str, *, on_event: Callable[[Event], None] | None = None) -> Scan:
        """Read and classify the whole file, never modifying it.

        With `on_event`, each valid event is handed to it and not kept, so a
        log of any length is checked in memory bounded by one read block of
        records (`READ_BLOCK_BYTES`), or one record if it is longer. The last
        record of a session a live writer holds may still be arriving: an
        unterminated last line is then in flight, not torn.
        """
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, end = self._head(fd, session_id)
            if head.header is None:
                return Scan(
                    events=[],
                    problems=[Problem(message="no complete session header", offset=0)],
                    torn=TornTail(offset=0, size_bytes=end) if end else None,
                )
            scanner = _Scanner(checksummed=head.checksummed)
            with os.fdopen(os.dup(fd), "rb", buffering=_LINE_BUFFER_BYTES) as f:
                f.seek(0)
                stream = scanner.stream(f, end)
                if on_event is None:
                    events = list(stream)
                else:
                    events = []
                    for event in stream:
                        on_event(event)
            scan = scanner.scan(events)
            torn = scan.torn
            if (
                torn is not None
                and scan.problems[-1].offset == torn.offset
                and os.pread(fd, 1, end - 1) != b"\n"
                and _holder(fd) is not None
            ):
                # One unterminated line at the end of a live session: the
                # writer's append still arriving.
                scan.problems.pop()
                scan.torn = None
                scan.in_flight_bytes = torn.size_bytes
            return scan
        except OSError as exc:
            raise _translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def iter_events(self, session_id: str) -> Iterator[Event]:
        """Every valid event, oldest first, one at a time: memory bounded by
        one read block of records, or one record if it is longer. Raises the
        store's refusal, located, if the file is damaged; the events before
        the damage have been yielded by then."""
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, end = self._head(fd, session_id)
            if head.header is None:
                raise UnfinishedSessionError(
                    f"{self.path(session_id)} holds no complete session header: a crash cut "
                    "its creation short"
                )
            scanner = _Scanner(checksummed=head.checksummed)
            with os.fdopen(os.dup(fd), "rb", buffering=_LINE_BUFFER_BYTES) as f:
                f.seek(0)
                yield from scanner.stream(f, end)
            scan = scanner.scan([])
            if scan.refusal is not None:
                self._refuse(scan.refusal, session_id, scan)
        except OSError as exc:
            raise _translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        scan = self.scan(session_id)
        problem = scan.refusal
        if problem is not None:
            self._refuse(problem, session_id, scan)
        return scan.events[from_seq:]

    def _refuse(self, problem: Problem, session_id: str, scan: Scan) -> NoReturn:
        path = self.path(session_id)
        if scan.refusal_kind == "unreadable":
            raise UnreadableRecordError(
                problem.message, path=path, line=problem.line, offset=problem.offset
            )
        raise CorruptLogError(
            f"damaged record before later valid ones: {problem.message}",
            path=path,
            line=problem.line,
            offset=problem.offset,
        )

    def read_header(self, session_id: str) -> Event | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, _ = self._head(fd, session_id)
            return head.header
        finally:
            os.close(fd)

    def _lines_newest_first(
        self, fd: int, end: int, counter: list[int]
    ) -> Iterator[tuple[int, bytes]]:
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

    def _read_tail(self, fd: int, session_id: str, *, live_writer_possible: bool) -> Tail:
        """The one backward reader: the tail that decides the state, checked.

        Bytes that cannot be a finished record at the very end are the torn
        tail; damage or a seq out of order among the events read, or a
        complete record that cannot be understood, refuses the session.
        """
        path = self.path(session_id)
        head, end = self._head(fd, session_id)
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
            line = _line_number_at(fd, offset)
            if cls is UnreadableRecordError:
                raise UnreadableRecordError(exc.detail, path=path, line=line, offset=offset)
            raise CorruptLogError(exc.detail, path=path, line=line, offset=offset)

        def events() -> Iterator[Event]:
            nonlocal torn_start, valid_end, in_flight, oldest_offset
            expected: int | None = None
            for offset, raw in self._lines_newest_first(fd, end, counter):
                terminated = raw.endswith(b"\n")
                line = raw[:-1] if terminated else raw
                if terminated and not line.strip(b" \t\r"):
                    continue
                try:
                    if len(raw) > MAX_LINE_BYTES:
                        raise FormatError(f"line over the {MAX_LINE_BYTES}-byte limit")
                    if not terminated:
                        raise FormatError("unterminated record (no newline)")
                    event, _ = decode_line(line, checksummed=head.checksummed)
                    if expected is not None and event.seq != expected:
                        raise CorruptLogError(f"seq {event.seq} where {expected} was expected")
                except UnreadableRecordError as exc:
                    refuse(exc, offset, UnreadableRecordError)
                except FormatError as exc:
                    if expected is not None:
                        refuse(exc, offset, CorruptLogError)
                    if (
                        not terminated
                        and offset + len(raw) == end
                        and live_writer_possible
                        and _holder(fd) is not None
                    ):
                        # The live writer's append, still arriving.
                        in_flight = len(raw)
                        continue
                    problems.append(Problem(message=exc.detail, offset=offset))
                    torn_start = offset
                    continue
                if expected is None:
                    valid_end = offset + len(raw)
                expected = event.seq - 1
                oldest_offset = offset
                yield event
                if event.seq == 0:
                    return

        def revivals_older(kept: int) -> int:
            counter[0] += oldest_offset
            return _revivals_before(fd, oldest_offset, path)

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

    def read_tail(self, session_id: str) -> Tail:
        """The tail that decides the state, read backwards from EOF.

        Reads a few blocks however long the log is: until the last turn
        boundary, the last message and a revival count are in hand.
        """
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            return self._read_tail(fd, session_id, live_writer_possible=True)
        except OSError as exc:
            raise _translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def sessions(self) -> list[str]:
        """Every `<id>.jsonl` entry, whatever it is, and the subagents' under
        `<id>.agents/`: commands report an entry that is not a session file
        (a directory, a pipe, a link) on its own."""
        out: list[str] = []
        self._collect(None, out)
        return sorted(out)

    def children(self, session_id: str) -> list[str]:
        out: list[str] = []
        self._collect(session_id, out, deep=False)
        return sorted(out)

    def _collect(self, parent: str | None, out: list[str], *, deep: bool = True) -> None:
        if parent is None:
            directory, prefix = self.directory, ""
        else:
            directory = os.path.join(self._session_dir(parent), self.filename(parent))
            directory = directory[: -len(SUFFIX)] + AGENTS_SUFFIX
            prefix = parent + AGENTS_SUFFIX + "/"
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _translate(exc, "list", directory) from exc
        present = set(names)
        for name in names:
            if not name.endswith(SUFFIX):
                continue
            stem = name[: -len(SUFFIX)]
            try:
                session_id = validate_session_id(prefix + stem)
            except UsageError:
                continue
            out.append(session_id)
            # Only a session that spawned subagents has a folder to descend
            # into: a store of many sessions lists each folder once.
            if deep and stem + AGENTS_SUFFIX in present and session_id.count("/") < MAX_AGENT_DEPTH:
                self._collect(session_id, out)

    def exists(self, session_id: str) -> bool:
        return os.path.lexists(self.path(session_id))

    def lock_holder(self, session_id: str) -> Holder | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            return _holder(fd)
        finally:
            os.close(fd)

    # -- writing -----------------------------------------------------------------

    def _lock(self, fd: int, session_id: str) -> None:
        retry_lock(lambda: try_flock(fd), lambda: self._locked(fd, session_id))

    def _locked(self, fd: int, session_id: str) -> SessionLockedError:
        """The refusal of a writer: this process's own (and where it was
        opened), or another process's."""
        here, site = holders.held_here(holders.file_key(fd))
        pid = lock_pid(fd)
        if here or pid == os.getpid():
            return holders.held_here_error(session_id, self.path(session_id), site)
        holder = f"process {pid}" if pid else "another process"
        return SessionLockedError(f"{self.path(session_id)} is being written by {holder}", pid=pid)

    @staticmethod
    def _hold(writer: _JSONLWriter, fd: int, site: str | None) -> _JSONLWriter:
        """Record the writer as this process's holder of the session's lock."""
        return writer.hold(holders.file_key(fd), site)

    def create(self, header: Event) -> StoreWriter:
        """Create the session file: write the header, sync the file, then its
        directory. An unfinished file of the same id that no one holds (empty,
        or a header cut short by a crash during creation) is created again,
        its bytes kept in a sidecar first."""
        session_id = validate_header(header)
        site = holders.caller_site()
        dir_fd = self._dir_fd(session_id, create=True)
        path = self.path(session_id)
        try:
            try:
                fd = self.io.open(
                    self.filename(session_id),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | O_NOFOLLOW,
                    0o600,
                    dir_fd=dir_fd,
                )
            except FileExistsError:
                if os.path.islink(path):
                    raise StoreIOError(
                        f"{path} is a symbolic link; turnlog does not follow links in a store",
                        errno=errno.EEXIST,
                        hint="remove the link; a session file must be a regular file",
                    ) from None
                return self._create_again(header, session_id, dir_fd, site)
            except OSError as exc:
                raise _translate(exc, "create", path) from exc
            writer = _JSONLWriter(self.io, fd, path, size_bytes=0, next_seq=0)
            try:
                self._lock(fd, session_id)
                writer.append([header], expected_seq=0, sync=True)
                # The file's name is durable only once its directory is synced.
                self.io.fsync_dir(dir_fd)
                self._hold(writer, fd, site)
            except BaseException as exc:
                # Nothing was acknowledged: take back the file this call made,
                # so the id is free again rather than an empty, headless session.
                writer.close()
                with contextlib.suppress(OSError):
                    os.unlink(self.filename(session_id), dir_fd=dir_fd)
                if isinstance(exc, OSError):
                    raise _translate(exc, "create", path) from exc
                raise
            return writer
        finally:
            os.close(dir_fd)

    def write_session(self, events: Iterable[Event]) -> int:
        """The whole session written to a private temporary file in its
        directory, synced, then linked to its name (which refuses an existing
        session) and the temporary name removed: the session appears whole or
        not at all. A failed write (a full disk) removes the temporary file."""
        stream = iter(events)
        header, session_id = first_of_session(stream)
        name = self.filename(session_id)
        path = self.path(session_id)
        # A leading dot and no `.jsonl` ending: never listed as a session.
        partial = f".{name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
        dir_fd = self._dir_fd(session_id, create=True)
        try:
            if _exists_at(name, dir_fd):
                raise SessionExistsError(f"session {session_id!r} already exists at {path}")
            fd = self.io.open(
                partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, 0o600, dir_fd=dir_fd
            )
            count = 0
            try:
                for batch in batched(itertools.chain((header,), stream)):
                    check_contiguous(batch, count)
                    data = b"".join(map(encode_line, batch))
                    while data:
                        written = self.io.write(fd, data)
                        if written <= 0:
                            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                        data = data[written:]
                    count += len(batch)
                self.io.fsync(fd)
            finally:
                self.io.close(fd)
            try:
                os.link(partial, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise SessionExistsError(
                    f"session {session_id!r} already exists at {path}"
                ) from None
            os.unlink(partial, dir_fd=dir_fd)
            self.io.fsync_dir(dir_fd)
            return count
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=dir_fd)
            if isinstance(exc, OSError):
                raise _translate(exc, "write", path) from exc
            raise
        finally:
            os.close(dir_fd)

    def _create_again(
        self, header: Event, session_id: str, dir_fd: int, site: str | None
    ) -> StoreWriter:
        path = self.path(session_id)
        fd = self._open_file(session_id, os.O_RDWR | os.O_APPEND)
        with _closed_on_error(fd, "create", path):
            self._lock(fd, session_id)
            head, end = self._head(fd, session_id)
            if head.header is not None:
                raise SessionExistsError(f"session {session_id!r} already exists at {path}")
            torn = None
            if end:
                torn = self._quarantine(fd, session_id, TornTail(offset=0, size_bytes=end))
            writer = _JSONLWriter(self.io, fd, path, size_bytes=0, next_seq=0, torn=torn)
            writer.append([header], expected_seq=0, sync=True)
            self.io.fsync_dir(dir_fd)
            return self._hold(writer, fd, site)

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        path = self.path(session_id)
        validate_check(check)
        site = None if force else holders.caller_site()
        fd = self._open_file(session_id, os.O_RDWR | os.O_APPEND)
        with _closed_on_error(fd, "open", path):
            if not force:
                self._lock(fd, session_id)
            head, end = self._head(fd, session_id)
            if head.header is None:
                raise UnfinishedSessionError(
                    f"{path} holds no complete session header: a crash cut its creation short"
                )
            tail: Tail | None = None
            if check == "full":
                scan = _scan_fd(fd, end, checksummed=head.checksummed)
                if scan.refusal is not None:
                    self._refuse(scan.refusal, session_id, scan)
                torn = scan.torn
                next_seq = len(scan.events)
                valid_size = torn.offset if torn is not None else end
            else:
                tail = self._read_tail(fd, session_id, live_writer_possible=False)
                torn, valid_size = tail.torn, tail.valid_size_bytes
                next_seq = tail.events[-1].seq + 1
                if torn is None:
                    valid_size = end
            if torn is not None:
                torn = self._quarantine(fd, session_id, torn)
                valid_size = torn.offset
            writer = _JSONLWriter(
                self.io,
                fd,
                path,
                size_bytes=valid_size,
                next_seq=next_seq,
                tail=tail,
                torn=torn,
            )
            # A forced writer holds no lock: nothing to record.
            return writer if force else self._hold(writer, fd, site)

    def _quarantine(self, fd: int, session_id: str, torn: TornTail) -> TornTail:
        """Copy the torn bytes to a sidecar (synced), then cut the file back.

        The copy is durable before the cut, so a crash in between leaves both;
        a second try writes another sidecar rather than overwrite one. A
        sidecar that could not be written whole is removed again.
        """
        dir_fd = self._dir_fd(session_id)
        try:
            name = move_torn_tail(fd, dir_fd, self.filename(session_id), torn, io=self.io)
        finally:
            os.close(dir_fd)
        return TornTail(
            offset=torn.offset,
            size_bytes=torn.size_bytes,
            sidecar=os.path.join(self._session_dir(session_id), name),
        )
