"""Writer locks every backend shares: the brief retry, and OS file locks with their holder."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from typing import Final

from turnlog.stores.base import Holder

# A reader's inspection briefly takes a shared lock; a writer opening at that
# instant retries this long before it reports the session as locked.
LOCK_RETRY_S: Final = 0.2
# How long a writer waits between two tries.
_RETRY_PAUSE_S: Final = 0.005


def retry_lock(try_once: Callable[[], bool], refuse: Callable[[], BaseException]) -> None:
    """Call `try_once` until it takes the lock or `LOCK_RETRY_S` has passed,
    then raise what `refuse` makes. The one retry loop of every store: an
    inspector's probe holds a session's lock for an instant, which is no
    reason to call the session locked."""
    deadline = time.monotonic() + LOCK_RETRY_S
    while not try_once():
        if time.monotonic() >= deadline:
            raise refuse()
        time.sleep(_RETRY_PAUSE_S)


def try_flock(fd: int) -> bool:
    """Take the exclusive lock on an open file if no one holds it; never blocks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_pid(fd: int) -> int | None:
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


def flock_holder(fd: int, detail: str | None = None) -> Holder | None:
    """The live writer of an open file, or None; never blocks. A shared lock
    is taken for an instant, so inspectors never mistake each other for a
    writer."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return Holder(pid=lock_pid(fd), detail=detail)
    fcntl.flock(fd, fcntl.LOCK_UN)
    return None
