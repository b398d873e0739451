"""The JSONL store: one checksummed, append-only, OS-locked file per session."""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import os
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.damage import Problem, TornTail
from turnlog.errors import (
    CorruptLogError,
    FormatError,
    LogPoisonedError,
    SeqConflictError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    StoreIOError,
    TurnlogError,
    UsageError,
)
from turnlog.events import MAX_RECORD_BYTES, Event, decode_record_fast
from turnlog.stores.base import Store, StoreWriter, validate_session_id
from turnlog.stores.fileio import DEFAULT_IO, O_DIRECTORY, O_NOFOLLOW, FileIO
from turnlog.stores.jsonl_record import CRC_OPEN, decode_line, encode_line
from turnlog.tail import Tail, collect_tail

SUFFIX: Final = ".jsonl"
# Backward reads go in blocks this size: large enough that a typical open
# turn is one or two reads, small enough that detection reads almost nothing.
TAIL_BLOCK_BYTES: Final = 64 * 1024
# A reader's inspection briefly takes a shared lock; a writer opening at that
# instant retries this long before it reports the session as locked.
LOCK_RETRY_S: Final = 0.2
MAX_SIDECARS: Final = 1000


class Scan(msgspec.Struct, kw_only=True):
    """A full forward read of a session file."""

    events: list[Event]
    problems: list[Problem]
    torn: TornTail | None
    # Damage before a later valid record: a writer refuses the file.
    corrupt: bool
    valid_size_bytes: int
    size_bytes: int
    # Line numbers of valid records that carry no checksum (hand-made lines).
    lines_without_crc: list[int]

    def first_corruption(self) -> Problem | None:
        return self.problems[0] if self.corrupt and self.problems else None


def scan_lines(lines: Iterator[bytes]) -> Scan:
    """Classify every line: whole records, then a torn tail or corruption.

    A bad record followed only by bad records is a torn tail (a crash
    artifact). A bad record followed by a good one, or a good record out of
    seq order, is corruption: no crash writes that. `events` is the valid
    prefix, before the first problem.
    """
    events: list[Event] = []
    problems: list[Problem] = []
    first_bad_offset: int | None = None
    corrupt = False
    without_crc: list[int] = []
    expected_seq = 0
    offset = 0
    valid_size = 0
    crc32 = zlib.crc32
    decode_fast = decode_record_fast
    append = events.append
    for line_number, raw in enumerate(lines, start=1):
        size = len(raw)
        if (
            expected_seq
            and first_bad_offset is None
            and not corrupt
            and raw[-19:-11] == CRC_OPEN
            and raw[-3:] == b'"}\n'
            and b"%08x" % crc32(raw[:-19]) == raw[-11:-3]
            and size <= MAX_RECORD_BYTES + 1
        ):
            # The fast path: a whole record whose checksum matches, in a file
            # with no damage so far (the same checks as `decode_line`, inlined
            # because this loop runs once per event of every load).
            fast = decode_fast(raw)
            if fast is not None and fast.seq == expected_seq:
                append(fast)
                expected_seq += 1
                offset += size
                valid_size = offset
                continue
        line = raw[:-1] if raw.endswith(b"\n") else raw
        try:
            if line is raw:
                raise FormatError("unterminated record (no newline)", line=line_number)
            if size > MAX_RECORD_BYTES + 1:
                raise FormatError(
                    f"record of {size} bytes is over the {MAX_RECORD_BYTES}-byte limit",
                    line=line_number,
                )
            if not line.strip(b" \t\r"):
                # Blank lines are not records; hand-written files have them.
                if first_bad_offset is None and not corrupt:
                    valid_size = offset + size
                offset += size
                continue
            event, has_crc = decode_line(line, line_number=line_number)
        except FormatError as exc:
            problems.append(Problem(message=exc.message, line=line_number, offset=offset))
            if first_bad_offset is None:
                first_bad_offset = offset
            offset += size
            continue
        if first_bad_offset is not None:
            corrupt = True
            first_bad_offset = None
            # The damaged lines held the seqs in between; do not report them twice.
            expected_seq = event.seq
        misplaced = None
        if event.seq != expected_seq:
            misplaced = f"seq {event.seq} where {expected_seq} was expected"
        elif event.seq == 0 and not isinstance(event.data, ev.Session):
            misplaced = f"the first record is {event.type!r}, not the 'session' header"
        if misplaced is not None:
            problems.append(Problem(message=misplaced, line=line_number, offset=offset))
            corrupt = True
        elif not corrupt:
            events.append(event)
            if not has_crc:
                without_crc.append(line_number)
            valid_size = offset + size
        expected_seq = event.seq + 1
        offset += size
    torn = None
    if first_bad_offset is not None and not corrupt:
        torn = TornTail(offset=first_bad_offset, size_bytes=offset - first_bad_offset)
    return Scan(
        events=events,
        problems=problems,
        torn=torn,
        corrupt=corrupt,
        valid_size_bytes=valid_size,
        size_bytes=offset,
        lines_without_crc=without_crc,
    )


