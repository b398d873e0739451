"""OS errors of the JSONL store translated into turnlog errors, in one place."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

from turnlog.errors import (
    SessionNotFoundError,
    StoreIOError,
    TurnlogError,
)


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def exists_at(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def translate(exc: OSError, action: str, path: str) -> TurnlogError:
    """The one place OS errors of this store become turnlog errors."""
    code = exc.errno
    if code == errno.ENOENT:
        return SessionNotFoundError(
            f"{path}: no such session file",
            hint="check the session id; `turnlog ls --store DIR` lists a store's sessions",
        )
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
def closed_on_error(fd: int, action: str, path: str) -> Iterator[int]:
    """Hand out `fd`, closing it if the block raises; OS errors become turnlog errors."""
    try:
        yield fd
    except OSError as exc:
        os.close(fd)
        raise translate(exc, action, path) from exc
    except BaseException:
        os.close(fd)
        raise
