"""Eight processes race for one session: one writer wins, the rest are refused."""

from __future__ import annotations

import os
import time
from pathlib import Path

import turnlog
from turnlog.stores import JSONLStore

WRITERS = 8


def _contender(path: Path, go_fd: int, report_fd: int) -> None:
    try:
        os.read(go_fd, 1)
        try:
            log = turnlog.open(path)
        except turnlog.SessionLockedError as exc:
            os.write(report_fd, b"L%d\n" % (exc.pid or 0))
            return
        with log:
            os.write(report_fd, b"W%d\n" % os.getpid())
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                log.append_many([turnlog.UserMessage(content=f"from {os.getpid()}")] * 20)
    finally:
        os._exit(0)


def test_exactly_one_of_eight_processes_writes(tmp_path: Path) -> None:
    path = tmp_path / "race.jsonl"
    turnlog.open(path, create=True).close()
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    pids = []
    for _ in range(WRITERS):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            _contender(path, go_read, report_write)
        pids.append(pid)
    os.close(report_write)
    os.write(go_write, b"x" * WRITERS)
    for pid in pids:
        os.waitpid(pid, 0)
    reports = os.read(report_read, 65536).decode().split()
    winners = [r for r in reports if r.startswith("W")]
    losers = [r for r in reports if r.startswith("L")]
    assert len(reports) == WRITERS
    assert len(winners) == 1
    # The refused ones were told who holds the session.
    assert {r[1:] for r in losers} == {winners[0][1:]}
    scan = JSONLStore(tmp_path).scan("race")
    assert not scan.problems
    assert len(scan.events) > 100
    writers = {e.data.content for e in scan.events[1:]}  # type: ignore[union-attr]
    assert writers == {f"from {winners[0][1:]}"}


def test_lock_state_is_visible_to_readers(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = JSONLStore(tmp_path)
    with turnlog.open(path, create=True):
        holder = store.lock_holder("s")
        assert holder is not None and holder.pid == os.getpid()
    assert store.lock_holder("s") is None
