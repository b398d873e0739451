"""Moving a torn tail aside: the bytes copied to a synced sidecar, then cut from their file."""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Final

from turnlog.core.damage import TornTail
from turnlog.errors import StoreIOError
from turnlog.stores.fileio import DEFAULT_IO, O_NOFOLLOW, FileIO

# A second quarantine of the same offset writes `<name>.torn-<offset>.1`, and
# so on, never over an earlier sidecar; past this many something is wrong.
MAX_SIDECARS: Final = 1000


def move_torn_tail(
    fd: int, dir_fd: int, file_name: str, torn: TornTail, *, io: FileIO = DEFAULT_IO
) -> str:
    """Copy `torn` to `<file_name>.torn-<offset>` beside the file, sync it and
    its directory, then cut the file back to `torn.offset` and sync it.
    Returns the sidecar's name (in `dir_fd`).

    The copy is durable before the cut, so a crash in between leaves both. A
    sidecar that could not be written whole is removed, and nothing is cut:
    these are the only bytes turnlog ever moves, and never one it lost.
    """
    data = os.pread(fd, torn.size_bytes, torn.offset)
    if len(data) != torn.size_bytes:
        raise StoreIOError(
            f"{file_name} changed while its torn tail was being moved aside; nothing was cut",
            hint="make sure nothing else writes the file, then try again",
        )
    base = f"{file_name}.torn-{torn.offset}"
    for attempt in range(MAX_SIDECARS):
        name = base if attempt == 0 else f"{base}.{attempt}"
        try:
            side = io.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, 0o600, dir_fd=dir_fd
            )
        except FileExistsError:
            continue
        break
    else:
        raise StoreIOError(f"too many torn-tail sidecars for {file_name}")
    try:
        view = memoryview(data)
        while view:
            written = io.write(side, bytes(view))
            if written <= 0:
                raise OSError(errno.ENOSPC, "short write to the torn-tail sidecar")
            view = view[written:]
        io.fsync(side)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    finally:
        io.close(side)
    io.fsync_dir(dir_fd)
    io.ftruncate(fd, torn.offset)
    io.fsync(fd)
    return name
