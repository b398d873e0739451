"""The writers this process holds and where each was opened: what a second handle is told."""

from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from collections.abc import Hashable
from contextvars import ContextVar
from typing import Final

from turnlog.errors import SessionHeldHereError

# turnlog's own modules, whose frames are never "where the writer was opened",
# except its public test suite, whose calls are a user's.
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TEST_SUITE: Final = os.path.join(_PACKAGE + "testing", "")


@functools.cache
def library_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The standard library's directories and the installed packages'. The
    standard library's frames (a thread's start, an executor) say nothing
    about the program either; installed packages do. Read when a writer
    first opens, not at import: a read-only command never needs them."""
    import sysconfig

    paths = sysconfig.get_paths()
    stdlib = {os.path.join(paths[name], "") for name in ("stdlib", "platstdlib") if name in paths}
    installed = {os.path.join(paths[name], "") for name in ("purelib", "platlib") if name in paths}
    return tuple(stdlib), tuple(installed)


#: Where a session is being opened, for a caller that opens it on another
#: thread (`turnlog.aio.aopen` hands the open to a worker thread, where no
#: frame of the program is left); asyncio copies it into that thread.
OPENED_AT: ContextVar[str | None] = ContextVar("turnlog_opened_at", default=None)


def _skipped(filename: str) -> bool:
    if filename.startswith(_PACKAGE):
        return not filename.startswith(_TEST_SUITE)
    if filename.startswith("<frozen "):
        return True
    stdlib, installed = library_dirs()
    return filename.startswith(stdlib) and not filename.startswith(installed)


def caller_site() -> str | None:
    """`file.py:LINE` of the innermost frame outside turnlog and the standard
    library: the program's line that is opening a session. Costs a walk up
    the stack, so it runs when a writer opens, never per append."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _skipped(filename):
            try:
                cwd = os.path.join(os.getcwd(), "")
            except OSError:  # the working directory was removed
                cwd = filename + os.sep
            shown = filename[len(cwd) :] if filename.startswith(cwd) else filename
            return f"{shown}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return OPENED_AT.get()


# Keyed by what identifies the lock itself (a lock file's device and inode, a
# database and session): the writers holding it, weakly, so a writer dropped
# without `close` stops counting, and where each was opened.
_held: dict[Hashable, tuple[weakref.ref[object], str | None]] = {}
_mutex = threading.Lock()


def _after_fork() -> None:
    # A child may be forked while another thread holds the mutex; the child's
    # copy would stay locked for good. The entries stay: the child inherits
    # the descriptors, and with them the locks.
    global _mutex
    _mutex = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def hold(key: Hashable, writer: object, site: str | None) -> None:
    """Record that `writer`, opened at `site`, holds the lock `key`."""
    with _mutex:
        _held[key] = (weakref.ref(writer), site)


def release(key: Hashable, writer: object) -> None:
    """Forget `writer`'s hold on `key` (when it closes)."""
    with _mutex:
        entry = _held.get(key)
        if entry is not None and entry[0]() in (writer, None):
            del _held[key]


def held_here(key: Hashable) -> tuple[bool, str | None]:
    """Whether a live writer of this process holds `key`, and where it was opened."""
    with _mutex:
        entry = _held.get(key)
        if entry is None:
            return False, None
        if entry[0]() is None:
            del _held[key]
            return False, None
        return True, entry[1]


def file_key(fd: int) -> Hashable:
    """The key of a lock taken on an open file: the file itself, however it was named."""
    st = os.fstat(fd)
    return ("file", st.st_dev, st.st_ino)


def held_here_error(session_id: str, where: str, site: str | None) -> SessionHeldHereError:
    """The refusal of a second writer on a session this process already writes."""
    pid = os.getpid()
    opened = f"opened at {site}; " if site else ""
    return SessionHeldHereError(
        f"this process already holds the writer for session {session_id!r} in {where} "
        f"({opened}pid {pid})",
        pid=pid,
    )
