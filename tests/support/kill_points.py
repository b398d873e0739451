"""Every durable append as a crash point, for the programs the kill sweeps run.

A program calls `arm()` first. With KILL_AFTER_APPEND=N set, the process
SIGKILLs itself right after the Nth write any turnlog writer in it makes (a
batch is one write) has returned; with COUNT_APPENDS=FILE, each write adds a
line to FILE: its number and the types it wrote. A sweep runs a program once
counting, then once per point, killed there: the points are where the
program wrote, not where a test chose to look.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_written = 0
# A writer's `append_one` may hand over to its `append`: one write, counted once.
_depth = 0


def _after_write(events: Sequence[Any]) -> None:
    global _written
    if _depth:
        return
    _written += 1
    log = os.environ.get("COUNT_APPENDS")
    if log:
        types = ",".join(event.type for event in events)
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{_written} {types}\n")
    if os.environ.get("KILL_AFTER_APPEND") == str(_written):
        os.kill(os.getpid(), signal.SIGKILL)


def _counted(cls: type) -> None:
    one: Callable[..., None] = cls.append_one
    many: Callable[..., None] = cls.append

    def append_one(self: Any, event: Any, sync: bool) -> None:
        global _depth
        _depth += 1
        try:
            one(self, event, sync)
        finally:
            _depth -= 1
        _after_write((event,))

    def append(self: Any, events: Sequence[Any], *, expected_seq: int, sync: bool) -> None:
        global _depth
        _depth += 1
        try:
            many(self, events, expected_seq=expected_seq, sync=sync)
        finally:
            _depth -= 1
        _after_write(events)

    cls.append_one = append_one  # type: ignore[attr-defined]
    cls.append = append  # type: ignore[attr-defined]


def arm() -> None:
    """Count (and kill at) the writes of the JSONL and SQLite writers."""
    if not (os.environ.get("KILL_AFTER_APPEND") or os.environ.get("COUNT_APPENDS")):
        return
    from turnlog.stores.jsonl.writer import JSONLWriter
    from turnlog.stores.sqlite import _SQLiteWriter

    for cls in (JSONLWriter, _SQLiteWriter):
        _counted(cls)


def points(counted: Path) -> list[tuple[int, str]]:
    """The writes a counting run made: (number, the types written)."""
    out = []
    for line in counted.read_text(encoding="utf-8").splitlines():
        number, _, types = line.partition(" ")
        out.append((int(number), types))
    return out