def _lock_pid(fd: int) -> int | None:
    """The pid holding a flock on the file, from /proc/locks (Linux), else None."""
    try:
        st = os.fstat(fd)
        device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for entry in locks:
                fields = entry.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
                    return int(fields[4])
    except (OSError, ValueError):
        return None
    return None


def _header_at(fd: int) -> Event | None:
    """The first record of an open session file, or None if it is not a whole,
    valid record. Reads one block, more only for an unusually long header."""
    head = os.pread(fd, TAIL_BLOCK_BYTES, 0)
    end = head.find(b"\n")
    if end < 0 and len(head) == TAIL_BLOCK_BYTES:
        head = os.pread(fd, MAX_RECORD_BYTES + 1, 0)
        end = head.find(b"\n")
    if end < 0:
        return None
    try:
        event, _ = decode_line(head[:end], line_number=1)
    except FormatError:
        return None
    return event


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
        return StoreIOError(f"{path} is a directory, not a session file", errno=code)
    return StoreIOError(f"{action} {path}: {exc.strerror or exc}", errno=code)


class _JSONLWriter(StoreWriter):
    """The locked, O_APPEND descriptor of one session file."""

    def __init__(
        self,
        store: JSONLStore,
        fd: int,
        path: str,
        *,
        size_bytes: int,
        next_seq: int,
        events: list[Event] | None,
        torn: TornTail | None,
    ) -> None:
        self._store = store
        self._io = store.io
        self._write = store.io.write
        self._fd: int | None = fd
        self._path = path
        self._size = size_bytes
        self._next_seq = next_seq
        self._loaded = events
        self._torn = torn
        self._dirty = False
        self._poisoned: BaseException | None = None

    @property
    def torn_tail(self) -> TornTail | None:
        return self._torn

    @property
    def loaded_events(self) -> list[Event] | None:
        events, self._loaded = self._loaded, None
        return events

    def _require_fd(self) -> int:
        if self._poisoned is not None:
            raise LogPoisonedError(f"{self._path}: an earlier sync failed ({self._poisoned})")
        if self._fd is None:
            raise UsageError("append on a closed writer")
        return self._fd

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        fd = self._fd
        if fd is None or self._poisoned is not None:
            fd = self._require_fd()
        if expected_seq != self._next_seq:
            raise SeqConflictError(
                f"{self._path}: expected next seq {expected_seq}, the file's next seq is "
                f"{self._next_seq}",
                expected=expected_seq,
                actual=self._next_seq,
            )
        if len(events) == 1 and events[0].seq == expected_seq:
            data = encode_line(events[0])  # the common case, kept short
        else:
            lines = []
            for offset, event in enumerate(events):
                if event.seq != expected_seq + offset:
                    raise UsageError(
                        f"events must be contiguous: got seq {event.seq}, "
                        f"expected {expected_seq + offset}"
                    )
                lines.append(encode_line(event))
            data = b"".join(lines)
        try:
            written = self._write(fd, data)
        except OSError as exc:
            self._cut_back(fd)
            raise _translate(exc, "append to", self._path) from exc
        if written != len(data):
            self._cut_back(fd)
            raise StoreIOError(
                f"append to {self._path}: short write ({written} of {len(data)} bytes)",
                hint="the disk is likely full; nothing of this append was kept",
            )
        self._size += written
        self._next_seq += len(events)
        self._dirty = True
        if sync:
            self.sync()

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
            # Closing the descriptor releases the flock.
            self._io.close(fd)


