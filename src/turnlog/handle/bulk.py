"""A pause of Python's cycle collector while a whole log is read into memory at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
    turned off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
