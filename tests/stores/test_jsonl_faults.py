"""Faults at every write and fsync call site: typed errors, nothing acknowledged lost."""

from __future__ import annotations

import errno
import random
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

import turnlog
from fileio_doubles import FaultyIO
from turnlog.events import Event, encode_event
from turnlog.stores import JSONLStore
from workload import drive


def run(directory: Path, io: FaultyIO) -> tuple[list[Event], list[bool], BaseException | None]:
    acked: list[Event] = []
    fired_at_ack: list[bool] = []

    def on_append(batch: Sequence[Event], durable: bool) -> None:
        acked.extend(batch)
        fired_at_ack.extend([io.fired] * len(batch))

    error: BaseException | None = None
    try:
        with turnlog.open(
            JSONLStore(directory, io=io), "f", create=True, durability="always"
        ) as log:
            log.subscribe(on_append)
            drive(log, random.Random(7), turns=3)
    except turnlog.TurnlogError as exc:
        error = exc
    return acked, fired_at_ack, error


def call_counts(tmp_path: Path) -> dict[str, int]:
    counter = FaultyIO("none", at=10**9)
    run(tmp_path / "reference", counter)
    return counter.calls


KINDS = [
    ("write", errno.EIO),
    ("write", errno.ENOSPC),
    ("short", errno.EIO),
    ("fsync", errno.EIO),
]


@pytest.mark.parametrize("forever", [False, True], ids=["once", "forever"])
@pytest.mark.parametrize(("kind", "code"), KINDS, ids=["EIO", "ENOSPC", "short", "fsync"])
def test_fault_at_every_call_site(tmp_path: Path, kind: str, code: int, forever: bool) -> None:
    calls = call_counts(tmp_path)["fsync" if kind == "fsync" else "write"]
    assert calls > 20
    for at in range(1, calls + 1):
        directory = tmp_path / f"at{at}"
        io = FaultyIO(kind, at, forever=forever, code=code)
        acked, fired_at_ack, error = run(directory, io)
        assert io.fired, at
        assert isinstance(error, turnlog.TurnlogError), at
        assert error.hint
        if kind == "fsync" or forever:
            # After a failed fsync (or a disk that keeps failing) nothing more
            # is acknowledged.
            assert not any(fired_at_ack), at
        # Earlier data intact, and the session reopens with a healthy disk.
        store = JSONLStore(directory)
        if not store.exists("f"):
            assert acked == [], at  # create failed and took its file back
            continue
        with turnlog.open(store, "f") as log:
            log.recover()
        events = store.read("f")
        for event in acked:
            assert zlib.crc32(encode_event(events[event.seq])) == zlib.crc32(encode_event(event))
        assert turnlog.plan(events).events == ()


def test_failed_truncate_after_short_write_poisons(tmp_path: Path) -> None:
    class ShortThenStuck(FaultyIO):
        def ftruncate(self, fd: int, size: int) -> None:
            raise OSError(errno.EIO, "stuck")

    io = ShortThenStuck("short", at=3)
    _, _, error = run(tmp_path, io)
    assert isinstance(error, turnlog.errors.StoreIOError)
    with turnlog.open(tmp_path / "f.jsonl") as log:
        assert log.torn_tail is not None  # the half record is quarantined on reopen
        log.recover()


def test_poisoned_handle_refuses_every_later_append(tmp_path: Path) -> None:
    io = FaultyIO("fsync", at=2)
    log = turnlog.open(JSONLStore(tmp_path, io=io), "p", create=True, durability="always")
    with pytest.raises(turnlog.LogPoisonedError):
        log.user("first")
    with pytest.raises(turnlog.LogPoisonedError) as info:
        log.user("second")
    assert "sync" in info.value.hint
    log.close()
    assert io.calls["fsync"] == 2  # never retried