class JSONLStore(Store):
    """`<directory>/<session_id>.jsonl`, one file per session."""

    def __init__(self, directory: str | os.PathLike[str], *, io: FileIO = DEFAULT_IO) -> None:
        self.directory = os.fspath(directory)
        self.url = self.directory
        self.io = io

    # -- paths -----------------------------------------------------------------

    def filename(self, session_id: str) -> str:
        return validate_session_id(session_id) + SUFFIX

    def path(self, session_id: str) -> str:
        return os.path.join(self.directory, self.filename(session_id))

    def _dir_fd(self, *, create: bool = False) -> int:
        if create:
            try:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
            except OSError as exc:
                raise _translate(exc, "create directory", self.directory) from exc
        try:
            return os.open(self.directory, os.O_RDONLY | O_DIRECTORY)
        except FileNotFoundError:
            raise SessionNotFoundError(
                f"no store directory {self.directory}",
                hint="check the path, or create a session there first",
            ) from None
        except OSError as exc:
            raise _translate(exc, "open directory", self.directory) from exc

    def _open_file(self, session_id: str, flags: int, mode: int = 0o600) -> int:
        name = self.filename(session_id)
        dir_fd = self._dir_fd()
        try:
            return self.io.open(name, flags | O_NOFOLLOW, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise _translate(exc, "open", self.path(session_id)) from exc
        finally:
            os.close(dir_fd)

    # -- reading -----------------------------------------------------------------

    def scan(self, session_id: str) -> Scan:
        """Read and classify the whole file, never modifying it."""
        fd = self._open_file(session_id, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            return scan_lines(iter(f))

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        scan = self.scan(session_id)
        problem = scan.first_corruption()
        if problem is not None:
            raise CorruptLogError(
                problem.message,
                path=self.path(session_id),
                line=problem.line,
                offset=problem.offset,
            )
        return scan.events[from_seq:]

    def read_header(self, session_id: str) -> Event | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            return _header_at(fd)
        finally:
            os.close(fd)

    def _lines_newest_first(self, fd: int, counter: list[int]) -> Iterator[tuple[int, bytes]]:
        """(offset, line) pairs from EOF backwards, each line with its newline
        if it had one; `counter[0]` accumulates the bytes read.

        A line longer than a block is gathered as a list of blocks and joined
        once, so a huge line costs its length, not its length squared.
        """
        end = os.fstat(fd).st_size
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
                if carry_bytes > MAX_RECORD_BYTES + 1:
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

    def read_tail(self, session_id: str) -> Tail:
        """The tail that decides the state, read backwards from EOF.

        Reads a few blocks however long the log is: until the last turn
        boundary, the last message and a revival count are in hand.
        """
        fd = self._open_file(session_id, os.O_RDONLY)
        counter = [0]
        problems: list[Problem] = []
        torn_start: int | None = None
        end = os.fstat(fd).st_size

        def events() -> Iterator[Event]:
            nonlocal torn_start
            expected: int | None = None
            for offset, raw in self._lines_newest_first(fd, counter):
                terminated = raw.endswith(b"\n")
                line = raw[:-1] if terminated else raw
                if terminated and not line.strip(b" \t\r"):
                    continue
                try:
                    if not terminated:
                        raise FormatError("unterminated record (no newline)")
                    event, _ = decode_line(line)
                    if expected is not None and event.seq != expected:
                        raise FormatError(f"seq {event.seq} where {expected} was expected")
                except FormatError as exc:
                    problems.append(Problem(message=exc.message, offset=offset))
                    if expected is None:
                        torn_start = offset
                        continue
                    raise CorruptLogError(
                        exc.message, path=self.path(session_id), offset=offset
                    ) from exc
                expected = event.seq - 1
                yield event

        try:
            collected, revivals_before = collect_tail(events())
            header = None
            if collected and collected[0].seq != 0:
                header = _header_at(fd)
        finally:
            os.close(fd)
        torn = None
        if torn_start is not None:
            torn = TornTail(offset=torn_start, size_bytes=end - torn_start)
        return Tail(
            header=header,
            events=tuple(collected),
            revivals_before=revivals_before,
            bytes_read=counter[0],
            torn=torn,
            problems=tuple(reversed(problems)),
        )

    def sessions(self) -> list[str]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise _translate(exc, "list", self.directory) from exc
        out = []
        for name in names:
            if name.endswith(SUFFIX):
                stem = name[: -len(SUFFIX)]
                try:
                    out.append(validate_session_id(stem))
                except UsageError:
                    continue
        return sorted(out)

    def exists(self, session_id: str) -> bool:
        return os.path.lexists(self.path(session_id))

    def lock_holder(self, session_id: str) -> int | bool | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return _lock_pid(fd) or True
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    # -- writing -----------------------------------------------------------------

    def _lock(self, fd: int, session_id: str) -> None:
        deadline = time.monotonic() + LOCK_RETRY_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _lock_pid(fd)
                    holder = f"process {pid}" if pid else "another process"
                    raise SessionLockedError(
                        f"{self.path(session_id)} is being written by {holder}", pid=pid
                    ) from None
                time.sleep(0.005)

    def create(self, header: Event) -> StoreWriter:
        if header.seq != 0 or not isinstance(header.data, ev.Session):
            raise UsageError("a session is created from its 'session' header at seq 0")
        session_id = validate_session_id(header.data.session_id)
        dir_fd = self._dir_fd(create=True)
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
                raise SessionExistsError(
                    f"session {session_id!r} already exists at {path}"
                ) from None
            except OSError as exc:
                raise _translate(exc, "create", path) from exc
            writer = _JSONLWriter(self, fd, path, size_bytes=0, next_seq=0, events=None, torn=None)
            try:
                self._lock(fd, session_id)
                writer.append([header], expected_seq=0, sync=True)
                # The file's name is durable only once its directory is synced.
                self.io.fsync_dir(dir_fd)
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

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        path = self.path(session_id)
        if check not in ("full", "tail"):
            raise UsageError(f"check must be 'full' or 'tail', not {check!r}")
        fd = self._open_file(session_id, os.O_RDWR | os.O_APPEND)
        try:
            if not force:
                self._lock(fd, session_id)
            events: list[Event] | None = None
            if check == "full":
                with os.fdopen(os.dup(fd), "rb") as f:
                    scan = scan_lines(iter(f))
                problem = scan.first_corruption()
                if problem is not None:
                    raise CorruptLogError(
                        f"damaged record before later valid ones: {problem.message}",
                        path=path,
                        line=problem.line,
                        offset=problem.offset,
                    )
                torn, valid_size, events = scan.torn, scan.valid_size_bytes, scan.events
                next_seq = len(events)
            else:
                torn, valid_size, next_seq = self._tail_boundary(fd)
            if torn is not None:
                torn = self._quarantine(fd, session_id, torn)
            if next_seq == 0:
                raise FormatError(
                    f"{path} holds no session header",
                    hint="the session was never fully created; create it again",
                )
            return _JSONLWriter(
                self,
                fd,
                path,
                size_bytes=valid_size,
                next_seq=next_seq,
                events=events,
                torn=torn,
            )
        except OSError as exc:
            os.close(fd)
            raise _translate(exc, "open", path) from exc
        except BaseException:
            os.close(fd)
            raise

    def _tail_boundary(self, fd: int) -> tuple[TornTail | None, int, int]:
        """(torn tail, valid size, next seq) from the last whole record, read
        backwards: what appending needs, at the cost of the tail alone."""
        end = os.fstat(fd).st_size
        for offset, raw in self._lines_newest_first(fd, [0]):
            if not raw.endswith(b"\n") or not raw[:-1].strip(b" \t\r"):
                continue
            try:
                event, _ = decode_line(raw[:-1])
            except FormatError:
                continue
            valid = offset + len(raw)
            torn = TornTail(offset=valid, size_bytes=end - valid) if valid < end else None
            return torn, valid, event.seq + 1
        torn = TornTail(offset=0, size_bytes=end) if end else None
        return torn, 0, 0

    def _quarantine(self, fd: int, session_id: str, torn: TornTail) -> TornTail:
        """Copy the torn bytes to a sidecar (synced), then cut the file back.

        The copy is durable before the cut, so a crash in between leaves both;
        a second try writes another sidecar rather than overwrite one.
        """
        data = os.pread(fd, torn.size_bytes, torn.offset)
        dir_fd = self._dir_fd()
        try:
            base = f"{self.filename(session_id)}.torn-{torn.offset}"
            for attempt in range(MAX_SIDECARS):
                name = base if attempt == 0 else f"{base}.{attempt}"
                try:
                    side = self.io.open(
                        name,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW,
                        0o600,
                        dir_fd=dir_fd,
                    )
                except FileExistsError:
                    continue
                break
            else:
                raise StoreIOError(f"too many torn-tail sidecars for {self.path(session_id)}")
            try:
                view = memoryview(data)
                while view:
                    written = self.io.write(side, bytes(view))
                    if written <= 0:
                        raise OSError(errno.EIO, "short write to the torn-tail sidecar")
                    view = view[written:]
                self.io.fsync(side)
            finally:
                self.io.close(side)
            self.io.fsync_dir(dir_fd)
            self.io.ftruncate(fd, torn.offset)
            self.io.fsync(fd)
        finally:
            os.close(dir_fd)
        return TornTail(
            offset=torn.offset,
            size_bytes=torn.size_bytes,
            sidecar=os.path.join(self.directory, name),
        )
