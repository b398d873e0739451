"""File-I/O layers for tests: one that records every write and sync, one that fails."""

from __future__ import annotations

import errno
import os

from turnlog.stores.fileio import FileIO


class RecordingIO(FileIO):
    """Passes every call through and keeps an ordered list of what reached the disk.

    `ops` holds ("write", name, data), ("fsync", name), ("truncate", name, size);
    names are the file names relative to the store directory.
    """

    def __init__(self) -> None:
        self.ops: list[tuple[object, ...]] = []
        self._names: dict[int, str] = {}

    def open(self, path: str, flags: int, mode: int = 0o600, *, dir_fd: int | None = None) -> int:
        fd = super().open(path, flags, mode, dir_fd=dir_fd)
        self._names[fd] = path
        if flags & os.O_TRUNC:
            self.ops.append(("truncate", path, 0))
        return fd

    def write(self, fd: int, data: bytes | bytearray) -> int:
        written = super().write(fd, data)
        self.ops.append(("write", self._names[fd], bytes(data[:written])))
        return written

    def fsync(self, fd: int) -> None:
        super().fsync(fd)
        self.ops.append(("fsync", self._names[fd]))

    def ftruncate(self, fd: int, size: int) -> None:
        super().ftruncate(fd, size)
        self.ops.append(("truncate", self._names[fd], size))

    def close(self, fd: int) -> None:
        self._names.pop(fd, None)
        super().close(fd)


class FaultyIO(FileIO):
    """Fails the `at`-th call of one kind (counted from 1), once or forever.

    kind: "write" (EIO or ENOSPC), "short" (writes half, returns half),
    "fsync" (EIO), "ftruncate" (EIO).
    """

    def __init__(self, kind: str, at: int, *, forever: bool = False, code: int = errno.EIO) -> None:
        self.kind = kind
        self.at = at
        self.forever = forever
        self.code = code
        self.calls = {"write": 0, "fsync": 0, "ftruncate": 0}
        self.fired = False

    def _should_fail(self, call: str) -> bool:
        self.calls[call] += 1
        target = "write" if self.kind == "short" else self.kind
        if call != target:
            return False
        hit = self.calls[call] == self.at or (self.forever and self.calls[call] > self.at)
        if hit:
            self.fired = True
        return hit

    def write(self, fd: int, data: bytes | bytearray) -> int:
        if self._should_fail("write"):
            if self.kind == "short" and len(data) > 1:
                return super().write(fd, data[: len(data) // 2])
            raise OSError(self.code, os.strerror(self.code))
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self._should_fail("fsync"):
            raise OSError(self.code, os.strerror(self.code))
        super().fsync(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        if self._should_fail("ftruncate"):
            raise OSError(self.code, os.strerror(self.code))
        super().ftruncate(fd, size)
