"""A pause of Python's cycle collector while a whole log is read into memory at once."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Reads holding the collector off now, across threads: the last one out turns
# it back on, so one read ending does not turn it on under another.
_holding = 0
_holding_lock = threading.Lock()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the cycle collector off while a bulk read builds many objects
    that all live on (a log's transcript, a session's items).

    CPython collects its youngest generation every 700 new container
    objects and, every tenth time, the next; a read that builds tens of
    thousands of them walks the young objects again and again and, in a
    process whose imports left a large heap (an agent framework's), trips a
    full collection of that heap, which costs more than the read. Decoded
    data holds no reference cycles, so nothing is left uncollected: the
    collector runs as usual once the read is done. A collector the program
    turned off stays off; one the program turns off during a read is turned
    on again when the read ends (the collector is one switch per process)."""
    global _holding
    with _holding_lock:
        if _holding == 0 and not gc.isenabled():
            ours = False
        else:
            ours = True
            _holding += 1
            gc.disable()
    try:
        yield
    finally:
        if ours:
            with _holding_lock:
                _holding -= 1
                if _holding == 0:
                    gc.enable()
