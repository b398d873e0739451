"""The file-system calls the JSONL store makes, behind one seam tests can replace."""

from __future__ import annotations

import os
import sys
from typing import Final

# fdatasync flushes the data and the size, which is all a reader needs; macOS
# has no fdatasync, and there plain fsync is what Python offers.
_datasync = getattr(os, "fdatasync", os.fsync)

O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)


class FileIO:
    """Plain `os` calls. Tests subclass this to record writes and syncs or to
    inject faults (ENOSPC, EIO, short writes) at every call site."""

    def open(self, path: str, flags: int, mode: int = 0o600, *, dir_fd: int | None = None) -> int:
        return os.open(path, flags | O_CLOEXEC, mode, dir_fd=dir_fd)

    def write(self, fd: int, data: bytes | bytearray) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        _datasync(fd)

    def fsync_dir(self, dir_fd: int) -> None:
        # Not every platform can fsync a directory (Windows cannot open one);
        # where it can, a new file's name is not durable without it.
        if sys.platform != "win32":
            os.fsync(dir_fd)

    def ftruncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def close(self, fd: int) -> None:
        os.close(fd)


DEFAULT_IO: Final = FileIO()
