"""The JSONL writer: the locked, O_APPEND descriptor of one session file."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import Final

from turnlog.core.damage import TornTail
from turnlog.core.tail import Tail
from turnlog.errors import (
    LogPoisonedError,
    SeqConflictError,
    StoreIOError,
    UsageError,
)
from turnlog.events import Event
from turnlog.stores.base import (
    StoreWriter,
    check_contiguous,
)
from turnlog.stores.fileio import FileIO
from turnlog.stores.jsonl.oserrors import translate
from turnlog.stores.record import (
    encode_line,
    encode_line_into,
)

# A session file up to this size is read whole in about 7 ms of Python under
# the GIL at most (3 ms through a skim's index): a thread would give the event
# loop about one turn (`sys.getswitchinterval()` is 5 ms) for a hand-off that
# costs 0.5 to 4 ms (docs/benchmarks.md).
LIGHT_READ_BYTES: Final = 1024 * 1024


class JSONLWriter(StoreWriter):
    """The locked, O_APPEND descriptor of one session file."""

    # An unsynced append is one write(2) into the page cache.
    unsynced_append_waits = False

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
    def light_read(self) -> bool:
        return self._size <= LIGHT_READ_BYTES

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
        # `_write_bytes` for one line, inlined: this is every agent loop's
        # hot path. The failures go through the same two helpers.
        try:
            written = self._write(fd, line)
        except BaseException as exc:
            error = self._failed_write(fd, len(line), 1, exc)
            if error is exc:
                raise
            raise error from exc
        if written != len(line):
            raise self._short_write(fd, written, len(line))
        self._size += written
        self._next_seq += 1
        self._dirty = True
        if sync:
            self.sync()

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
        except BaseException as exc:
            error = self._failed_write(fd, len(data), count, exc)
            if error is exc:
                raise
            raise error from exc
        if written != len(data):
            raise self._short_write(fd, written, len(data))
        self._size += written
        self._next_seq += count
        self._dirty = True
        if sync:
            self.sync()

    def _failed_write(
        self, fd: int, size_bytes: int, count: int, exc: BaseException
    ) -> BaseException:
        """What a write that raised leaves, and the error to raise for it (the
        exception itself, unless it is an OS error turnlog words)."""
        if isinstance(exc, OSError):
            self._cut_back(fd)
            return translate(exc, "append to", self._path)
        # A signal handler raised (Ctrl-C, SIGTERM calling sys.exit) while or
        # right after the bytes went out: account for what reached the file
        # before anything else runs, so no seq is ever written twice.
        self._settle(fd, size_bytes, count)
        return exc

    def _short_write(self, fd: int, written: int, size_bytes: int) -> StoreIOError:
        self._cut_back(fd)
        return StoreIOError(
            f"append to {self._path}: short write ({written} of {size_bytes} bytes)",
            errno=errno.ENOSPC,
            hint="the disk is likely full; nothing of this append was kept",
        )

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
